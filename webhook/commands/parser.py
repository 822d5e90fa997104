"""The command line's parser: errors in one line, every option taken from `webhook.config.catalog`, the
option groups every verb lists in the same order, and what each verb's exit codes mean."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Collection, Mapping
from typing import Any, NoReturn

from webhook.config.catalog import CATALOG

__all__ = ["GROUPS", "OneLineParser", "exits", "group", "order_groups", "resolve", "take"]

# The option groups of `pod-tailor VERB --help`, in this order in every verb that has them.
GROUPS = (
    "input",
    "output",
    "policy",
    "profile store",
    "Prometheus connection",
    "profile build",
    "controller",
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


def take(
    parser: argparse.ArgumentParser,
    *names: str,
    defaults: Mapping[str, Any] | None = None,
    required: Collection[str] = (),
    exclusive: Collection[str] = (),
) -> None:
    """The catalog's options `names` on `parser`, each in its group; `defaults` are this verb's own,
    `exclusive` ones cannot be given together. `resolve` fills in those not given."""
    declared = parser.get_default("declared")
    if declared is None:
        declared = {}
        parser.set_defaults(declared=declared)
    either = None
    for name in dict.fromkeys(names):  # a name two sets share (-n in the scope and the build) once
        if name in declared:
            continue
        option = CATALOG[name]
        default = (defaults or {}).get(name, option.default)
        declared[name] = default
        if not option.flags:
            continue
        target = group(parser, option.group)
        if name in exclusive:
            either = either or target.add_mutually_exclusive_group()
            target = either
        option.add_to(target, default=default, required=name in required)


def resolve(args: argparse.Namespace, env: Mapping[str, str]) -> None:
    """Each option the verb takes that was not given, from its variable, else its default (SettingsError
    naming the variable when its value cannot be used); `args.variables` names the options a variable
    gave."""
    declared: dict[str, Any] = getattr(args, "declared", None) or {}
    args.variables = {}
    for name, default in declared.items():
        option = CATALOG[name]
        given = getattr(args, name, None)
        if given is None and option.variable is not None and option.variable in env:
            args.variables[name] = option.variable
        setattr(args, name, option.value(given, env, default))


def exits(parser: argparse.ArgumentParser, meanings: Mapping[int, str]) -> None:
    """What the verb's exit codes mean beside 0 and 2, for `--help` and the CLI reference
    (`webhook.commands.failures` holds the convention)."""
    parser.set_defaults(exit_codes=dict(meanings))
    every = {0: "done", 2: "bad options, variables or input: nothing was done", **meanings}
    parser.epilog = "Exit codes: " + "; ".join(f"{code} {every[code]}" for code in sorted(every)) + "."


def order_groups(parser: argparse.ArgumentParser) -> None:
    """`--help` lists the positionals and general options first, then the named groups in GROUPS order."""
    rank = {title: number for number, title in enumerate(GROUPS)}
    general = [g for g in parser._action_groups if g.title not in rank]
    named = sorted((g for g in parser._action_groups if g.title in rank), key=lambda g: rank[str(g.title)])
    parser._action_groups[:] = [*general, *named]
