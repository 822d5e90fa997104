"""The parts of a Prometheus HTTP client: credentials from files, TLS, and errors that name the option.

`PrometheusConnection.client` puts them together from its settings; they read nothing else of it.

A projected service-account token is rotated by the kubelet about every hour and a mounted Secret
changes in place, so credential files are read again whenever their modification time, size or inode
changes, not once at start. A refused password, a missing tenant, an untrusted certificate or a wrong
path prefix each become a `PrometheusError` saying which option to look at, before any JSON is parsed.
"""

from __future__ import annotations

import os
import ssl
import threading
from collections.abc import Generator, Sequence
from pathlib import Path

import certifi
import httpx

from webhook.profiles.prometheus import PrometheusError

__all__ = ["ExplainedTransport", "FileAuth", "explain_status", "tls_context"]


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def tls_context(
    *, ca_file: str | None, cert_file: str | None, key_file: str | None, insecure: bool
) -> ssl.SSLContext:
    """The TLS context of `--prometheus-ca-file`, `--prometheus-cert-file`/`-key-file` and
    `--prometheus-insecure-skip-verify`; a file that cannot be loaded is a PrometheusError naming it."""
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        try:
            context = ssl.create_default_context(cafile=ca_file or certifi.where())
        except (OSError, ssl.SSLError) as exc:
            raise PrometheusError(f"--prometheus-ca-file {ca_file}: cannot load: {_reason(exc)}") from None
    if cert_file and key_file:
        try:
            context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as exc:
            raise PrometheusError(
                f"--prometheus-cert-file {cert_file} / --prometheus-key-file "
                f"{key_file}: cannot load the client certificate: {_reason(exc)}"
            ) from None
    return context


def explain_status(response: httpx.Response, *, where: str, refused: str) -> None:
    """Answers that mean a wrong setting become errors that say which one (a response hook). `where`:
    the server as messages show it; `refused`: what to check when it refuses the credentials."""
    status = response.status_code
    if status not in (400, 401, 403, 404, 407):
        return  # Prometheus' own JSON errors (bad_data, timeout, ...) are read by the adapter
    response.read()
    body = response.text[:200].strip()
    said = f"Prometheus at {where}: HTTP {status}"
    if "no org id" in body.lower():
        raise PrometheusError(
            f"{said} ({body!r}): a multi-tenant server (Mimir, Cortex, Thanos receive) wants the tenant: "
            "--prometheus-header 'X-Scope-OrgID: <tenant>'"
        )
    if status == 400 and "HTTPS server" in body:
        raise PrometheusError(f"{said}: the server speaks HTTPS: use https:// in --prometheus-url")
    if status in (401, 407):
        raise PrometheusError(f"{said} ({body!r}): {refused}")
    if status == 403:
        raise PrometheusError(f"{said}: the credentials were accepted but may not read this (permissions)")
    if status == 404:
        raise PrometheusError(
            f"{said} for {response.request.url.path}: no Prometheus API there: check --prometheus-url and "
            "its path prefix (Mimir serves the API under /prometheus)"
        )


class _Watched:
    """A small file read again when it changes."""

    def __init__(self, path: str, option: str) -> None:
        self.path, self.option = Path(path), option
        self._stamp: tuple[int, int, int] | None = None
        self._text = ""
        self._lock = threading.Lock()  # a build asks several queries at once

    def read(self) -> str:
        try:
            stat = os.stat(self.path)
            stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            with self._lock:
                if stamp != self._stamp:
                    self._text = self.path.read_text().strip()
                    self._stamp = stamp
                text = self._text
        except OSError as exc:
            raise PrometheusError(f"{self.option} {self.path}: cannot read: {_reason(exc)}") from None
        if not text:
            raise PrometheusError(f"{self.option} {self.path}: the file is empty")
        return text


class FileAuth(httpx.Auth):
    """The Authorization header: a bearer token or user + password, files read again when they change."""

    def __init__(
        self, *, token_file: str | None, username: str | None, password: str | None, password_file: str | None
    ) -> None:
        self.username, self.password = username, password
        self.token = _Watched(token_file, "--prometheus-bearer-token-file") if token_file else None
        self.password_file = _Watched(password_file, "--prometheus-password-file") if password_file else None

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self.token is not None:
            request.headers["Authorization"] = f"Bearer {self.token.read()}"
        elif self.username is not None:
            password = self.password_file.read() if self.password_file else self.password or ""
            yield from httpx.BasicAuth(self.username, password).auth_flow(request)
            return
        yield request


_TLS_HINTS: Sequence[tuple[str, str]] = (
    ("Hostname mismatch", "the server's certificate is not valid for this host name (--prometheus-url)"),
    ("CERTIFICATE_VERIFY_FAILED", "untrusted server certificate: give its CA in --prometheus-ca-file"),
    ("CERTIFICATE_REQUIRED", "the server wants a client certificate: --prometheus-cert-file and -key-file"),
    ("UNKNOWN_CA", "the server does not trust the client certificate (--prometheus-cert-file)"),
    ("BAD_CERTIFICATE", "the server refused the client certificate (--prometheus-cert-file)"),
    ("WRONG_VERSION_NUMBER", "the server does not speak TLS: use http:// in --prometheus-url"),
)


class ExplainedTransport(httpx.BaseTransport):
    """TLS failures turned into errors that name the option to change; `where`: the server as
    messages show it."""

    def __init__(self, inner: httpx.BaseTransport, *, where: str) -> None:
        self.inner, self.where = inner, where

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return self.inner.handle_request(request)
        except httpx.TransportError as exc:  # TLS 1.3 reports a refused client certificate on read
            hint = next((hint for marker, hint in _TLS_HINTS if marker in str(exc)), None)
            if hint is None:
                raise
            raise PrometheusError(f"cannot reach Prometheus at {self.where}: {hint} ({exc})") from None

    def close(self) -> None:
        self.inner.close()
