"""What counts as bad input to a command, and how it is said: one line, no traceback.

Options, `POD_TAILOR_*` variables, policy files, manifests and the files named on the command line
are a person's input: their errors (`BAD_INPUT`) reach `webhook.commands.main`, which prints
`pod-tailor VERB: <message>` and exits 2. Faults of the world (Prometheus down, a cluster refusing)
stay each command's own outcome (exit 1, or retried).
"""

from __future__ import annotations

import logging
import os
import sys

from webhook.config.settings import SettingsError
from webhook.config.yamltext import ReadError
from webhook.core.policy import PolicyError
from webhook.core.quantity import QuantityError
from webhook.offline.sources import SourceError
from webhook.profiles.connection import ConnectionSettingsError

__all__ = ["BAD_INPUT", "PARTIAL", "USAGE", "InputError", "one_line", "quiet_http_clients", "silence_stdout"]

USAGE = 2  # bad options, variables or input: nothing was done
PARTIAL = 1  # done, but some of the input could not be used (each part said why)


class InputError(ValueError):
    """A command's input cannot be used (a missing file named on the command line, a bad label)."""


BAD_INPUT = (
    InputError, SettingsError, ConnectionSettingsError, SourceError, PolicyError, QuantityError, ReadError
)


def one_line(exc: BaseException) -> str:
    """The message on one line (a YAML parser's message spans several)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def silence_stdout() -> None:
    """The reader of our output went away (`| head`): send what is left nowhere, so that the flush at
    exit does not raise BrokenPipeError a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def quiet_http_clients() -> None:
    """httpx logs every request at INFO ("HTTP Request: POST ..."): a build's hundreds of queries would
    bury what the command itself says. Their failures still show (WARNING and up)."""
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
