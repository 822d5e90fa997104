"""A real Prometheus behind TLS and basic auth (its own --web.config.file), holding two clusters.

The server certificate, the client certificate it requires and their CA come from
`webhook.server.certs`; the password is stored as a bcrypt hash, as Prometheus wants it. The history is
the synthetic cluster of `scenarios.py` twice: as `cluster="prod-eu"` exactly, and as `cluster="prod-us"`
with every usage doubled, so a build whose selector let a single query through unscoped would not
agree with the single-cluster build.
"""

from __future__ import annotations

import datetime as dt
import secrets
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import bcrypt
import httpx
import scenarios
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from promserver import PromServer, backfill
from synthetic import Shape, Workload, write_openmetrics

from webhook.server.certs import KeyPair, make_ca, make_serving_cert, write_pem

USERNAME = "pod-tailor"


@dataclass(frozen=True)
class Secured:
    server: PromServer
    ca_file: Path
    cert_file: Path
    key_file: Path
    password_file: Path
    password: str

    @property
    def url(self) -> str:
        return self.server.url

    def good_options(self) -> list[str]:
        """The `profiles build` options that reach this server."""
        return [
            "--prometheus-url", self.url, "--prometheus-ca-file", str(self.ca_file),
            "--prometheus-cert-file", str(self.cert_file), "--prometheus-key-file", str(self.key_file),
            "--prometheus-username", USERNAME, "--prometheus-password-file", str(self.password_file),
        ]


def client_cert(ca: KeyPair, name: str) -> KeyPair:
    """A TLS client certificate signed by `ca` (Go's servers want the clientAuth usage)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(cert, key)


def _doubled(shape: Shape) -> Shape:
    def twice(k: int, t: int, age: int) -> tuple[float, float]:
        cores, memory = shape(k, t, age)
        return 2 * cores, 2 * memory

    return twice


def two_clusters() -> list[Workload]:
    eu = [replace(wl, labels={"cluster": "prod-eu"}) for wl in scenarios.workloads()]
    us = [
        replace(wl, labels={"cluster": "prod-us"},
                containers={name: _doubled(shape) for name, shape in wl.containers.items()})
        for wl in scenarios.workloads()
    ]
    return eu + us


@contextmanager
def secured_prometheus(root: Path) -> Iterator[Secured]:
    ca = make_ca("pod-tailor test Prometheus CA")
    serving = make_serving_cert(ca, dns_names=("localhost",), ip_addresses=("127.0.0.1",))
    client = client_cert(ca, USERNAME)
    files = {
        name: write_pem(root / name, data, private=name.endswith(".key"))
        for name, data in (
            ("ca.crt", ca.cert_pem), ("server.crt", serving.cert_pem), ("server.key", serving.key_pem),
            ("client.crt", client.cert_pem), ("client.key", client.key_pem),
        )
    }
    password = secrets.token_urlsafe(18)
    (root / "password").write_text(password + "\n")
    web = root / "web.yml"
    web.write_text(yaml.safe_dump({
        "tls_server_config": {
            "cert_file": str(files["server.crt"]), "key_file": str(files["server.key"]),
            "client_auth_type": "RequireAndVerifyClientCert", "client_ca_file": str(files["ca.crt"]),
        },
        "basic_auth_users": {USERNAME: bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()},
    }))
    source = root / "history.om"
    with source.open("w") as out:
        write_openmetrics(two_clusters(), out, step=scenarios.STEP)
    backfill(source, root / "data")
    source.unlink()
    context = ssl.create_default_context(cafile=str(files["ca.crt"]))
    context.load_cert_chain(files["client.crt"], files["client.key"])
    probe = httpx.Client(verify=context, auth=(USERNAME, password), timeout=1.0)
    with PromServer(root / "data", web_config=web, probe=probe) as server:
        yield Secured(server, files["ca.crt"], files["client.crt"], files["client.key"], root / "password",
                      password)
