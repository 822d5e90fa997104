"""A real pod-tailor server for tests: uvicorn on a free loopback port, TLS from a freshly generated CA.

Clients verify that CA and call `/mutate?timeout=10s` exactly as the API server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from tests.shared import review_files
from tests.tools import free_port
from webhook.admission import Engine
from webhook.config.policies import bundled_policies
from webhook.config.settings import Settings
from webhook.core.model.namespace import MODE_LABEL, POLICY_LABEL
from webhook.core.snapshot import ClusterSnapshot
from webhook.refreshers.state import Refresher, State
from webhook.server.certs import KeyPair, make_ca, make_serving_cert, write_pem
from webhook.server.listener import WebhookServer
from webhook.server.run import build_server
from webhook.server.tls import CertificateReloader

MUTATE = "/mutate?timeout=10s"

# Namespaces with each mode; any other namespace is unknown and gets the default mode (enforce).
NAMESPACE_LABELS: Mapping[str, Mapping[str, str]] = {
    "shop": {MODE_LABEL: "enforce"},
    "trial": {MODE_LABEL: "dry-run"},
    "legacy": {MODE_LABEL: "off"},
    "unlabelled": {},
    "typo": {MODE_LABEL: "enforced"},
    "strict": {MODE_LABEL: "enforce", POLICY_LABEL: "no-such-policy"},
}


def corpus_files() -> list[Path]:
    """The corpus reviews, or none without ../shared (see tests/shared.py)."""
    return review_files()


@dataclass
class TlsFiles:
    directory: Path
    ca: KeyPair
    ca_file: Path
    cert_file: Path
    key_file: Path

    def rotate(self) -> KeyPair:
        """Write a new serving certificate from the same CA, key first (as a non-atomic writer might)."""
        serving = make_serving_cert(self.ca, dns_names=("localhost",), ip_addresses=("127.0.0.1",))
        write_pem(self.key_file, serving.key_pem, private=True)
        write_pem(self.cert_file, serving.cert_pem)
        return serving

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))


def make_tls_files(directory: Path) -> TlsFiles:
    ca = make_ca("pod-tailor test CA")
    serving = make_serving_cert(ca, dns_names=("localhost",), ip_addresses=("127.0.0.1",))
    return TlsFiles(
        directory=directory,
        ca=ca,
        ca_file=write_pem(directory / "ca.crt", ca.cert_pem),
        cert_file=write_pem(directory / "tls.crt", serving.cert_pem),
        key_file=write_pem(directory / "tls.key", serving.key_pem, private=True),
    )


@dataclass
class RunningServer:
    base_url: str
    tls_files: TlsFiles
    state: State
    tls: CertificateReloader
    server: WebhookServer
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, **options: Any) -> httpx.Client:
        client = httpx.Client(base_url=self.base_url, verify=self.tls_files.client_context(), timeout=10,
                              **options)
        self.clients.append(client)
        return client

    def mutate(self, body: bytes | Mapping[str, Any], client: httpx.Client | None = None) -> httpx.Response:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        return (client or self.default_client).post(
            MUTATE, content=data, headers={"Content-Type": "application/json"}
        )

    @property
    def default_client(self) -> httpx.Client:
        return self.clients[0] if self.clients else self.client()


def labelled_state() -> State:
    return State(cluster=ClusterSnapshot(policies=bundled_policies(), namespaces=dict(NAMESPACE_LABELS)))


@contextlib.contextmanager
def running_server(
    directory: Path,
    *,
    state: State | None = None,
    engine: Engine | None = None,
    refreshers: tuple[Refresher, ...] = (),
    **settings: Any,
) -> Iterator[RunningServer]:
    """Start the app under uvicorn in a thread; stop it (lifespan shutdown included) on exit."""
    tls_files = make_tls_files(directory)
    port = free_port()
    config_settings = Settings(
        host="127.0.0.1", port=port, cert_file=str(tls_files.cert_file), key_file=str(tls_files.key_file),
        **settings,
    )
    state = state or labelled_state()
    tls = CertificateReloader(config_settings.cert_file or "", config_settings.key_file or "")
    server = build_server(config_settings, state, tls, refreshers=refreshers, engine=engine)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    running = RunningServer(f"https://127.0.0.1:{port}", tls_files, state, tls, server)
    try:
        yield running
    finally:
        for client in running.clients:
            client.close()
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One shared enforce-by-default server per test module, with namespaces in each mode."""
    with running_server(tmp_path_factory.mktemp("tls")) as running:
        yield running
