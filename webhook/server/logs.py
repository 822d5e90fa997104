"""JSON-lines logging: one object per line, with the request's uid, namespace, workload and outcome.

Only names and outcomes are logged, never object contents (env values, tokens, annotations).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

import orjson

__all__ = ["JsonFormatter", "configure_logging"]

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName", "color_message"}


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._stamp = ""

    def _time(self, created: float) -> str:
        second = int(created)
        if second != self._second:  # one strftime per second, not per line
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int((created - second) * 1000):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self._time(record.created),
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


def configure_logging(level: str, *, stream: TextIO | None = None) -> None:
    """Send every logger's records to one JSON-lines handler on stderr; ours and uvicorn's at `level`.

    A line is written per admission, so the per-record work the JSON lines do not use (caller lookup,
    thread and process names) is switched off, as the logging documentation's "Optimization" advises.
    """
    logging._srcfile = None  # no stack walk to find the caller
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
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
