"""Starting the server: everything read and checked (`prepare`), then the TLS context under uvicorn.

`prepare` is all of the start that can fail on what a person gave (the policy file, the certificate
files); `pod-tailor --check-config serve` runs it alone. Its errors are one line each (`PolicyError`,
`SettingsError`), said by the command before any log line.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import uvicorn

from webhook.admission import Engine
from webhook.config.policies import bundled_policies, load_policy_file
from webhook.config.settings import Settings, SettingsError
from webhook.core.snapshot import ClusterSnapshot
from webhook.refreshers.state import Refresher, State
from webhook.server.app import create_app
from webhook.server.listener import WebhookServer
from webhook.server.logs import configure_logging
from webhook.server.mutate import fast_path
from webhook.server.protocol import ConnectionGuard, guarded_protocol
from webhook.server.tls import CertificateReloader
from webhook.server.wiring import build_refreshers

__all__ = ["Prepared", "build_server", "initial_state", "prepare", "serve"]

log = logging.getLogger("pod_tailor.server")


def initial_state(settings: Settings) -> State:
    """Embedded defaults until refreshers report in; a bad policy file stops start-up (PolicyError)."""
    policies = load_policy_file(settings.policy_file) if settings.policy_file else bundled_policies()
    source = f"policy file {settings.policy_file}" if settings.policy_file else "embedded defaults"
    cluster = ClusterSnapshot(policies=policies, default_mode=settings.default_mode, source=source)
    return State(cluster=cluster)


def build_server(
    settings: Settings,
    state: State,
    tls: CertificateReloader,
    *,
    refreshers: Sequence[Refresher] | None = None,
    engine: Engine | None = None,
) -> WebhookServer:
    """The app under uvicorn with the connection guard, TLS handshake timeout and drain (`listener`).

    `refreshers` default to the ones `serve` runs (`wiring.build_refreshers`).
    """
    guard = ConnectionGuard(
        header_timeout=settings.header_timeout_seconds,
        body_timeout=settings.body_timeout_seconds,
        max_connections=settings.max_connections,
    )
    app = create_app(
        settings, state, engine=engine, tls=tls, guard=guard,
        refreshers=build_refreshers(settings) if refreshers is None else refreshers,
    )
    config = uvicorn.Config(
        fast_path(app, app.state.mutate),
        host=settings.host,
        port=settings.port,
        ssl_certfile=settings.cert_file,
        ssl_context_factory=lambda _config, _default: tls.listening,
        http=guarded_protocol(guard),
        log_config=None,
        access_log=False,
        server_header=False,
        proxy_headers=False,  # the API server connects directly; no forwarded headers to trust
        lifespan="on",
        timeout_keep_alive=settings.keep_alive_seconds,
        timeout_graceful_shutdown=10,
    )
    return WebhookServer(
        config, state=state, drain_seconds=settings.drain_seconds,
        handshake_timeout=settings.tls_handshake_timeout_seconds,
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    """What `serve` starts from: the settings, the first state, the certificates loaded."""

    settings: Settings
    state: State
    tls: CertificateReloader


def prepare(settings: Settings) -> Prepared:
    """The policy file parsed and the certificate pair loaded; PolicyError or SettingsError (one line)
    for what cannot be used. Nothing listens yet."""
    if settings.cert_file is None or settings.key_file is None:
        raise SettingsError(
            "serve needs --cert-file and --key-file (or POD_TAILOR_CERT_FILE and POD_TAILOR_KEY_FILE): "
            "scripts/run makes development ones"
        )
    state = initial_state(settings)
    try:
        tls = CertificateReloader(settings.cert_file, settings.key_file)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise SettingsError(
            f"--cert-file {settings.cert_file}, --key-file {settings.key_file}: cannot load the TLS "
            f"certificate: {reason}"
        ) from None
    return Prepared(settings, state, tls)


def serve(prepared: Prepared) -> int:
    settings, state = prepared.settings, prepared.state
    configure_logging(settings.log_level)
    log.info(
        "starting",
        extra={"host": settings.host, "port": settings.port, "default_mode": settings.default_mode.value,
               "policies": sorted(state.cluster.policies.policies)},
    )
    server = build_server(settings, state, prepared.tls)
    # Everything loaded so far (libraries, policies) lives as long as the process: keep it out of the
    # collector's reach, so garbage collection during requests only walks what requests allocate.
    gc.freeze()
    # A decision allocates a few thousand short-lived containers, freed by reference counting; the
    # default threshold (700) ran a young-generation collection every few requests for nothing.
    gc.set_threshold(20_000, 20, 20)
    server.run()
    return 0
