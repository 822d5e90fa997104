"""The `pod-tailor` command. Every verb is one thin module in this folder, over the layers below.

Each module exposes `register(subparsers)` and sets `func(args) -> int` on its parser, and may set
`configure(args)`: the offline part of its start-up (options and `POD_TAILOR_*` variables turned into
settings, files named on the command line read), which `--check-config` runs alone.

Bad input of any kind ends here as one line, `pod-tailor VERB: what, where, and the fix`, exit 2;
never a traceback (webhook/commands/failures.py).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from webhook import __version__
from webhook.commands.failures import BAD_INPUT, USAGE, one_line, silence_stdout
from webhook.commands.parser import OneLineParser, order_groups

__all__ = ["build_parser", "main"]

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
        help="read COMMAND's options, its POD_TAILOR_* variables and the files it names as it would at"
        " start, say what is wrong (exit 2) or that all is well (exit 0), and start nothing",
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


def _verb(args: argparse.Namespace) -> str:
    action = getattr(args, "profiles_command", None)
    return f"pod-tailor {args.command}" + (f" {action}" if action else "")


def _check(args: argparse.Namespace) -> int:
    configure = getattr(args, "configure", None)
    if configure is not None:
        configure(args)
    print(f"{_verb(args)}: configuration OK")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = _check(args) if args.check_config else args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        silence_stdout()
        return PIPE_CLOSED
    except BAD_INPUT as exc:
        print(f"{_verb(args)}: {one_line(exc)}", file=sys.stderr)
        return USAGE
    return code


if __name__ == "__main__":
    sys.exit(main())
