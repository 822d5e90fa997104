"""Whether Prometheus' answers come gzipped: plain where bytes are cheap (this host, the cluster), where
compressing would cost Prometheus several times the CPU of sending; gzipped across other networks."""

from __future__ import annotations

import pytest
import scenarios
from conftest import History, test_settings

from webhook.config.settings import PROMETHEUS_FIELDS, SettingsError, load_settings
from webhook.profiles.build import build_profiles
from webhook.profiles.connection import ConnectionSettingsError, PrometheusConnection
from webhook.profiles.store import encode_document


class TestAuto:
    @pytest.mark.parametrize(
        ("url", "compressed"),
        [
            ("http://127.0.0.1:9090", False),
            ("https://[::1]:9090", False),
            ("http://localhost:9090", False),
            ("http://10.96.0.12:9090", False),
            ("http://192.168.1.5:9090", False),
            ("http://prometheus:9090", False),
            ("http://prometheus-k8s.monitoring.svc:9090", False),
            ("http://prometheus-k8s.monitoring.svc.cluster.local:9090", False),
            ("http://prometheus-k8s.monitoring.svc.cluster.local.:9090", False),
            ("http://prometheus-k8s.monitoring:9090", True),
            ("https://prometheus.example.com", True),
            ("https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1", True),
            ("https://8.8.8.8", True),
        ],
    )
    def test_plain_on_this_host_and_in_the_cluster_gzipped_elsewhere(
        self, url: str, compressed: bool
    ) -> None:
        assert PrometheusConnection(url).compressed is compressed

    @pytest.mark.parametrize(("setting", "compressed"), [("gzip", True), ("none", False)])
    def test_an_explicit_setting_wins_over_the_address(self, setting: str, compressed: bool) -> None:
        for url in ("http://127.0.0.1:9090", "https://prometheus.example.com"):
            assert PrometheusConnection(url, compression=setting).compressed is compressed

    def test_an_accept_encoding_header_wins_over_the_setting(self) -> None:
        connection = PrometheusConnection("http://127.0.0.1:9090", headers=(("Accept-Encoding", "gzip"),))
        with connection.client() as client:
            assert client.headers["accept-encoding"] == "gzip"

    def test_a_wrong_value_is_refused_naming_the_option_and_the_variable(self) -> None:
        with pytest.raises(ConnectionSettingsError, match="--prometheus-compression 'zstd': use auto"):
            PrometheusConnection("http://127.0.0.1:9090", compression="zstd")
        with pytest.raises(SettingsError, match="POD_TAILOR_PROMETHEUS_COMPRESSION: 'zstd': use auto"):
            load_settings({}, env={"POD_TAILOR_PROMETHEUS_COMPRESSION": "zstd"}, only=PROMETHEUS_FIELDS)

    def test_the_variable_sets_it(self) -> None:
        env = {"POD_TAILOR_PROMETHEUS_URL": "http://127.0.0.1:9090",
               "POD_TAILOR_PROMETHEUS_COMPRESSION": "gzip"}
        connection = load_settings({}, env=env, only=PROMETHEUS_FIELDS).prometheus()
        assert connection is not None
        assert connection.compressed


class TestAgainstPrometheus:
    @pytest.mark.parametrize(("setting", "encoding"), [("auto", None), ("none", None), ("gzip", "gzip")])
    def test_prometheus_answers_as_asked(self, history: History, setting: str, encoding: str | None) -> None:
        connection = PrometheusConnection(history.prometheus.url, compression=setting)
        with connection.client() as client:
            answer = client.post(f"{history.prometheus.url}/api/v1/query", data={"query": "up"})
        assert answer.headers.get("content-encoding") == encoding
        assert answer.json()["status"] == "success"

    def test_plain_and_gzipped_answers_build_the_same_profiles(self, history: History) -> None:
        built = {}
        for setting in ("none", "gzip"):
            prom = PrometheusConnection(history.prometheus.url, compression=setting).open()
            try:
                result = build_profiles(prom, test_settings(namespaces=("shop",)), end=scenarios.END)
            finally:
                prom.close()
            built[setting] = encode_document(result.document)["workloads"]
        assert built["none"] == built["gzip"]
        assert built["none"]
