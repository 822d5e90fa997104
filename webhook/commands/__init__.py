"""The `pod-tailor` command. Every verb is one thin module in this folder, over the layers below.

Each module exposes `register(subparsers)` and sets `func(args) -> int` on its parser.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from webhook import __version__

__all__ = ["main"]

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
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pod-tailor",
        description="Fills in requests, limits, probes and a clean shutdown for Pods at admission.",
    )
    parser.add_argument("--version", action="version", version=f"pod-tailor {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        importlib.import_module(module).register(subparsers)
    _exact_options(parser)
    return parser


def _exact_options(parser: argparse.ArgumentParser) -> None:
    """No abbreviated options: `--prometheus-password SECRET` must fail, not become the password *file*
    (whose name an error message would then show)."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _exact_options(sub)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
