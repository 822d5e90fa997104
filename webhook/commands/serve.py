"""`pod-tailor serve`: run the HTTPS admission webhook."""

from __future__ import annotations

import argparse
from typing import Any

from webhook.config.settings import SettingsError, add_arguments, load_settings

__all__ = ["register"]


def _serve(args: argparse.Namespace) -> int:
    from webhook.server.run import serve  # uvicorn and FastAPI load only for this command

    try:
        settings = load_settings(args)
    except SettingsError as exc:
        raise SystemExit(f"pod-tailor serve: {exc}") from None
    return serve(settings)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the HTTPS admission webhook",
        description="Serve /mutate over HTTPS to the Kubernetes API server. Every option can also be set "
        "with an environment variable (POD_TAILOR_<OPTION>).",
    )
    add_arguments(parser)
    parser.set_defaults(func=_serve)
