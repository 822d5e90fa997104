"""The `pod-tailor` command: each sub-command lives in its own module and registers itself here."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from webhook import __version__

__all__ = ["main"]

# Modules exposing `register(subparsers)`; each sets `func(args) -> int` on its parser.
COMMANDS = (
    "webhook.preview",
    "webhook.server.command",
    "webhook.profiles.cli",
    "webhook.certs_command",
    "webhook.kubectl_preview",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
