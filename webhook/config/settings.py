"""`serve`'s settings: one typed, frozen object, built once at start-up and passed explicitly.

Each field is an option of `webhook.config.catalog`, which says its flag, its `POD_TAILOR_*` variable,
its rule, default and help: the option wins, then the variable, then the default. Nothing is read at
import time. A setting of `serve` is added to the catalog, then here as `_setting(NAME)`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhook.config.catalog import CATALOG
from webhook.config.option import ENV_PREFIX, Option, SettingsError
from webhook.core.model.namespace import Mode
from webhook.profiles.connection import (
    COMPRESSIONS,
    ConnectionSettingsError,
    PrometheusConnection,
    parse_header,
    parse_selector,
)

__all__ = ["ENV_PREFIX", "PROMETHEUS_FIELDS", "Settings", "SettingsError", "add_arguments", "load_settings"]


def _setting(name: str, *, repr: bool = True) -> Any:
    """A field holding the catalog's option `name`, with its default (a `dataclasses.field`)."""
    default = CATALOG[name].default
    return field(default=tuple(default) if isinstance(default, list) else default, repr=repr,
                 metadata={"option": name})


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = _setting("host")
    port: int = _setting("port")
    cert_file: str | None = _setting("cert_file")
    key_file: str | None = _setting("key_file")
    policy_file: str | None = _setting("policy_file")
    profiles_path: str | None = _setting("profiles_path")
    default_mode: Mode = _setting("default_mode")
    log_level: str = _setting("log_level")
    cert_reload_seconds: float = _setting("cert_reload_seconds")
    max_body_bytes: int = _setting("max_body_bytes")
    verdict_cache_size: int = _setting("verdict_cache_size")
    verdict_cache_bytes: int = _setting("verdict_cache_bytes")
    # Connections and overload (webhook/server/protocol.py, overload.py, listener.py; docs/hardening.md).
    admission_timeout_seconds: float = _setting("admission_timeout_seconds")
    max_in_flight: int = _setting("max_in_flight")
    max_in_flight_bytes: int = _setting("max_in_flight_bytes")
    max_connections: int = _setting("max_connections")
    header_timeout_seconds: float = _setting("header_timeout_seconds")
    body_timeout_seconds: float = _setting("body_timeout_seconds")
    tls_handshake_timeout_seconds: float = _setting("tls_handshake_timeout_seconds")
    keep_alive_seconds: int = _setting("keep_alive_seconds")
    drain_seconds: float = _setting("drain_seconds")
    # Cluster watches (webhook/cluster/).
    watch_cluster: bool = _setting("watch_cluster")
    kubeconfig: str | None = _setting("kubeconfig")
    namespace: str = _setting("pod_tailor_namespace")  # pod-tailor's own (the policy ConfigMap's)
    policy_configmap: str = _setting("policy_configmap")
    resync_seconds: float = _setting("resync_seconds")
    # Usage profiles (webhook/profiles/).
    profiles_store: str = _setting("profiles_store")
    profiles_refresh_seconds: float = _setting("profiles_refresh_seconds")
    # The Prometheus connection (webhook/profiles/connection.py), shared with profiles build/recommend.
    prometheus_url: str | None = _setting("prometheus_url")
    prometheus_bearer_token_file: str | None = _setting("prometheus_bearer_token_file")
    prometheus_username: str | None = _setting("prometheus_username")
    prometheus_password_file: str | None = _setting("prometheus_password_file")
    prometheus_password: str | None = _setting("prometheus_password", repr=False)
    prometheus_header: tuple[str, ...] = _setting("prometheus_header")
    prometheus_ca_file: str | None = _setting("prometheus_ca_file")
    prometheus_cert_file: str | None = _setting("prometheus_cert_file")
    prometheus_key_file: str | None = _setting("prometheus_key_file")
    prometheus_insecure_skip_verify: bool = _setting("prometheus_insecure_skip_verify")
    prometheus_selector: str | None = _setting("prometheus_selector")
    prometheus_timeout: float = _setting("prometheus_timeout")
    prometheus_compression: str = _setting("prometheus_compression")
    profiles_build_seconds: float = _setting("profiles_build_seconds")

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise SettingsError(f"port {self.port} is not between 1 and 65535")
        if (self.cert_file is None) != (self.key_file is None):
            raise SettingsError("cert_file and key_file must be given together")
        if self.log_level.lower() not in {"debug", "info", "warning", "error"}:
            raise SettingsError(f"log_level {self.log_level!r}: use debug, info, warning or error")
        if self.cert_reload_seconds <= 0:
            raise SettingsError("cert_reload_seconds must be positive")
        if self.max_body_bytes <= 0:
            raise SettingsError("max_body_bytes must be positive")
        if self.verdict_cache_size < 0 or self.verdict_cache_bytes < 0:
            raise SettingsError("verdict_cache_size and verdict_cache_bytes must not be negative")
        for name in ("admission_timeout_seconds", "header_timeout_seconds", "body_timeout_seconds",
                     "tls_handshake_timeout_seconds", "keep_alive_seconds", "max_in_flight",
                     "max_in_flight_bytes", "max_connections"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} must be positive")
        if self.drain_seconds < 0:
            raise SettingsError("drain_seconds must not be negative")
        if self.resync_seconds < 1:
            raise SettingsError("resync_seconds must be at least 1")
        if self.profiles_store not in {"file", "kubernetes"}:
            raise SettingsError(f"profiles_store {self.profiles_store!r}: use file or kubernetes")
        if self.profiles_refresh_seconds <= 0 or self.profiles_build_seconds <= 0:
            raise SettingsError("profiles_refresh_seconds and profiles_build_seconds must be positive")
        if self.prometheus_compression not in COMPRESSIONS:
            raise SettingsError(
                f"prometheus_compression {self.prometheus_compression!r}: use {', '.join(COMPRESSIONS)}"
            )
        try:
            self.prometheus()
        except ConnectionSettingsError as exc:
            raise SettingsError(str(exc)) from None

    def prometheus(self) -> PrometheusConnection | None:
        """The Prometheus connection these settings describe; None without a URL."""
        if not self.prometheus_url:
            return None
        return PrometheusConnection(
            self.prometheus_url,
            bearer_token_file=self.prometheus_bearer_token_file,
            username=self.prometheus_username,
            password_file=self.prometheus_password_file,
            password=self.prometheus_password,
            headers=tuple(parse_header(text) for text in self.prometheus_header),
            ca_file=self.prometheus_ca_file,
            cert_file=self.prometheus_cert_file,
            key_file=self.prometheus_key_file,
            insecure_skip_verify=self.prometheus_insecure_skip_verify,
            selector=parse_selector(self.prometheus_selector or ""),
            timeout=self.prometheus_timeout,
            compression=self.prometheus_compression,
        )


def _option(item: dataclasses.Field[Any]) -> Option:
    return CATALOG[item.metadata["option"]]


def _selected(only: Collection[str] | None) -> list[dataclasses.Field[Any]]:
    return [item for item in dataclasses.fields(Settings) if only is None or item.name in only]


def add_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, only: Collection[str] | None = None
) -> None:
    """The catalog's option of each field (`only` these); a variable-only field (a password) gets none."""
    for item in _selected(only):
        option = _option(item)
        if option.flags:
            option.add_to(parser, default=option.default)


def load_settings(
    options: Mapping[str, Any] | argparse.Namespace | None = None,
    *,
    env: Mapping[str, str] | None = None,
    only: Collection[str] | None = None,
) -> Settings:
    """Settings from command-line options (absent or None: not given), then `POD_TAILOR_*` variables, then
    defaults; `only` those fields (the other commands take the Prometheus fields alone)."""
    given = vars(options) if isinstance(options, argparse.Namespace) else dict(options or {})
    environment = os.environ if env is None else env
    found: dict[str, Any] = {}
    for item in _selected(only):
        option = _option(item)
        value = option.value(given.get(option.name), environment, item.default)
        found[item.name] = tuple(value) if isinstance(value, list) else value
    return Settings(**found)


# The fields of the Prometheus connection, the only settings `profiles build` and `recommend` read.
PROMETHEUS_FIELDS = tuple(f.name for f in dataclasses.fields(Settings) if f.name.startswith("prometheus_"))
