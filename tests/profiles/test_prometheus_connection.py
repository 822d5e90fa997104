"""`profiles build`, `recommend` and serve's builder against a real Prometheus behind TLS and basic auth
(two clusters in one server) and behind a header-checking proxy (bearer token, tenant, path prefix)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import scenarios
from conftest import History, test_settings
from headerproxy import TENANT, HeaderProxy
from secured import USERNAME, Secured, secured_prometheus

from tests.tools import free_port
from webhook.commands import main
from webhook.config.settings import Settings
from webhook.profiles.build import BuildResult, build_profiles
from webhook.profiles.connection import PrometheusConnection, parse_selector
from webhook.profiles.preflight import check_connection
from webhook.profiles.prometheus import PrometheusError
from webhook.profiles.store import FileStore
from webhook.refreshers.profiles import profile_refresher
from webhook.refreshers.state import State

EU = 'cluster="prod-eu"'
SHOP = [
    "--namespace",
    "shop",
    "--step",
    "5m",
    "--rate-window",
    "10m",
    "--startup-window",
    "1200",
    "--startup-lookback",
    "14d",
    "--end",
    str(scenarios.END),
    "--no-checkpoint",
    "-q",
]
RECOMMEND = [*SHOP[:-4], "--no-checkpoint", "-q"]  # `recommend` reads up to now: no --end
WINDOW = 14 * 86_400


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    with secured_prometheus(tmp_path_factory.mktemp("secured")) as server:
        yield server


def _secured_connection(secured: Secured, **overrides: object) -> PrometheusConnection:
    values: dict[str, object] = {
        "ca_file": str(secured.ca_file),
        "cert_file": str(secured.cert_file),
        "key_file": str(secured.key_file),
        "username": USERNAME,
        "password_file": str(secured.password_file),
        "selector": parse_selector(EU),
    }
    values.update(overrides)
    return PrometheusConnection(secured.url, **values)  # type: ignore[arg-type]


def _build(connection: PrometheusConnection) -> BuildResult:
    prom = connection.open()
    try:
        return build_profiles(prom, test_settings(namespaces=("shop",)), end=scenarios.END)
    finally:
        prom.close()


class TestTlsAndBasicAuth:
    def test_the_right_settings_build_what_a_server_of_that_one_cluster_builds(
        self, secured: Secured, built: BuildResult
    ) -> None:
        result = _build(_secured_connection(secured))
        assert result.document.workloads == built.document.workloads
        assert not result.warnings

    def test_the_command_builds_with_the_password_from_the_environment(
        self,
        secured: Secured,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        monkeypatch.setenv("POD_TAILOR_PROMETHEUS_PASSWORD", secured.password)
        options = secured.good_options()
        at = options.index("--prometheus-password-file")
        del options[at : at + 2]
        store = tmp_path / "p.json"
        code = main(
            ["profiles", "build", *options, "--prometheus-selector", EU, *SHOP, "--profiles-path", str(store)]
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "wrote 10 workloads" in out
        assert secured.password not in out + err
        assert len(FileStore(store).read().workloads) == 10

    def test_without_a_selector_the_clusters_are_named_in_a_warning(
        self, secured: Secured, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = main(
            ["profiles", "build", *secured.good_options(), *SHOP, "--profiles-path", str(tmp_path / "p.json")]
        )
        err = capsys.readouterr().err
        assert code == 0, err
        assert "holds container data of 2 clusters (cluster: prod-eu, prod-us)" in err

    def test_insecure_skip_verify_works_and_warns_loudly(
        self, secured: Secured, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        options = secured.good_options()
        at = options.index("--prometheus-ca-file")
        options[at : at + 2] = ["--prometheus-insecure-skip-verify"]
        code = main(
            [
                "profiles",
                "build",
                *options,
                "--prometheus-selector",
                EU,
                *SHOP,
                "--profiles-path",
                str(tmp_path / "p.json"),
            ]
        )
        err = capsys.readouterr().err
        assert code == 0, err
        assert "warning: --prometheus-insecure-skip-verify: the certificate of" in err
        assert "is NOT checked" in err


Change = Callable[[list[str], Path, str], list[str]]  # (good options, a temp dir, the server's URL)


def _without(*names: str) -> Change:
    def change(options: list[str], tmp: Path, url: str) -> list[str]:
        for name in names:
            at = options.index(name)
            options = options[:at] + options[at + 2 :]
        return options

    return change


def _replaced(option: str, value: Callable[[Path, str], str]) -> Change:
    def change(options: list[str], tmp: Path, url: str) -> list[str]:
        at = options.index(option)
        return [*options[: at + 1], value(tmp, url), *options[at + 2 :]]

    return change


def _added(*extra: str) -> Change:
    return lambda options, tmp, url: [*options, *extra]


def _written(name: str, text: str) -> Callable[[Path, str], str]:
    def write(tmp: Path, url: str) -> str:
        (tmp / name).write_text(text)
        return str(tmp / name)

    return write


def _http(options: list[str], tmp: Path, url: str) -> list[str]:
    plain = _without("--prometheus-ca-file", "--prometheus-cert-file", "--prometheus-key-file")(
        options, tmp, url
    )
    return _replaced("--prometheus-url", lambda t, u: u.replace("https://", "http://"))(plain, tmp, url)


WRONG: dict[str, tuple[Change, str]] = {
    "wrong password": (
        _replaced("--prometheus-password-file", _written("pw", "guess\n")),
        "HTTP 401 ('Unauthorized'): user 'pod-tailor' was refused: check --prometheus-username and "
        "--prometheus-password-file",
    ),
    "no credentials": (
        _without("--prometheus-username", "--prometheus-password-file"),
        "the server wants credentials and none were sent",
    ),
    "password file missing": (
        _replaced("--prometheus-password-file", lambda t, u: str(t / "absent")),
        "--prometheus-password-file {tmp}/absent: cannot read: No such file or directory",
    ),
    "no CA": (
        _without("--prometheus-ca-file"),
        "untrusted server certificate: give its CA in --prometheus-ca-file",
    ),
    "a CA file that is no certificate": (
        _replaced("--prometheus-ca-file", _written("ca.crt", "nonsense")),
        "--prometheus-ca-file {tmp}/ca.crt: cannot load",
    ),
    "no client certificate": (
        _without("--prometheus-cert-file", "--prometheus-key-file"),
        "client certificate",
    ),
    "client certificate without its key": (
        _without("--prometheus-key-file"),
        "--prometheus-cert-file and --prometheus-key-file go together",
    ),
    "http to an https server": (_http, "the server speaks HTTPS: use https:// in --prometheus-url"),
    "TLS options with an http url": (
        _replaced("--prometheus-url", lambda t, u: u.replace("https://", "http://")),
        "TLS options given but --prometheus-url http://127.0.0.1:{port} is plain http://: use https://",
    ),
    "a path prefix the server does not have": (
        _replaced("--prometheus-url", lambda t, u: u + "/prometheus"),
        "HTTP 404 for /prometheus/api/v1/label/namespace/values: no Prometheus API there: "
        "check --prometheus-url",
    ),
    "a mistyped cluster": (
        _added("--prometheus-selector", 'cluster="prod-ue"'),
        "--prometheus-selector 'cluster=\"prod-ue\"' matches no container_memory_working_set_bytes series "
        "in the "
        "window at https://127.0.0.1:{port}: cluster=\"prod-ue\" matches none of the values of 'cluster': "
        "prod-eu, prod-us",
    ),
    "a mistyped label": (
        _added("--prometheus-selector", 'clutser="prod-eu"'),
        "no series has a label 'clutser'",
    ),
    "a selector that is no selector": (
        _added("--prometheus-selector", "cluster=prod-eu"),
        "--prometheus-selector 'cluster=prod-eu': expected",
    ),
    "insecure and a CA": (_added("--prometheus-insecure-skip-verify"), "exclude each other"),
}


# Settings refused before anything is sent (exit 2, as every bad option); the others are Prometheus' answer.
CONTRADICTIONS = {
    "TLS options with an http url", "a selector that is no selector", "client certificate without its key",
    "insecure and a CA",
}


class TestEachWrongSettingFailsFastNamingTheProblem:
    @pytest.mark.parametrize("case", sorted(WRONG))
    def test_a_wrong_setting(
        self, secured: Secured, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        change, expected = WRONG[case]
        options = change(secured.good_options(), tmp_path, secured.url)
        store = tmp_path / "p.json"
        code = main(["profiles", "build", *options, *SHOP, "--profiles-path", str(store)])
        out, err = capsys.readouterr()
        # Settings that cannot go together: nothing sent (2); no connection made (3); Prometheus' answer (1).
        unreachable = "cannot reach Prometheus" in err
        assert code == (2 if case in CONTRADICTIONS else 3 if unreachable else 1)
        assert expected.format(tmp=tmp_path, port=secured.server.port) in err, err
        assert err.splitlines()[-1].startswith("pod-tailor profiles build: ")
        assert secured.password not in out + err
        assert not store.exists()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("first-token-value\n")
    return path


@pytest.fixture
def proxy(history: History) -> Iterator[HeaderProxy]:
    required = {"Authorization": "Bearer first-token-value", TENANT: "team-a"}
    with HeaderProxy(history.prometheus.url, required=required, prefix="/prometheus") as running:
        yield running


class TestHeadersThroughAGateway:
    def test_a_token_a_tenant_and_a_path_prefix_reach_prometheus(
        self, proxy: HeaderProxy, token_file: Path, built: BuildResult
    ) -> None:
        connection = PrometheusConnection(
            proxy.url, bearer_token_file=str(token_file), headers=((TENANT, "team-a"),)
        )
        assert proxy.url.endswith("/prometheus")
        assert check_connection(connection, window=WINDOW, end=scenarios.END) == []
        assert _build(connection).document.workloads == built.document.workloads
        assert {seen.get(TENANT) for seen in proxy.seen} == {"team-a"}

    def test_a_rotated_token_is_read_again_by_the_same_client(
        self, proxy: HeaderProxy, token_file: Path
    ) -> None:
        connection = PrometheusConnection(
            proxy.url, bearer_token_file=str(token_file), headers=((TENANT, "team-a"),)
        )
        prom = connection.open()
        try:
            prom.instant("up", at=scenarios.END)
            token_file.write_text("second-and-longer-token\n")
            proxy.required["Authorization"] = "Bearer second-and-longer-token"
            prom.instant("up", at=scenarios.END)
        finally:
            prom.close()
        assert [seen["Authorization"] for seen in proxy.seen][-2:] == [
            "Bearer first-token-value",
            "Bearer second-and-longer-token",
        ]

    @pytest.mark.parametrize(
        ("token", "headers", "message"),
        [
            ("first-token-value", (), "wants the tenant: --prometheus-header 'X-Scope-OrgID: <tenant>'"),
            (
                "stale-token",
                ((TENANT, "team-a"),),
                "the token in --prometheus-bearer-token-file {file} was refused",
            ),
        ],
    )
    def test_a_missing_tenant_or_a_refused_token_is_named(
        self,
        proxy: HeaderProxy,
        token_file: Path,
        token: str,
        headers: tuple[tuple[str, str], ...],
        message: str,
    ) -> None:
        token_file.write_text(token)
        connection = PrometheusConnection(proxy.url, bearer_token_file=str(token_file), headers=headers)
        with pytest.raises(PrometheusError) as raised:
            check_connection(connection, window=WINDOW, end=scenarios.END)
        assert message.format(file=token_file) in str(raised.value)
        assert token not in str(raised.value)


def _scrape(port: int) -> str:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2.0).text
    except httpx.HTTPError:
        return ""


def _value(text: str, series: str) -> float | None:
    found = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(found[1]) if found else None


class TestRecommenderMetricsAndSecrets:
    def _run(
        self, options: list[str], *, store: Path, interval: int, until: Callable[[str], bool], code: int = 0
    ) -> str:
        """`recommend` (two builds `interval` s apart) in a thread, its metrics on a free port; the metrics
        page once `until` holds (the command runs on meanwhile); it exits with the last build's `code`."""
        port = free_port()
        args = [*options, *RECOMMEND, "--profiles-path", str(store), "--metrics-port", str(port),
                "--metrics-host", "127.0.0.1", "--max-builds", "2", "--interval", str(interval)]
        done: list[int] = []
        thread = threading.Thread(target=lambda: done.append(main(["recommend", *args])), daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        page = ""
        while time.monotonic() < deadline and not until(page := _scrape(port)):
            time.sleep(0.05)
        thread.join(timeout=120)
        assert done == [code]
        return page

    def test_a_successful_build_is_counted_with_what_it_wrote(self, secured: Secured, tmp_path: Path) -> None:
        page = self._run(
            [*secured.good_options(), "--prometheus-selector", EU],
            store=tmp_path / "p.json",
            interval=1,
            until=lambda text: _value(text, 'pod_tailor_recommender_builds_total{result="success"}') == 1,
        )
        assert _value(page, 'pod_tailor_recommender_builds_total{result="failure"}') == 0
        assert _value(page, "pod_tailor_recommender_workloads") == 10
        assert (
            _value(page, "pod_tailor_recommender_last_success_timestamp_seconds") or 0
        ) > time.time() - 300
        assert _value(page, "pod_tailor_recommender_build_interval_seconds") == 1
        assert (_value(page, "pod_tailor_recommender_prometheus_queries_total") or 0) > 0

    def test_a_refused_password_is_in_no_log_line_error_or_metric(
        self,
        secured: Secured,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        secret = "correct-horse-battery-staple"
        monkeypatch.setenv("POD_TAILOR_PROMETHEUS_PASSWORD", secret)
        options = secured.good_options()
        at = options.index("--prometheus-password-file")
        del options[at : at + 2]
        page = self._run(
            options,
            store=tmp_path / "p.json",
            interval=2,
            until=lambda text: _value(text, 'pod_tailor_recommender_builds_total{result="failure"}') == 1,
            code=1,  # the last build was refused
        )
        out, err = capsys.readouterr()
        logged = caplog.text
        assert "was refused" in logged
        for text in (page, out, err, logged):
            assert secret not in text
        assert _value(page, "pod_tailor_recommender_last_success_timestamp_seconds") == 0

    def test_serves_own_builder_keeps_the_password_out_of_its_readiness_notes(self, secured: Secured) -> None:
        settings = Settings(
            prometheus_url=secured.url,
            prometheus_ca_file=str(secured.ca_file),
            prometheus_cert_file=str(secured.cert_file),
            prometheus_key_file=str(secured.key_file),
            prometheus_username=USERNAME,
            prometheus_password="not-the-password-42",
            profiles_path="/nonexistent/p",
        )
        state = State()
        asyncio.run(profile_refresher(settings).refresh_once(state))
        assert "user 'pod-tailor' was refused" in state.notes["profiles"]
        assert "not-the-password-42" not in str(state.notes)
