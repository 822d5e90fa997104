"""One typed, frozen settings object, built once at start-up and passed explicitly.

Every field can come from a command-line option (`--cert-file`) or an environment variable
(`POD_TAILOR_CERT_FILE`); the option wins, then the variable, then the default. Nothing is read at
import time. To add a setting, add a field with a default and a `doc` in its metadata: the CLI option,
the environment variable and the conversion follow from its name and type.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import types
import typing
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from webhook.config import values
from webhook.config.oldnames import old_name
from webhook.core.namespace import Mode
from webhook.profiles.connection import (
    COMPRESSIONS,
    ConnectionSettingsError,
    PrometheusConnection,
    parse_header,
    parse_selector,
)

__all__ = ["ENV_PREFIX", "PROMETHEUS_FIELDS", "Settings", "SettingsError", "add_arguments", "load_settings"]

ENV_PREFIX = "POD_TAILOR_"


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the option and the variable."""


def _doc(text: str, *, rule: values.Rule | None = None) -> dict[str, Any]:
    """A field's help text and the rule its option or variable is read with (`webhook.config.values`)."""
    return {"doc": text, "rule": rule}


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = field(default="0.0.0.0", metadata=_doc("address to listen on"))
    port: int = field(default=8443, metadata=_doc("HTTPS port", rule=values.port))
    cert_file: str | None = field(default=None, metadata=_doc("TLS certificate (PEM), reloaded on change"))
    key_file: str | None = field(default=None, metadata=_doc("TLS private key (PEM), reloaded on change"))
    policy_file: str | None = field(default=None, metadata=_doc("policy file; unset: the bundled policy"))
    profiles_path: str | None = field(
        default=None, metadata=_doc("profile store; unset: the profile store's default location")
    )
    default_mode: Mode = field(
        default=Mode.ENFORCE, metadata=_doc("mode for namespaces not known (yet): enforce, dry-run, off")
    )
    log_level: str = field(default="info", metadata=_doc("debug, info, warning or error"))
    cert_reload_seconds: float = field(
        default=5.0,
        metadata=_doc("how often the certificate files are checked for changes", rule=values.seconds),
    )
    max_body_bytes: int = field(
        default=3 * 1024 * 1024,
        metadata=_doc("larger request bodies get 413 (the API server's own limit)",
                      rule=values.positive_count),
    )
    verdict_cache_size: int = field(
        default=1024,
        metadata=_doc("answers kept for identical Pods (replicas of one template); 0: none",
                      rule=values.count),
    )
    verdict_cache_bytes: int = field(
        default=32 * 1024 * 1024,
        metadata=_doc("bytes the verdict cache may hold (inside a 256Mi limit)", rule=values.count)
    )
    # Connections and overload (webhook/server/protocol.py, overload.py, listener.py; docs/hardening.md).
    admission_timeout_seconds: float = field(
        default=3.0,
        metadata=_doc("the webhook's registered timeoutSeconds: the deadline without ?timeout=",
                      rule=values.seconds),
    )
    max_in_flight: int = field(
        default=256, metadata=_doc("requests read or decided at once; more are answered allowed, unchanged",
                                   rule=values.positive_count)
    )
    max_in_flight_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata=_doc("declared body bytes in flight at once; more are shed alike",
                      rule=values.positive_count),
    )
    max_connections: int = field(
        default=1000, metadata=_doc("open connections; past it the oldest still sending headers is closed",
                                    rule=values.positive_count)
    )
    header_timeout_seconds: float = field(
        default=5.0, metadata=_doc("a request's headers must arrive within this (from connect or first byte)",
                                   rule=values.seconds)
    )
    body_timeout_seconds: float = field(
        default=10.0,
        metadata=_doc("a request's body must arrive within this after its headers", rule=values.seconds),
    )
    tls_handshake_timeout_seconds: float = field(
        default=5.0, metadata=_doc("a TLS handshake must complete within this", rule=values.seconds)
    )
    keep_alive_seconds: int = field(
        default=120, metadata=_doc("idle keep-alive; longer than the API server's 90 s, so the client closes",
                                   rule=values.positive_count)
    )
    drain_seconds: float = field(
        default=5.0, metadata=_doc("after SIGTERM: not ready, answering with Connection: close, then stop",
                                   rule=values.seconds_or_zero)
    )
    # Cluster watches (webhook/cluster/).
    watch_cluster: bool = field(
        default=True, metadata=_doc("watch Namespaces, LimitRanges, the policy ConfigMap (if a cluster)")
    )
    kubeconfig: str | None = field(
        default=None, metadata=_doc("kubeconfig; unset: in-cluster, then $KUBECONFIG, then ~/.kube/config")
    )
    namespace: str = field(
        default="pod-tailor", metadata=_doc("pod-tailor's own namespace (policy ConfigMap)")
    )
    policy_configmap: str = field(
        default="pod-tailor-policy", metadata=_doc("ConfigMap whose policy.yaml overrides the policy file")
    )
    resync_seconds: float = field(
        default=300.0, metadata=_doc("watch length before resuming, and server version refresh period",
                                     rule=values.at_least(1))
    )
    # Usage profiles (webhook/profiles/).
    profiles_store: str = field(
        default="file", metadata=_doc("profile store: file (profiles_path) or kubernetes (ConfigMaps)")
    )
    profiles_refresh_seconds: float = field(
        default=60.0,
        metadata=_doc("how often the profile store is checked for changes", rule=values.seconds),
    )
    # The Prometheus connection (webhook/profiles/connection.py), shared with profiles build/recommend.
    prometheus_url: str | None = field(
        default=None,
        metadata=_doc("Prometheus base URL, path prefix included; serve: if set, rebuilds profiles itself"),
    )
    prometheus_bearer_token_file: str | None = field(
        default=None, metadata=_doc("file holding a bearer token, read again when it changes")
    )
    prometheus_username: str | None = field(default=None, metadata=_doc("basic auth user name"))
    prometheus_password_file: str | None = field(
        default=None, metadata=_doc("file holding the basic auth password, read again when it changes")
    )
    prometheus_password: str | None = field(
        default=None, repr=False,
        metadata={"doc": "basic auth password (environment only: options show in the process list)",
                  "env_only": True},
    )
    prometheus_header: tuple[str, ...] = field(
        default=(), metadata=_doc("extra header 'Name: value', e.g. 'X-Scope-OrgID: team-a' (repeatable; "
                                  "variable: one per line)")
    )
    prometheus_ca_file: str | None = field(default=None, metadata=_doc("CA bundle to verify Prometheus"))
    prometheus_cert_file: str | None = field(default=None, metadata=_doc("client certificate (PEM)"))
    prometheus_key_file: str | None = field(default=None, metadata=_doc("client certificate key (PEM)"))
    prometheus_insecure_skip_verify: bool = field(
        default=False, metadata=_doc("do not verify Prometheus' certificate (tests only: loud warning)")
    )
    prometheus_selector: str | None = field(
        default=None, metadata=_doc("label matchers added to every query, e.g. 'cluster=\"prod-eu\"'")
    )
    prometheus_timeout: float = field(
        default=120.0, metadata=_doc("seconds per Prometheus query", rule=values.seconds)
    )
    prometheus_compression: str = field(
        default="auto",
        metadata=_doc("gzip, none, or auto: none for a loopback or private address or a Service"
                      " name (no dots, .svc, .cluster.local; gzip costs Prometheus about 8 times"
                      " the CPU of sending the answer), gzip for any other"),
    )
    profiles_build_seconds: float = field(
        default=3600.0,
        metadata=_doc("how often serve rebuilds profiles when prometheus_url is set", rule=values.seconds)
    )

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


def env_name(name: str) -> str:
    return ENV_PREFIX + name.upper()


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _field_types() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def _base_type(annotation: Any) -> Any:
    """`str | None` -> str; other annotations unchanged."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return members[0]
    return annotation


def _convert(
    name: str, raw: str, annotation: Any, *, source: str, rule: values.Rule | None = None
) -> Any:
    base = _base_type(annotation)
    if base is not annotation and raw == "":
        return None
    if rule is not None:
        try:
            return rule(raw)
        except ValueError as exc:
            raise SettingsError(f"{source}: {exc}") from None
    if typing.get_origin(base) is tuple:  # a repeatable option; its variable holds one value per line
        return tuple(line.strip() for line in raw.splitlines() if line.strip())
    try:
        if base is bool:
            lowered = raw.strip().lower()
            if lowered in {"1", "true", "yes", "on"}:
                return True
            if lowered in {"0", "false", "no", "off"}:
                return False
            raise ValueError(raw)
        if isinstance(base, type) and issubclass(base, Enum):
            return base(raw)
        return base(raw)
    except ValueError:
        raise SettingsError(f"{source}: {raw!r} is not a valid {name}") from None


def _selected(only: Collection[str] | None) -> list[dataclasses.Field[Any]]:
    return [item for item in dataclasses.fields(Settings) if only is None or item.name in only]


def add_arguments(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    only: Collection[str] | None = None,
    names: Mapping[str, str] | None = None,
    old_names: Mapping[str, str] | None = None,
) -> None:
    """One option per field (`only` these): `--field-name`, or the name `names` gives it, and the
    hidden old name of `old_names` (still read, with a note). Defaults are left as None so the
    environment can fill the gap; fields marked `env_only` (a password) get no option. The option is
    read with the field's rule (`webhook.config.values`), so a bad value stops the parse."""
    hints = _field_types()
    for item in _selected(only):
        if item.metadata.get("env_only"):
            continue
        base = _base_type(hints[item.name])
        default = item.default if item.default is not dataclasses.MISSING else None
        shown = default.value if isinstance(default, Enum) else default
        help_text = f"{item.metadata.get('doc', '')} [env {env_name(item.name)}; default {shown}]"
        name = (names or {}).get(item.name, _option(item.name))
        rule = item.metadata.get("rule")
        if base is bool:
            parser.add_argument(
                name, dest=item.name, default=None, action=argparse.BooleanOptionalAction, help=help_text
            )
        elif typing.get_origin(base) is tuple:
            parser.add_argument(name, dest=item.name, default=None, action="append",
                                metavar=item.name.upper(), help=help_text)
        else:
            parser.add_argument(name, dest=item.name, default=None, metavar=item.name.upper(),
                                type=values.typed(rule) if rule else str, help=help_text)
        renamed = [_option(item.name)] if name != _option(item.name) else []
        for old in [*renamed, *([old_names[item.name]] if old_names and item.name in old_names else [])]:
            old_name(parser, old, new=name, dest=item.name)


def load_settings(
    options: Mapping[str, Any] | argparse.Namespace | None = None,
    *,
    env: Mapping[str, str] | None = None,
    only: Collection[str] | None = None,
) -> Settings:
    """Settings from command-line options (None = not given), then `POD_TAILOR_*` variables, then defaults.

    With `only`, just those fields are read (the other commands take the Prometheus fields alone).
    """
    given = vars(options) if isinstance(options, argparse.Namespace) else dict(options or {})
    environment = os.environ if env is None else env
    hints = _field_types()
    found: dict[str, Any] = {}
    for item in _selected(only):
        raw = given.get(item.name)
        if isinstance(raw, list):  # a repeatable option
            found[item.name] = tuple(raw)
        elif raw is not None:
            found[item.name] = (
                _convert(item.name, raw, hints[item.name], source=_option(item.name),
                         rule=item.metadata.get("rule"))
                if isinstance(raw, str) else raw
            )
        elif env_name(item.name) in environment:
            found[item.name] = _convert(
                item.name, environment[env_name(item.name)], hints[item.name], source=env_name(item.name),
                rule=item.metadata.get("rule"),
            )
    return Settings(**found)


# The fields of the Prometheus connection, the only settings `profiles build` and `recommend` read.
PROMETHEUS_FIELDS = tuple(f.name for f in dataclasses.fields(Settings) if f.name.startswith("prometheus_"))
