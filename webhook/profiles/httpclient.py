"""The HTTP client of a `PrometheusConnection`: credentials from files, TLS, and errors that name the option.

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
from typing import TYPE_CHECKING

import certifi
import httpx

from webhook.profiles.prometheus import PrometheusError

if TYPE_CHECKING:
    from webhook.profiles.connection import PrometheusConnection

__all__ = ["build_client"]


def build_client(connection: PrometheusConnection) -> httpx.Client:
    """Wrong settings fail here (an unreadable CA or client certificate) or on the first request."""
    headers = dict(connection.headers)
    if not connection.compressed and not any(name.lower() == "accept-encoding" for name in headers):
        headers["Accept-Encoding"] = "identity"  # plain answers: see PrometheusConnection.compressed
    return httpx.Client(
        auth=_FileAuth(connection),
        headers=headers,
        timeout=httpx.Timeout(connection.timeout, connect=min(connection.timeout, 10.0)),
        transport=_Explained(httpx.HTTPTransport(verify=_tls(connection)), connection),
        event_hooks={"response": [lambda response: _explain_status(connection, response)]},
    )


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _tls(connection: PrometheusConnection) -> ssl.SSLContext:
    if connection.insecure_skip_verify:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        try:
            context = ssl.create_default_context(cafile=connection.ca_file or certifi.where())
        except (OSError, ssl.SSLError) as exc:
            raise PrometheusError(
                f"--prometheus-ca-file {connection.ca_file}: cannot load: {_reason(exc)}"
            ) from None
    if connection.cert_file and connection.key_file:
        try:
            context.load_cert_chain(connection.cert_file, connection.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise PrometheusError(
                f"--prometheus-cert-file {connection.cert_file} / --prometheus-key-file "
                f"{connection.key_file}: cannot load the client certificate: {_reason(exc)}"
            ) from None
    return context


def _explain_status(connection: PrometheusConnection, response: httpx.Response) -> None:
    """Answers that mean a wrong setting become errors that say which one."""
    status = response.status_code
    if status not in (400, 401, 403, 404, 407):
        return  # Prometheus' own JSON errors (bad_data, timeout, ...) are read by the adapter
    response.read()
    body = response.text[:200].strip()
    where = f"Prometheus at {connection.display_url}: HTTP {status}"
    if "no org id" in body.lower():
        raise PrometheusError(
            f"{where} ({body!r}): a multi-tenant server (Mimir, Cortex, Thanos receive) wants the tenant: "
            "--prometheus-header 'X-Scope-OrgID: <tenant>'"
        )
    if status == 400 and "HTTPS server" in body:
        raise PrometheusError(f"{where}: the server speaks HTTPS: use https:// in --prometheus-url")
    if status in (401, 407):
        raise PrometheusError(f"{where} ({body!r}): {_refused(connection)}")
    if status == 403:
        raise PrometheusError(f"{where}: the credentials were accepted but may not read this (permissions)")
    if status == 404:
        raise PrometheusError(
            f"{where} for {response.request.url.path}: no Prometheus API there: check --prometheus-url and "
            "its path prefix (Mimir serves the API under /prometheus)"
        )


def _refused(connection: PrometheusConnection) -> str:
    if connection.bearer_token_file:
        return f"the token in --prometheus-bearer-token-file {connection.bearer_token_file} was refused"
    if connection.username:
        source = (
            f"--prometheus-password-file {connection.password_file}" if connection.password_file
            else "POD_TAILOR_PROMETHEUS_PASSWORD"
        )
        return f"user {connection.username!r} was refused: check --prometheus-username and {source}"
    return (
        "the server wants credentials and none were sent: give --prometheus-bearer-token-file, or "
        "--prometheus-username with --prometheus-password-file"
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


class _FileAuth(httpx.Auth):
    """The Authorization header: a bearer token or user + password, files read again when they change."""

    def __init__(self, connection: PrometheusConnection) -> None:
        self.username, self.password = connection.username, connection.password
        token, password = connection.bearer_token_file, connection.password_file
        self.token = _Watched(token, "--prometheus-bearer-token-file") if token else None
        self.password_file = _Watched(password, "--prometheus-password-file") if password else None

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


class _Explained(httpx.BaseTransport):
    """TLS failures turned into errors that name the option to change."""

    def __init__(self, inner: httpx.BaseTransport, connection: PrometheusConnection) -> None:
        self.inner, self.connection = inner, connection

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return self.inner.handle_request(request)
        except httpx.TransportError as exc:  # TLS 1.3 reports a refused client certificate on read
            hint = next((hint for marker, hint in _TLS_HINTS if marker in str(exc)), None)
            if hint is None:
                raise
            where = self.connection.display_url
            raise PrometheusError(f"cannot reach Prometheus at {where}: {hint} ({exc})") from None

    def close(self) -> None:
        self.inner.close()
