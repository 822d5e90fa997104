"""JSON-lines logging: one object per line, with the request's uid, namespace, workload and outcome.

Only names and outcomes are logged, never object contents (env values, tokens, annotations).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from typing import Any, TextIO

import orjson

__all__ = ["JsonFormatter", "RequestLog", "configure_logging"]

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName", "color_message"}


_MILLIS = tuple(f".{milli:03d}Z" for milli in range(1000))


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._stamp = ""

    def time_of(self, created: float) -> str:
        second, milli = divmod(int(created * 1000), 1000)
        if second != self._second:  # one strftime per second, not per line
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return self._stamp + _MILLIS[milli]

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.time_of(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():  # in the order they were given
            if value is not None and key not in _STANDARD:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class RequestLog:
    """One JSON line per admission request.

    Once `configure_logging` has set up the JSON-lines handler, a line is written straight to its
    stream in the handler's format: building a LogRecord and passing it through the logging module
    costs more than answering a cached admission. Only the request's own fields are encoded per
    line; the fixed part (level, logger, message) is encoded once per level. Lines are written in
    batches, at most `FLUSH_SECONDS` after the first of a batch or at `FLUSH_LINES` lines (and at
    shutdown): a write per request costs a busy webhook more than the line itself, and a line may
    follow other records by up to that long. Until then (e.g.
    in tests) it goes through `logging` like any other record, so handlers and capture fixtures see it.
    """

    FLUSH_SECONDS = 0.05
    FLUSH_LINES = 256

    def __init__(self, name: str = "pod_tailor.admission") -> None:
        self.logger = logging.getLogger(name)
        self._pending: list[bytes] = []
        self._heads: dict[int, bytes] = {}
        self._timer: asyncio.TimerHandle | None = None  # the flush scheduled for the pending lines
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def write(self, level: int, fields: dict[str, Any]) -> None:
        """Log `fields` (None values left out) as one line at `level`."""
        if not self.logger.isEnabledFor(level):
            return
        target = _direct
        if target is None:
            self.logger.log(level, "admission", extra={k: v for k, v in fields.items() if v is not None})
            return
        head = self._heads.get(level) or self._head(level)
        present = {key: value for key, value in fields.items() if value is not None}
        stamp = target[0].time_of(time.time()).encode()
        rest = b"," + orjson.dumps(present, default=str)[1:] if present else b"}"  # the fields, after `{`
        self._pending.append(b"".join((b'{"time":"', stamp, head, rest, b"\n")))
        if len(self._pending) >= self.FLUSH_LINES:
            self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: nothing to wait for
            self.flush()
            return
        if self._timer is None or self._timer_loop is not loop:  # none yet, or lost with an ended loop
            self._timer, self._timer_loop = loop.call_later(self.FLUSH_SECONDS, self.flush), loop

    def _head(self, level: int) -> bytes:
        name = logging.getLevelName(level).lower()
        fixed = {"level": name, "logger": self.logger.name, "message": "admission"}
        self._heads[level] = head = b'",' + orjson.dumps(fixed)[1:-1]
        return head

    def flush(self) -> None:
        """Write the pending lines with one write; also called at shutdown."""
        if self._timer is not None:
            self._timer.cancel()  # a no-op when it is the timer running this
            self._timer = None
        lines, self._pending = self._pending, []
        target = _direct
        if not lines or target is None:
            return
        handler = target[1]
        stream = handler.stream
        raw = getattr(stream, "buffer", None)  # the bytes under a text stream: no decode and re-encode
        with handler.lock or _NO_LOCK:
            if raw is None:
                stream.write(b"".join(lines).decode())
                stream.flush()
            else:
                stream.flush()  # whatever others wrote through the text layer goes first
                raw.write(b"".join(lines))
                raw.flush()

class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


_NO_LOCK = _NoLock()
# Set by configure_logging: the JSON-lines handler that RequestLog may write to directly.
_direct: tuple[JsonFormatter, logging.StreamHandler[TextIO]] | None = None


def configure_logging(level: str, *, stream: TextIO | None = None) -> None:
    """Send every logger's records to one JSON-lines handler on stderr; ours and uvicorn's at `level`.

    A line is written per admission, so the per-record work the JSON lines do not use (caller lookup,
    thread and process names) is switched off, as the logging documentation's "Optimization" advises.
    """
    logging._srcfile = None  # no stack walk to find the caller
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    global _direct
    handler = logging.StreamHandler(stream or sys.stderr)
    formatter = JsonFormatter()
    handler.setFormatter(formatter)
    _direct = (formatter, handler)
    numeric = logging.getLevelName(level.upper())
    root = logging.getLogger()
    root.handlers[:] = [handler]  # every logger's records end up here as JSON lines
    root.setLevel(max(numeric, logging.WARNING))  # third-party libraries: warnings and worse only
    for name in ("pod_tailor", "webhook", "uvicorn"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.setLevel(numeric)
        logger.propagate = True
    # uvicorn's access log would repeat every request without the uid; ours already has it.
    logging.getLogger("uvicorn.access").disabled = True
