"""Starting the server: initial state from settings, TLS context, uvicorn."""

from __future__ import annotations

import gc
import logging

import uvicorn

from webhook.config.policies import bundled_policies, load_policy_file
from webhook.config.settings import Settings
from webhook.core.policy import PolicyError
from webhook.core.snapshot import ClusterSnapshot
from webhook.refreshers.state import State
from webhook.server.app import create_app
from webhook.server.logs import configure_logging
from webhook.server.tls import CertificateReloader
from webhook.server.wiring import build_refreshers

__all__ = ["initial_state", "serve", "uvicorn_config"]

log = logging.getLogger("pod_tailor.server")


def initial_state(settings: Settings) -> State:
    """Embedded defaults until refreshers report in; a bad policy file stops start-up (PolicyError)."""
    policies = load_policy_file(settings.policy_file) if settings.policy_file else bundled_policies()
    source = f"policy file {settings.policy_file}" if settings.policy_file else "embedded defaults"
    cluster = ClusterSnapshot(policies=policies, default_mode=settings.default_mode, source=source)
    return State(cluster=cluster)


def uvicorn_config(settings: Settings, state: State, tls: CertificateReloader) -> uvicorn.Config:
    app = create_app(settings, state, tls=tls, refreshers=build_refreshers(settings))
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        ssl_certfile=settings.cert_file,
        ssl_context_factory=lambda _config, _default: tls.listening,
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=10,
    )


def serve(settings: Settings) -> int:
    configure_logging(settings.log_level)
    if settings.cert_file is None or settings.key_file is None:
        log.error("serve needs --cert-file and --key-file (scripts/run generates development ones)")
        return 2
    try:
        state = initial_state(settings)
        tls = CertificateReloader(settings.cert_file, settings.key_file)
    except PolicyError as exc:
        log.error("invalid policy", extra={"error": str(exc)})
        return 2
    except (OSError, ValueError) as exc:
        log.error("cannot load the TLS certificate", extra={"error": str(exc)})
        return 2
    log.info(
        "starting",
        extra={"host": settings.host, "port": settings.port, "default_mode": settings.default_mode.value,
               "policies": sorted(state.cluster.policies.policies)},
    )
    server = uvicorn.Server(uvicorn_config(settings, state, tls))
    # Everything loaded so far (libraries, policies) lives as long as the process: keep it out of the
    # collector's reach, so garbage collection during requests only walks what requests allocate.
    gc.freeze()
    server.run()
    return 0
