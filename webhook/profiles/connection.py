"""How to reach one Prometheus-compatible server (Prometheus, Thanos, Mimir, Cortex, VictoriaMetrics,
a managed service): the URL with any path prefix, credentials, TLS, extra headers such as a tenant, the
label matchers that pick one cluster out of a shared server, and the query timeout.

One frozen object, built once from options or settings and shared by every command that reads
Prometheus. Credentials live in files (a mounted Secret, a projected service-account token) that are
read again whenever they change, or, for a password, in the environment: never in an option value,
which anyone on the node can read in the process list. Nothing here ever puts a credential or a header
value into a message, a `repr` or a log line.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from webhook.profiles.httpclient import ExplainedTransport, FileAuth, explain_status, tls_context
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.queries import quote

__all__ = [
    "COMPRESSIONS",
    "ConnectionSettingsError",
    "Matcher",
    "PrometheusConnection",
    "parse_header",
    "parse_selector",
]


class ConnectionSettingsError(ValueError):
    """A connection setting cannot be used; the message names the option."""


_MATCHER = re.compile(
    r"""\s*(?P<label>[a-zA-Z_][a-zA-Z0-9_]*)\s*(?P<op>=~|!~|!=|=)\s*
        (?P<value>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*(?:,|$)""",
    re.VERBOSE,
)
COMPRESSIONS = ("auto", "gzip", "none")
# Host names that resolve inside the cluster (a Service's short or full name) or to this host.
_NEAR_SUFFIXES = (".svc", ".svc.cluster.local", ".cluster.local", ".local", ".localhost")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name (RFC 9110 token)


@dataclass(frozen=True, slots=True)
class Matcher:
    """One label matcher, `cluster="prod-eu"`; rendered back in PromQL's own quoting."""

    label: str
    op: str  # =, !=, =~, !~
    value: str

    def __str__(self) -> str:
        return f"{self.label}{self.op}{quote(self.value)}"

    def matches(self, value: str) -> bool:
        """What Prometheus decides for a series whose label has `value` (regexes are anchored)."""
        if self.op in ("=", "!="):
            return (value == self.value) == (self.op == "=")
        return (re.fullmatch(self.value, value) is not None) == (self.op == "=~")


def _unquote(text: str) -> str:
    if text[0] == "`":
        return text[1:-1]
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def parse_selector(text: str) -> tuple[Matcher, ...]:
    """`cluster="prod-eu",env=~"prod|staging"` (braces optional) -> matchers; a clear error otherwise."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    matchers: list[Matcher] = []
    position = 0
    while position < len(body.rstrip()):
        match = _MATCHER.match(body, position)
        if match is None:
            raise ConnectionSettingsError(
                f"--prometheus-selector {text!r}: expected label matchers such as cluster=\"prod-eu\" "
                f"(label, one of = != =~ !~, a quoted value; comma-separated) at {body[position:][:30]!r}"
            )
        matcher = Matcher(match["label"], match["op"], _unquote(match["value"]))
        if matcher.label == "__name__":
            raise ConnectionSettingsError("--prometheus-selector: __name__ is chosen by each query")
        if matcher.op in ("=~", "!~"):
            try:
                re.compile(matcher.value)
            except re.error as exc:
                raise ConnectionSettingsError(f"--prometheus-selector {text!r}: bad regex: {exc}") from None
        matchers.append(matcher)
        position = match.end()
    return tuple(matchers)


def parse_header(text: str) -> tuple[str, str]:
    """`'X-Scope-OrgID: team-a'` -> ("X-Scope-OrgID", "team-a"); the value never appears in an error."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not _TOKEN.match(name) or not value or "\n" in value or "\r" in value:
        shown = name if _TOKEN.match(name) else "a header"
        raise ConnectionSettingsError(f"--prometheus-header for {shown}: use 'Name: value' (one line)")
    return name, value


@dataclass(frozen=True, slots=True)
class PrometheusConnection:
    """Everything needed to talk to one Prometheus HTTP API; see docs/prometheus-connection.md."""

    url: str  # base URL, path prefix included (Mimir: https://mimir.example/prometheus)
    bearer_token_file: str | None = None
    username: str | None = None
    password_file: str | None = None
    password: str | None = field(default=None, repr=False)  # from POD_TAILOR_PROMETHEUS_PASSWORD only
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_verify: bool = False
    selector: tuple[Matcher, ...] = ()
    timeout: float = 120.0
    compression: str = "auto"  # COMPRESSIONS: whether answers come gzipped (see `compressed`)

    def __post_init__(self) -> None:
        if self.compression not in COMPRESSIONS:
            raise ConnectionSettingsError(
                f"--prometheus-compression {self.compression!r}: use {', '.join(COMPRESSIONS)}"
            )
        self._check_url()
        self._check_credentials()
        self._check_tls()
        if not self.timeout > 0:
            raise ConnectionSettingsError("--prometheus-timeout must be positive")
        object.__setattr__(self, "url", self.url.rstrip("/"))

    def _check_url(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = repr(self.url) if "@" not in self.url else "(not shown: it holds an @)"
            raise ConnectionSettingsError(f"--prometheus-url {shown}: use http(s)://host[:port][/prefix]")
        if parts.username is not None or parts.password is not None:
            raise ConnectionSettingsError(
                "--prometheus-url must not carry credentials (user:password@): anyone can read options in "
                "the process list; use --prometheus-username with --prometheus-password-file"
            )
        if parts.query or parts.fragment:
            raise ConnectionSettingsError(f"--prometheus-url {self.display_url!r}: no ?query or #fragment")

    def _check_credentials(self) -> None:
        if self.bearer_token_file and (self.username or self.password_file or self.password):
            raise ConnectionSettingsError(
                "--prometheus-bearer-token-file and basic auth (--prometheus-username) exclude each other"
            )
        if (self.password_file or self.password) and not self.username:
            raise ConnectionSettingsError("a Prometheus password needs --prometheus-username")
        if self.username and not (self.password_file or self.password):
            raise ConnectionSettingsError(
                "--prometheus-username needs --prometheus-password-file or POD_TAILOR_PROMETHEUS_PASSWORD"
            )
        if self.password_file and self.password:
            raise ConnectionSettingsError(
                "--prometheus-password-file and POD_TAILOR_PROMETHEUS_PASSWORD exclude each other"
            )
        authenticated = self.bearer_token_file or self.username
        if authenticated and any(name.lower() == "authorization" for name, _ in self.headers):
            raise ConnectionSettingsError(
                "--prometheus-header Authorization conflicts with the bearer token or basic auth"
            )

    def _check_tls(self) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ConnectionSettingsError("--prometheus-cert-file and --prometheus-key-file go together")
        if self.insecure_skip_verify and self.ca_file:
            raise ConnectionSettingsError(
                "--prometheus-insecure-skip-verify and --prometheus-ca-file exclude each other"
            )
        tls_options = self.ca_file or self.cert_file or self.insecure_skip_verify
        if urlsplit(self.url).scheme == "http" and tls_options:
            raise ConnectionSettingsError(
                f"TLS options given but --prometheus-url {self.display_url} is plain http://: use https://"
            )

    @property
    def display_url(self) -> str:
        """The URL as messages show it: scheme, host, port and path, never a user name or password."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"

    @property
    def compressed(self) -> bool:
        """Whether to ask for gzipped answers. Compressing costs Prometheus several times the CPU of
        sending plainly, and this side more to read (docs/prometheus-connection.md has the figures);
        a build's answers are 100-200 MB. So `auto` asks plainly where bytes are cheap, a Prometheus
        on this host or in the cluster (a loopback or private address, a name without dots, a
        Service's `.svc` name), and gzipped across other networks (a managed service). An
        `Accept-Encoding` in `headers` wins over either."""
        if self.compression != "auto":
            return self.compression == "gzip"
        host = (urlsplit(self.url).hostname or "").lower().rstrip(".")  # a rooted name: the same host
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return not ("." not in host or host == "localhost" or host.endswith(_NEAR_SUFFIXES))
        return not (address.is_loopback or address.is_private or address.is_link_local)

    @property
    def selector_text(self) -> str:
        """The matchers every query gets, `cluster="prod-eu"` (empty: none)."""
        return ",".join(str(m) for m in self.selector)

    @property
    def identity(self) -> str:
        """What the data read through this connection depends on (the checkpoint key): the URL, the
        selector and the extra headers (a tenant), the latter only as a digest."""
        headers = ""
        if self.headers:
            digest = hashlib.sha256(repr(sorted(self.headers)).encode()).hexdigest()[:16]
            headers = f" headers={digest}"
        selector = f"{{{self.selector_text}}}" if self.selector else ""
        return f"{self.url}{selector}{headers}"

    def warnings(self) -> list[str]:
        """What an operator must hear about these settings on every start."""
        said = []
        if self.insecure_skip_verify:
            said.append(
                f"--prometheus-insecure-skip-verify: the certificate of {self.display_url} is NOT checked; "
                "anyone on the network path can read the credentials and answer with made-up usage"
            )
        if urlsplit(self.url).scheme == "http" and (self.bearer_token_file or self.username):
            said.append(f"credentials are sent in clear text to {self.display_url} (http://, not https://)")
        return said

    def client(self) -> httpx.Client:
        """A new HTTP client with these credentials, headers and TLS settings (see `httpclient`). Wrong
        settings fail here (an unreadable CA or client certificate) or on the first request."""
        headers = dict(self.headers)
        if not self.compressed and not any(name.lower() == "accept-encoding" for name in headers):
            headers["Accept-Encoding"] = "identity"  # plain answers: see `compressed`
        auth = FileAuth(token_file=self.bearer_token_file, username=self.username, password=self.password,
                        password_file=self.password_file)
        tls = tls_context(ca_file=self.ca_file, cert_file=self.cert_file, key_file=self.key_file,
                          insecure=self.insecure_skip_verify)
        explained = functools.partial(explain_status, where=self.display_url, refused=self._refused())
        return httpx.Client(
            auth=auth,
            headers=headers,
            timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
            transport=ExplainedTransport(httpx.HTTPTransport(verify=tls), where=self.display_url),
            event_hooks={"response": [explained]},
        )

    def _refused(self) -> str:
        """What to check when the server refuses the credentials sent (or wants some)."""
        if self.bearer_token_file:
            return f"the token in --prometheus-bearer-token-file {self.bearer_token_file} was refused"
        if self.username:
            source = (
                f"--prometheus-password-file {self.password_file}" if self.password_file
                else "POD_TAILOR_PROMETHEUS_PASSWORD"
            )
            return f"user {self.username!r} was refused: check --prometheus-username and {source}"
        return (
            "the server wants credentials and none were sent: give --prometheus-bearer-token-file, or "
            "--prometheus-username with --prometheus-password-file"
        )

    def open(self) -> Prometheus:
        """The query adapter over a new client; every query gets the selector's matchers."""
        return Prometheus(self.url, timeout=self.timeout, client=self.client(), selector=self.selector_text)
