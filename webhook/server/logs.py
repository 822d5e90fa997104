"""JSON-lines logging: one object per line, with the request's uid, namespace, workload and outcome.

Only names and outcomes are logged, never object contents (env values, tokens, annotations).
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
from typing import Any, TextIO

import orjson

__all__ = ["JsonFormatter", "configure_logging"]

# Attributes every LogRecord has; anything else on a record came from `extra=` and is logged.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName", "color_message"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and value is not None:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def configure_logging(level: str, *, stream: TextIO | None = None) -> None:
    """Route pod-tailor's and uvicorn's loggers to one JSON-lines handler on stderr."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    numeric = logging.getLevelName(level.upper())
    for name in ("pod_tailor", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(numeric)
        logger.propagate = False
    # uvicorn's access log would repeat every request without the uid; ours already has it.
    logging.getLogger("uvicorn.access").disabled = True
