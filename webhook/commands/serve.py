"""`pod-tailor serve`: run the HTTPS admission webhook."""

from __future__ import annotations

import argparse
from typing import Any

from webhook.commands.parser import group
from webhook.config.settings import PROMETHEUS_FIELDS, Settings, add_arguments, load_settings

__all__ = ["OPTION_GROUPS", "register"]

# Each setting's place in `serve --help`, under the group names every verb uses (commands/parser.py).
OPTION_GROUPS: dict[str, tuple[str, ...]] = {
    "policy": ("policy_file", "policy_configmap", "default_mode"),
    "profile store": ("profiles_path", "profiles_store", "namespace", "profiles_refresh_seconds"),
    "Prometheus connection": PROMETHEUS_FIELDS,
    "profile build": ("profiles_build_seconds",),
    "cluster": ("kubeconfig", "watch_cluster", "resync_seconds"),
    "server": (
        "host", "port", "cert_file", "key_file", "cert_reload_seconds", "log_level", "max_body_bytes",
        "verdict_cache_size", "verdict_cache_bytes", "admission_timeout_seconds", "max_in_flight",
        "max_in_flight_bytes", "max_connections", "header_timeout_seconds", "body_timeout_seconds",
        "tls_handshake_timeout_seconds", "keep_alive_seconds", "drain_seconds",
    ),
}
# The settings' options under the names the other verbs use for the same thing.
NAMES = {"namespace": "--pod-tailor-namespace"}


def _configure(args: argparse.Namespace) -> Settings:
    """The settings from options and POD_TAILOR_* variables (--check-config stops here)."""
    return load_settings(args)


def _serve(args: argparse.Namespace) -> int:
    from webhook.server.run import serve  # uvicorn and FastAPI load only for this command

    return serve(_configure(args))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the HTTPS admission webhook",
        description="Serve /mutate over HTTPS to the Kubernetes API server. Every option can also be set "
        "with an environment variable (POD_TAILOR_<OPTION>).",
    )
    for title, fields in OPTION_GROUPS.items():
        add_arguments(group(parser, title), only=fields, names=NAMES,
                      old_names={"prometheus_url": "--prometheus", "prometheus_timeout": "--timeout"})
    parser.set_defaults(func=_serve, configure=_configure)
