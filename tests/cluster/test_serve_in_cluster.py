"""`pod-tailor serve` as the manifests run it: `pod-tailor certs` certificate, cluster state from watches.

A real process, a real TLS handshake verified with the generated CA under the Service's DNS name, and
the fake API server for the cluster.
"""

from __future__ import annotations

import base64
import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from kubefake import FakeKube

from tests.reviews import review_for
from webhook.server.selfsigned import write_certificates

from .helpers import namespace, pod_tailor_serve, wait_until

SERVICE_NAME = "pod-tailor.pod-tailor.svc"


def https(port: int, ca: Path, method: str, path: str, body: bytes = b"") -> tuple[int, dict[str, Any]]:
    """One HTTP/1.1 request over TLS, verifying the certificate for the in-cluster Service name."""
    context = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=SERVICE_NAME) as tls,
    ):
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {SERVICE_NAME}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        tls.sendall(head.encode() + body)
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), json.loads(payload)


@pytest.fixture
def served(kube: FakeKube, kubeconfig: Path, tmp_path: Path) -> Iterator[tuple[int, Path]]:
    kube.put(namespace("shop", "dry-run"))
    kube.put(namespace("prod", "enforce"))
    kube.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "pod-tailor-policy", "namespace": "pod-tailor"},
            "data": {"policy.yaml": "policies:\n  batch:\n    features: {probes: false}\n"},
        }
    )
    files = write_certificates(tmp_path / "tls")
    with pod_tailor_serve(cert=files["tls.crt"], key=files["tls.key"], kubeconfig=kubeconfig) as port:
        yield port, files["ca.crt"]


def test_readyz_reports_the_cluster_sync_and_the_configmap_policy(served: tuple[int, Path]) -> None:
    port, ca = served
    wait_until(lambda: https(port, ca, "GET", "/readyz")[0] == 200, what="ready")
    _, details = https(port, ca, "GET", "/readyz")
    assert details["pending"] == []
    assert details["notes"]["cluster"].startswith("watching kubeconfig")
    assert "batch" in details["policies"]
    assert "policy from ConfigMap pod-tailor/pod-tailor-policy" in details["snapshots"]["cluster"]


def test_namespace_labels_from_the_watch_decide_dry_run_or_enforce(served: tuple[int, Path]) -> None:
    port, ca = served
    wait_until(lambda: https(port, ca, "GET", "/readyz")[0] == 200, what="ready")
    _, dry = https(port, ca, "POST", "/mutate", orjson.dumps(review_for(namespace="shop")))
    _, enforced = https(port, ca, "POST", "/mutate", orjson.dumps(review_for(namespace="prod")))
    assert "patch" not in dry["response"]
    assert dry["response"]["warnings"]
    assert json.loads(base64.b64decode(enforced["response"]["patch"]))
