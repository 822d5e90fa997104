"""Development and in-cluster TLS material: a CA and a serving certificate signed by it.

The API server only talks to webhooks over HTTPS and checks the serving certificate against the
`caBundle` of the webhook configuration, so both `scripts/run` and `pod-tailor certs` need a small CA
and a certificate whose SANs cover `<service>.<namespace>.svc` (and `localhost` for development).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "KeyPair",
    "make_ca",
    "make_serving_cert",
    "service_dns_names",
    "write_dev_certs",
    "write_pem",
]

_CLOCK_SKEW = dt.timedelta(minutes=5)  # tolerate API servers whose clock runs a little behind


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate and its private key; `cert_pem` / `key_pem` give the PEM bytes."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Digital signature always (TLS 1.3 and ECDHE); certificate and CRL signing only for the CA."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def make_ca(common_name: str = "pod-tailor development CA", *, days: int = 3650) -> KeyPair:
    """A self-signed CA that may sign serving certificates (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert, key)


def make_serving_cert(
    ca: KeyPair,
    *,
    dns_names: Sequence[str] = ("localhost",),
    ip_addresses: Sequence[str] = ("127.0.0.1",),
    days: int = 365,
) -> KeyPair:
    """A TLS server certificate signed by `ca`, valid for the given DNS names and IP addresses.

    Go's TLS stack (the API server) ignores the common name and checks only the SANs.
    """
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    common_name = (list(dns_names) or list(ip_addresses))[0][:64]
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(cert, key)


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server may use for an in-cluster webhook Service."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def write_pem(path: str | os.PathLike[str], data: bytes, *, private: bool = False) -> Path:
    """Write PEM bytes atomically (temp file + rename), so a watcher never reads half a file.

    Private keys are created with mode 0600.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    fd = os.open(temp, flags, 0o600 if private else 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return target


def write_dev_certs(
    directory: str | os.PathLike[str],
    *,
    dns_names: Sequence[str] = ("localhost",),
    ip_addresses: Sequence[str] = ("127.0.0.1", "::1"),
    days: int = 365,
) -> tuple[Path, Path, Path]:
    """Write `ca.crt`, `tls.crt` and `tls.key` into `directory`; returns their paths in that order."""
    ca = make_ca()
    serving = make_serving_cert(ca, dns_names=dns_names, ip_addresses=ip_addresses, days=days)
    folder = Path(directory)
    ca_path = write_pem(folder / "ca.crt", ca.cert_pem)
    key_path = write_pem(folder / "tls.key", serving.key_pem, private=True)
    cert_path = write_pem(folder / "tls.crt", serving.cert_pem)
    return ca_path, cert_path, key_path
