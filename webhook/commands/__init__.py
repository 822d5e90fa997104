"""The `pod-tailor` command. Every verb is one thin module in this folder, over the layers below.

Each module exposes `register(subparsers)`, takes its options from `webhook.config.catalog` and sets
two functions on its parser: `configure(args)`, its start-up up to the first port it would open or
server it would call (every file named read and parsed, every setting checked), and `func(args,
configured) -> int`, the run on what `configure` gave. `--check-config` runs `configure` alone: the
same code, so it says what the real start would say.

Bad input of any kind ends here as one line, `pod-tailor VERB: what, where, and the fix`, exit 2; a
dependency that cannot be reached likewise, exit 3; never a traceback (webhook/commands/failures.py).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Mapping, Sequence

from webhook import __version__
from webhook.commands.failures import (
    BAD_INPUT,
    UNREACHABLE,
    USAGE,
    UnreachableError,
    one_line,
    silence_stdout,
)
from webhook.commands.parser import OneLineParser, order_groups, resolve
from webhook.config.catalog import CATALOG
from webhook.config.option import ENV_PREFIX

__all__ = ["build_parser", "main", "parse"]

# Modules exposing `register(subparsers)`; each sets `func(args) -> int` on its parser.
COMMANDS = (
    "webhook.commands.serve",
    "webhook.commands.preview",
    "webhook.commands.cluster_preview",
    "webhook.commands.profiles",
    "webhook.commands.recommend",
    "webhook.commands.certs",
    "webhook.commands.report",
    "webhook.commands.dashboard",
    "webhook.commands.rightsize",
    "webhook.commands.reports",
)
PIPE_CLOSED = 141  # what a shell shows for a process ended by SIGPIPE (`pod-tailor ... | head`)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="pod-tailor",
        description="Fills in requests, limits, probes and a clean shutdown for Pods at admission.",
    )
    parser.add_argument("--version", action="version", version=f"pod-tailor {__version__}")
    parser.add_argument(
        "--check-config", action="store_true",
        help="run COMMAND's start-up up to the first port it would open or server it would call (its"
        " options, POD_TAILOR_* variables and the files they name read and checked), say what is wrong"
        " as the start would (exit 2 or 3) or that all is well (exit 0), and start nothing",
    )
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser
    )
    for module in COMMANDS:
        importlib.import_module(module).register(subparsers)
    _exact_options(parser)
    return parser


def _exact_options(parser: argparse.ArgumentParser) -> None:
    """No abbreviated options: `--prometheus-password SECRET` must fail, not become the password *file*
    (whose name an error message would then show). The option groups in one order in every verb."""
    parser.allow_abbrev = False
    order_groups(parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _exact_options(sub)


def parse(argv: Sequence[str], env: Mapping[str, str] | None = None) -> argparse.Namespace:
    """The options of a command line, each not given read from its variable in `env` (none without)
    or its default: what the verb runs with."""
    args = build_parser().parse_args(argv)
    resolve(args, {} if env is None else env)
    return args


def _verb(args: argparse.Namespace) -> str:
    action = getattr(args, "profiles_command", None)
    return f"pod-tailor {args.command}" + (f" {action}" if action else "")


def _check(args: argparse.Namespace) -> int:
    args.configure(args)
    print(f"{_verb(args)}: configuration OK")
    return 0


def _run(args: argparse.Namespace) -> int:
    code: int = args.func(args, args.configure(args))
    return code


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """A warning for each `POD_TAILOR_*` variable that is a near miss of one pod-tailor reads: a name
    spelled almost alike (PORTS), or one with a word more (PROFILES_PATH). The scripts' and tests' own
    variables (POD_TAILOR_VENV, POD_TAILOR_CORPUS) are no near miss of any."""
    known = {option.variable.removeprefix(ENV_PREFIX) for option in CATALOG.values() if option.variable}
    said = []
    for name in sorted(env):
        given = name.removeprefix(ENV_PREFIX)
        if not name.startswith(ENV_PREFIX) or given in known:
            continue
        longer = sorted((word for word in known if given.startswith(word + "_")), key=len, reverse=True)
        for close in longer[:1] or difflib.get_close_matches(given, known, n=1, cutoff=0.8):
            said.append(f"warning: {name} is read by no verb (did you mean {ENV_PREFIX}{close}?): ignored")
    return said


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        resolve(args, os.environ)
        for warning in unknown_variables(os.environ):
            print(f"{_verb(args)}: {warning}", file=sys.stderr)
        code = _check(args) if args.check_config else _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        silence_stdout()
        return PIPE_CLOSED
    except BAD_INPUT as exc:
        print(f"{_verb(args)}: {one_line(exc)}", file=sys.stderr)
        return USAGE
    except UnreachableError as exc:
        print(f"{_verb(args)}: {one_line(exc)}", file=sys.stderr)
        return UNREACHABLE
    return code


if __name__ == "__main__":
    sys.exit(main())
