"""TLS with certificates that can be replaced while serving (cert-manager rotates them).

uvicorn listens with one `ssl.SSLContext` for the life of the process. Rather than reloading that
context in place (a half-updated cert/key pair there breaks every new handshake), its SNI callback,
which OpenSSL runs for every ClientHello with or without a server name, hands each new connection
the newest complete context. A reload builds a fresh context from both files and swaps the reference
only if it loaded; open connections keep the context they were accepted with.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

__all__ = ["CertificateReloader"]

log = logging.getLogger("pod_tailor.tls")

_Signature = tuple[tuple[int, int, int, int], ...]


def _context(cert_file: str, key_file: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


@dataclass(frozen=True, slots=True)
class Loaded:
    context: ssl.SSLContext
    not_after: dt.datetime
    serial: int
    loaded_at: dt.datetime


class CertificateReloader:
    """Owns the listening context; `check()` reloads when either file changed (by inode, size, mtime)."""

    def __init__(self, cert_file: str, key_file: str) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.reloads = 0
        self.failures = 0
        self._signature = self._stat()
        self._current = self._load()  # fail fast at start-up: a server without certificates is useless
        self.listening = _context(cert_file, key_file)
        self.listening.sni_callback = self._pick

    @property
    def current(self) -> Loaded:
        return self._current

    def _stat(self) -> _Signature:
        stats = (os.stat(self.cert_file), os.stat(self.key_file))
        return tuple((s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for s in stats)

    def _load(self) -> Loaded:
        context = _context(self.cert_file, self.key_file)
        certificate = x509.load_pem_x509_certificate(Path(self.cert_file).read_bytes())
        return Loaded(
            context=context,
            not_after=certificate.not_valid_after_utc,
            serial=certificate.serial_number,
            loaded_at=dt.datetime.now(dt.UTC),
        )

    def _pick(self, connection: ssl.SSLObject | ssl.SSLSocket, server_name: str | None,
              context: ssl.SSLContext) -> None:
        connection.context = self._current.context

    def check(self) -> bool:
        """Reload if the files changed; returns True when a new certificate is now served.

        A failed load (e.g. the key written but not yet the certificate) keeps the current context
        and is retried on the next check, since the signature is only recorded after a success.
        """
        try:
            signature = self._stat()
        except OSError as exc:
            log.warning("certificate files not readable", extra={"error": str(exc)})
            return False
        if signature == self._signature:
            return False
        try:
            loaded = self._load()
        except (OSError, ssl.SSLError, ValueError) as exc:
            self.failures += 1
            log.warning("certificate reload failed; keeping the current one", extra={"error": str(exc)})
            return False
        self._current, self._signature = loaded, signature
        self.reloads += 1
        log.info(
            "certificate reloaded",
            extra={"serial": f"{loaded.serial:x}", "not_after": loaded.not_after.isoformat()},
        )
        return True

    async def watch(self, interval: float) -> None:
        """Check every `interval` seconds until cancelled; no fault ends the watch."""
        while True:
            await asyncio.sleep(interval)
            try:
                self.check()
            except Exception:
                self.failures += 1
                log.exception("certificate check failed; keeping the current certificate")
