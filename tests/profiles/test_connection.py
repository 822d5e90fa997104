"""The Prometheus connection settings: parsing, validation, secrecy, and the selector in every query."""

from __future__ import annotations

import argparse
import re
from typing import Any

import promql_parser
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.commands import main
from webhook.config.settings import PROMETHEUS_FIELDS, Settings, SettingsError, add_arguments, load_settings
from webhook.profiles import queries
from webhook.profiles.connection import (
    ConnectionSettingsError,
    Matcher,
    PrometheusConnection,
    parse_header,
    parse_selector,
)

CLUSTER = 'cluster="prod-eu"'


class TestSelector:
    @pytest.mark.parametrize(
        ("text", "rendered"),
        [
            ('cluster="prod-eu"', 'cluster="prod-eu"'),
            ('{cluster="prod-eu"}', 'cluster="prod-eu"'),
            ("cluster = 'prod-eu' , env=~\"prod|staging\"", 'cluster="prod-eu",env=~"prod|staging"'),
            ("region!~`eu-.*`", 'region!~"eu-.*"'),
            ('team="a\\"b"', 'team="a\\"b"'),
            ("", ""),
        ],
    )
    def test_matchers_are_read_and_rendered_in_promql_quoting(self, text: str, rendered: str) -> None:
        assert ",".join(str(m) for m in parse_selector(text)) == rendered

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("cluster=prod-eu", "expected label matchers"),
            ("cluster", "expected label matchers"),
            ('1cluster="a"', "expected label matchers"),
            ('cluster="a" env="b"', "expected label matchers"),
            ('__name__="up"', "__name__ is chosen by each query"),
            ('env=~"(prod"', "bad regex"),
        ],
    )
    def test_a_malformed_selector_is_refused_naming_the_option(self, text: str, message: str) -> None:
        with pytest.raises(ConnectionSettingsError, match="--prometheus-selector") as raised:
            parse_selector(text)
        assert message in str(raised.value)

    @pytest.mark.parametrize(
        ("matcher", "value", "expected"),
        [
            (Matcher("c", "=", "eu"), "eu", True),
            (Matcher("c", "!=", "eu"), "eu", False),
            (Matcher("c", "=~", "eu|us"), "us", True),
            (Matcher("c", "=~", "e"), "eu", False),  # anchored, as Prometheus anchors it
            (Matcher("c", "!~", "e.*"), "us", True),
        ],
    )
    def test_a_matcher_decides_as_prometheus_does(self, matcher: Matcher, value: str, expected: bool) -> None:
        assert matcher.matches(value) is expected


class TestHeaders:
    def test_a_header_is_split_at_its_first_colon(self) -> None:
        assert parse_header("X-Scope-OrgID: team-a") == ("X-Scope-OrgID", "team-a")
        assert parse_header("X-Token:a:b") == ("X-Token", "a:b")

    @pytest.mark.parametrize("text", ["X-Scope-OrgID", "Bad Name: x", "X-Empty:", "X: a\nInjected: b"])
    def test_a_malformed_header_is_refused_without_echoing_its_value(self, text: str) -> None:
        with pytest.raises(ConnectionSettingsError, match="'Name: value'") as raised:
            parse_header(text)
        assert "Injected: b" not in str(raised.value)


def _connection(**overrides: Any) -> PrometheusConnection:
    values: dict[str, Any] = {"url": "https://prometheus.example:9090"}
    values.update(overrides)
    return PrometheusConnection(**values)


class TestValidation:
    @pytest.mark.parametrize(
        ("overrides", "message"),
        [
            ({"url": "prometheus:9090"}, "--prometheus-url 'prometheus:9090': use http(s)://"),
            ({"url": "https://prometheus.example/?x=1"}, "no ?query or #fragment"),
            ({"bearer_token_file": "/t", "username": "u", "password_file": "/p"}, "exclude each other"),
            ({"password_file": "/p"}, "needs --prometheus-username"),
            ({"username": "u"}, "--prometheus-username needs --prometheus-password-file"),
            ({"username": "u", "password_file": "/p", "password": "x"}, "exclude each other"),
            ({"cert_file": "/c"}, "--prometheus-cert-file and --prometheus-key-file go together"),
            ({"insecure_skip_verify": True, "ca_file": "/ca"}, "exclude each other"),
            ({"url": "http://p:9090", "ca_file": "/ca"}, "is plain http://: use https://"),
            ({"timeout": 0}, "--prometheus-timeout must be positive"),
            ({"bearer_token_file": "/t", "headers": (("Authorization", "x"),)}, "conflicts"),
        ],
    )
    def test_contradictory_or_incomplete_settings_are_refused_naming_the_option(
        self, overrides: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(ConnectionSettingsError) as raised:
            _connection(**overrides)
        assert message in str(raised.value)

    def test_credentials_in_the_url_are_refused_without_repeating_them(self) -> None:
        with pytest.raises(ConnectionSettingsError, match="must not carry credentials") as raised:
            _connection(url="https://admin:hunter2@prometheus.example")
        assert "hunter2" not in str(raised.value)

    def test_the_path_prefix_is_part_of_the_url_and_a_trailing_slash_is_dropped(self) -> None:
        connection = _connection(url="https://mimir.example/prometheus/")
        assert connection.url == "https://mimir.example/prometheus"
        assert connection.display_url == "https://mimir.example/prometheus"


class TestSecrecy:
    def test_no_password_or_header_value_in_a_repr(self) -> None:
        connection = _connection(username="u", password="hunter2", headers=(("X-Scope-OrgID", "tenant-7"),))
        assert "hunter2" not in repr(connection)
        assert "tenant-7" not in repr(connection)
        settings = load_settings({}, env={"POD_TAILOR_PROMETHEUS_URL": "https://p.example",
                                          "POD_TAILOR_PROMETHEUS_USERNAME": "u",
                                          "POD_TAILOR_PROMETHEUS_PASSWORD": "hunter2"})
        assert "hunter2" not in repr(settings)

    def test_the_checkpoint_identity_tells_tenants_and_selectors_apart_without_showing_headers(self) -> None:
        plain = _connection()
        tenant = _connection(headers=(("X-Scope-OrgID", "tenant-7"),))
        other = _connection(headers=(("X-Scope-OrgID", "tenant-8"),))
        scoped = _connection(selector=parse_selector(CLUSTER))
        assert plain.identity == "https://prometheus.example:9090"
        assert len({plain.identity, tenant.identity, other.identity, scoped.identity}) == 4
        assert "tenant-7" not in tenant.identity
        assert CLUSTER in scoped.identity

    def test_insecure_skip_verify_and_clear_text_credentials_are_warned_about(self) -> None:
        assert "NOT checked" in _connection(insecure_skip_verify=True).warnings()[0]
        clear = _connection(url="http://p:9090", bearer_token_file="/t")
        assert "clear text" in clear.warnings()[0]
        assert _connection().warnings() == []


class TestOptionsAndVariables:
    INTERFACE = (
        "--prometheus-url", "--prometheus-bearer-token-file", "--prometheus-username",
        "--prometheus-password-file", "--prometheus-header", "--prometheus-ca-file", "--prometheus-cert-file",
        "--prometheus-key-file", "--prometheus-insecure-skip-verify", "--prometheus-selector",
        "--prometheus-timeout",
    )

    @pytest.mark.parametrize("command", [["profiles", "build"], ["recommend"], ["serve"]])
    def test_every_command_that_reads_prometheus_takes_the_same_options_and_no_password_option(
        self, command: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = capsys.readouterr().out
        for option in self.INTERFACE:
            assert option in text, option
        assert not re.search(r"--prometheus-password\b(?!-file)", text)

    def test_a_password_option_does_not_exist(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit):
            main(["profiles", "build", "--prometheus-password", "hunter2"])
        assert "unrecognized arguments" in capsys.readouterr().err

    def test_options_win_over_variables_and_headers_repeat(self) -> None:
        parser = argparse.ArgumentParser()
        add_arguments(parser, only=PROMETHEUS_FIELDS)
        args = parser.parse_args(["--prometheus-url", "https://a.example", "--prometheus-header", "A: 1",
                                  "--prometheus-header", "B: 2"])
        env = {"POD_TAILOR_PROMETHEUS_URL": "https://b.example", "POD_TAILOR_PROMETHEUS_TIMEOUT": "30",
               "POD_TAILOR_PROMETHEUS_SELECTOR": CLUSTER}
        connection = load_settings(args, env=env, only=PROMETHEUS_FIELDS).prometheus()
        assert connection is not None
        assert connection.url == "https://a.example"
        assert connection.headers == (("A", "1"), ("B", "2"))
        assert (connection.timeout, connection.selector_text) == (30.0, CLUSTER)

    def test_every_setting_comes_from_its_variable_headers_one_per_line(self) -> None:
        env = {
            "POD_TAILOR_PROMETHEUS_URL": "https://mimir.example/prometheus",
            "POD_TAILOR_PROMETHEUS_USERNAME": "u",
            "POD_TAILOR_PROMETHEUS_PASSWORD_FILE": "/secret/password",
            "POD_TAILOR_PROMETHEUS_HEADER": "X-Scope-OrgID: team-a\nX-Extra: 1\n",
            "POD_TAILOR_PROMETHEUS_CA_FILE": "/secret/ca.crt",
            "POD_TAILOR_PROMETHEUS_CERT_FILE": "/secret/tls.crt",
            "POD_TAILOR_PROMETHEUS_KEY_FILE": "/secret/tls.key",
        }
        connection = load_settings({}, env=env, only=PROMETHEUS_FIELDS).prometheus()
        assert connection == PrometheusConnection(
            "https://mimir.example/prometheus", username="u", password_file="/secret/password",
            headers=(("X-Scope-OrgID", "team-a"), ("X-Extra", "1")), ca_file="/secret/ca.crt",
            cert_file="/secret/tls.crt", key_file="/secret/tls.key",
        )
        insecure = load_settings({}, env={"POD_TAILOR_PROMETHEUS_URL": "https://p.example",
                                          "POD_TAILOR_PROMETHEUS_INSECURE_SKIP_VERIFY": "true"})
        assert insecure.prometheus() == _connection(url="https://p.example", insecure_skip_verify=True)

    def test_recommend_stops_at_start_on_wrong_settings_rather_than_failing_every_hour(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        wrong = ["--prometheus-url", "https://p.example", "--prometheus-cert-file", "/c"]
        assert main(["recommend", *wrong]) == 2  # bad settings: nothing started
        assert "--prometheus-cert-file and --prometheus-key-file go together" in capsys.readouterr().err

    def test_serve_refuses_bad_connection_settings_at_start(self) -> None:
        with pytest.raises(SettingsError, match="--prometheus-selector"):
            Settings(prometheus_url="https://p.example", prometheus_selector="cluster=prod")
        assert Settings().prometheus() is None


def _selectors(expression: str) -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append((node.name or "", sorted(str(m) for m in node.matchers.matchers)))

    promql_parser.walk(promql_parser.parse(expression), visit)
    return found


def _shape(expression: str) -> list[str]:
    names: list[str] = []
    promql_parser.walk(promql_parser.parse(expression), lambda node: names.append(type(node).__name__))
    return names


def _assert_scoped(query: str) -> None:
    """Same expression, and every selector got the cluster matcher beside its own."""
    scoped = queries.scoped(query, CLUSTER)
    assert _shape(scoped) == _shape(query), scoped
    before, after = _selectors(query), _selectors(scoped)
    assert [(name, sorted([*matchers, CLUSTER])) for name, matchers in before] == after, scoped


SPAN, STEP = 14 * 86_400, 300
BUILDERS = {
    "cpu_stats": queries.cpu_stats(("shop",), span=SPAN, step=STEP, rate_window=600, quantiles=(0.5, 1.0)),
    "cpu_stats_recorded": queries.cpu_stats(("a", "b"), span=SPAN, step=STEP, rate_window=600,
                                            quantiles=(0.95,), recorded="node:cpu:rate"),
    "memory_stats": queries.memory_stats((), span=SPAN),
    "coverage": queries.coverage(("shop",), span=SPAN, coverage_step=3600),
    "scrape_interval": queries.scrape_interval(()),
    "oom_kills": queries.oom_kills(("shop",), span=SPAN),
    "requests": queries.requests_query(("shop",), span=SPAN),
    **{f"owners {index}": found for index, found in enumerate(queries.owner_series(()))},
    "cpu_values": queries.cpu_values(("shop",), ["web-1", "web-2"], rate_window=600),
}


class TestSelectorInEveryQuery:
    @pytest.mark.parametrize("name", sorted(BUILDERS))
    def test_every_query_a_build_asks_gets_the_matchers_on_every_selector(self, name: str) -> None:
        _assert_scoped(BUILDERS[name])

    @pytest.mark.parametrize(
        "query",
        [
            "up",
            "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total[5m]))",
            "sum(kube_pod_info) without (node) / on(namespace) group_left(owner) kube_namespace_labels",
            'label_replace(up{job="a{b}"}, "dst", "{x}", "src", "(.*)")',
            "max_over_time(node:cpu:rate5m[1h:5m] offset 1d)",
            "timestamp(-up) > bool 0 and on() vector(1)",
            "histogram_quantile(0.99, sum by (le) (rate(http_seconds_bucket[5m]))) # comment {x}",
            "topk(3, count_values(\"version\", build_info)) or absent(up)",
            "max_over_time(up[1h] @ end())",
            "sum(rate(up[5m])) BY (job) + Inf",
        ],
    )
    def test_hand_written_promql_with_bare_selectors_is_scoped_too(self, query: str) -> None:
        _assert_scoped(query)

    def test_no_selector_leaves_the_query_alone(self) -> None:
        assert queries.scoped("sum(up)", "") == "sum(up)"

    @settings(max_examples=300, deadline=None)
    @given(st.data())
    def test_any_expression_keeps_its_shape_and_every_selector_gets_the_matchers(
        self, data: st.DataObject
    ) -> None:
        _assert_scoped(data.draw(_expressions()))


_METRICS = st.sampled_from(["up", "kube_pod_info", "node:cpu:rate5m", "container_memory_working_set_bytes"])
_VALUES = st.text(alphabet="ab{},\"'`\\ .*", max_size=6).map(
    lambda v: v.replace("\\", "\\\\").replace('"', '\\"')
)


def _selector() -> st.SearchStrategy[str]:
    matcher = st.one_of(
        st.builds(lambda label, op, value: f'{label}{op}"{value}"',
                  st.sampled_from(["job", "le", "namespace"]), st.sampled_from(["=", "!="]), _VALUES),
        st.just('job=~"a{1,2}|b"'),
    )
    braced = st.builds(lambda name, ms: f"{name}{{{','.join(ms)}}}", _METRICS, st.lists(matcher, max_size=2))
    return st.one_of(_METRICS, braced)


def _expressions() -> st.SearchStrategy[str]:
    ranged = st.builds(lambda s, fn: f"{fn}({s}[5m])", _selector(),
                       st.sampled_from(["rate", "max_over_time", "count_over_time"]))

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.builds(lambda e, agg, by: f"{agg} {by} (namespace, pod) ({e})", inner,
                      st.sampled_from(["sum", "max", "count"]), st.sampled_from(["by", "without"])),
            st.builds(lambda e: f"sum({e}) by (job)", inner),
            st.builds(lambda a, b, op: f"{a} {op} {b}", inner, inner,
                      st.sampled_from(["+", "or", "and", "/ on(job) group_left(le)", "> bool"])),
            st.builds(lambda e: f'label_replace({e}, "stat", "q{{1}}", "", "")', inner),
            st.builds(lambda e: f"max_over_time(({e})[1h:5m])", inner),
            st.builds(lambda e: f"topk(2, {e})", inner),
            st.builds(lambda e: f"-({e})", inner),
            st.builds(lambda e: f"abs({e}) * 2", inner),
        )

    return st.recursive(st.one_of(_selector(), ranged), extend, max_leaves=6)
