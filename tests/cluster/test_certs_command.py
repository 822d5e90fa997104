"""`pod-tailor certs`: valid for the Service names, and a client trusting the CA connects."""

from __future__ import annotations

import base64
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from webhook.commands import main
from webhook.server.selfsigned import SECRET_FILE, WEBHOOK_PATCH_FILE, write_certificates


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("certs")
    assert (
        main(
            ["certs", "--out", str(out), "--pod-tailor-namespace", "tailor-system", "--service", "hook",
             "--days", "30"]
        )
        == 0
    )
    return out


def sans(path: Path) -> list[str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    )


def test_the_serving_certificate_names_the_service_in_its_namespace(generated: Path) -> None:
    names = sans(generated / "tls.crt")
    assert "hook.tailor-system.svc" in names
    assert "hook.tailor-system.svc.cluster.local" in names
    assert all(name.startswith("hook") for name in names)


def test_the_certificate_lives_as_long_as_asked(generated: Path) -> None:
    cert = x509.load_pem_x509_certificate((generated / "tls.crt").read_bytes())
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert 30 <= lifetime.days <= 31


def test_the_secret_manifest_carries_the_same_files(generated: Path) -> None:
    secret = yaml.safe_load((generated / SECRET_FILE).read_text())
    assert secret["metadata"] == {
        "name": "pod-tailor-tls",
        "namespace": "tailor-system",
        "labels": {"app.kubernetes.io/name": "pod-tailor"},
    }
    for key in ("tls.crt", "tls.key", "ca.crt"):
        assert base64.b64decode(secret["data"][key]) == (generated / key).read_bytes()


def test_the_ca_bundle_patch_holds_the_ca(generated: Path) -> None:
    patch = yaml.safe_load((generated / WEBHOOK_PATCH_FILE).read_text())
    (entry,) = patch["webhooks"]
    assert entry["name"] == "pods.pod-tailor.io"
    assert base64.b64decode(entry["clientConfig"]["caBundle"]) == (generated / "ca.crt").read_bytes()


def test_the_private_key_files_are_not_world_readable(generated: Path) -> None:
    assert (generated / "tls.key").stat().st_mode & 0o077 == 0
    assert (generated / SECRET_FILE).stat().st_mode & 0o077 == 0


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A real TLS server on loopback presenting a certificate made by `write_certificates`."""
    files = write_certificates(tmp_path, service="pod-tailor", namespace="pod-tailor")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(files["tls.crt"], files["tls.key"])
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        with listener:
            for _ in range(2):
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                try:
                    with context.wrap_socket(connection, server_side=True) as tls:
                        tls.sendall(b"hello")
                except (ssl.SSLError, OSError):
                    continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port, files["ca.crt"]
    listener.close()


def test_a_client_verifying_with_the_ca_connects_under_the_service_name(tls_server: tuple[int, Path]) -> None:
    port, ca = tls_server
    client = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        client.wrap_socket(raw, server_hostname="pod-tailor.pod-tailor.svc") as tls,
    ):
        assert tls.recv(5) == b"hello"
        assert tls.version() in ("TLSv1.2", "TLSv1.3")


def test_a_client_asking_for_another_name_is_refused(tls_server: tuple[int, Path]) -> None:
    port, ca = tls_server
    client = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"),
    ):
        client.wrap_socket(raw, server_hostname="other.pod-tailor.svc")
