"""The command line's parser: errors in one line, option values through the rules of
`webhook.config.values`, and the option groups every verb lists in the same order."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from webhook.config.oldnames import old_name
from webhook.config.values import typed

__all__ = ["GROUPS", "OneLineParser", "group", "old_name", "order_groups", "typed"]

# The option groups of `pod-tailor VERB --help`, in this order in every verb that has them.
GROUPS = (
    "input",
    "output",
    "policy",
    "profile store",
    "Prometheus connection",
    "profile build",
    "cluster",
    "server",
    "leader election",
)


class OneLineParser(argparse.ArgumentParser):
    """`pod-tailor VERB: --port 80800: 80800 is not a port: use 1 to 65535 (pod-tailor VERB --help)`,
    exit 2: one line a person reads, instead of the usage block and `error: argument --port: ...`."""

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)
        message = re.sub(r"^(-[\w-]+)/(--[\w-]+): ", r"\2: ", message)  # "-n/--namespace" -> "--namespace"
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise SystemExit(status)


def group(parser: argparse.ArgumentParser, title: str, description: str | None = None) -> Any:
    """The named option group of `parser` (created once): every verb's options sort into GROUPS."""
    assert title in GROUPS, title
    for existing in parser._action_groups:
        if existing.title == title:
            return existing
    return parser.add_argument_group(title, description)



def order_groups(parser: argparse.ArgumentParser) -> None:
    """`--help` lists the positionals and general options first, then the named groups in GROUPS order."""
    rank = {title: number for number, title in enumerate(GROUPS)}
    general = [g for g in parser._action_groups if g.title not in rank]
    named = sorted((g for g in parser._action_groups if g.title in rank), key=lambda g: rank[str(g.title)])
    parser._action_groups[:] = [*general, *named]
