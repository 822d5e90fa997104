"""`pod-tailor serve`: run the HTTPS admission webhook."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from webhook.commands.parser import exits, take
from webhook.config.settings import Settings, load_settings

if TYPE_CHECKING:  # uvicorn and FastAPI load only for this command
    from webhook.server.run import Prepared

__all__ = ["register"]

# Every setting of `Settings`: the catalog's option of each field.
OPTIONS = tuple(field.metadata["option"] for field in dataclasses.fields(Settings))


def _configure(args: argparse.Namespace) -> Prepared:
    """The settings, the policy file and the certificates, read and checked; nothing listens yet."""
    from webhook.server.run import prepare

    settings: Settings = load_settings(args, env={})
    return prepare(settings)


def _serve(args: argparse.Namespace, prepared: Prepared) -> int:
    from webhook.server.run import serve

    return serve(prepared)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the HTTPS admission webhook",
        description="Serve /mutate over HTTPS to the Kubernetes API server; logs are JSON lines on stderr.",
    )
    take(parser, *OPTIONS)
    exits(parser, {})
    parser.set_defaults(func=_serve, configure=_configure)
