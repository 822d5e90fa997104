"""The exit codes every verb shares, and how a failure is said: one line, no traceback.

    0  done
    1  done, with findings: a document left out, something that would change (report --exit-code),
       a build that failed (recommend --max-builds)
    2  bad options, variables or input (files named on the command line, policy files, manifests that
       cannot be read at all): nothing was done
    3  a dependency could not be reached: no cluster, Prometheus, kubectl

Options, `POD_TAILOR_*` variables, policy files, manifests and the files named on the command line
are a person's input: their errors (`BAD_INPUT`) reach `webhook.commands.main`, which prints
`pod-tailor VERB: <message>` and exits 2; `UnreachableError` is said the same way and exits 3. Both are
raised by a verb's start-up (`configure`), which `--check-config` runs alone.
"""

from __future__ import annotations

import logging
import os
import sys

from webhook.config.settings import SettingsError
from webhook.config.yamltext import ReadError
from webhook.core.model.quantity import QuantityError
from webhook.core.policy.reader import PolicyError
from webhook.offline.sources import SourceError
from webhook.profiles.connection import ConnectionSettingsError

__all__ = [
    "BAD_INPUT",
    "EXIT_CODES",
    "FINDINGS",
    "UNREACHABLE",
    "USAGE",
    "InputError",
    "UnreachableError",
    "one_line",
    "quiet_http_clients",
    "silence_stdout",
]

FINDINGS = 1
USAGE = 2
UNREACHABLE = 3
EXIT_CODES = {
    0: "done",
    FINDINGS: "done, with findings: a document left out, something that would change, a failed build",
    USAGE: "bad options, variables or input: nothing was done",
    UNREACHABLE: "a dependency could not be reached (the cluster, Prometheus, kubectl)",
}


class InputError(ValueError):
    """A command's input cannot be used (a missing file named on the command line, a bad label)."""


class UnreachableError(Exception):
    """What the command needs cannot be reached: no cluster to read, Prometheus down (exit 3)."""


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
