"""manifests/components/monitoring: alert rules that promtool accepts and whose unit tests pass, a dashboard
and rules whose every query names a metric the code really exports, and ServiceMonitor/PrometheusRule
objects checked field by field against prometheus-operator's documented API (monitoring.coreos.com/v1)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import promql_parser
import pytest
import yaml
from prometheus_client import REGISTRY, CollectorRegistry

import webhook.cluster.metrics  # noqa: F401 (registers the watch metrics in the process-wide registry)
from tests.tools import require_programs
from webhook.config.settings import Settings
from webhook.controllers.controller_metrics import ReportMetrics, ResizeMetrics
from webhook.profiles.buildmetrics import BuildMetrics
from webhook.refreshers.state import State
from webhook.server.app import create_app

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "manifests" / "components" / "monitoring"
RULES = MONITORING / "prometheusrule.yaml"
DASHBOARD = MONITORING / "dashboard.json"

# Metrics the rules or the dashboard read that pod-tailor does not export itself.
EXTERNAL = {
    "up": "Prometheus' own scrape health",
    "apiserver_admission_webhook_fail_open_count": "kube-apiserver (Kubernetes 1.24+)",
    "apiserver_admission_webhook_admission_duration_seconds_bucket": "kube-apiserver",
}
# Metrics proposed here that other tracks are adding; the lead empties this list as their work merges
# (the test below fails for a name that has become exported, so none stays here by accident).
PENDING: dict[str, str] = {}  # metrics an alert or panel reads before the code exports them: none now
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
    "unknown": ("",),
}


def _exported(registry: CollectorRegistry) -> set[str]:
    return {family.name + suffix for family in registry.collect() for suffix in _SUFFIXES[family.type]}


def exported_metrics() -> set[str]:
    """Every series name the webhook's /metrics and the recommender's, the resize controller's and the
    reports controller's --metrics-port can expose."""
    webhook = create_app(Settings(), State()).state.metrics.registry  # the app's every collector
    served = (BuildMetrics(interval=60).registry, ResizeMetrics().registry, ReportMetrics().registry)
    controllers = set().union(*(_exported(registry) for registry in served))
    return _exported(webhook) | _exported(REGISTRY) | controllers


def rule_objects() -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(RULES.read_text()) if doc]


def alert_rules() -> list[dict[str, Any]]:
    return [rule for obj in rule_objects() for group in obj["spec"]["groups"] for rule in group["rules"]]


def dashboard_panels() -> Iterator[dict[str, Any]]:
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        yield panel
        yield from panel.get("panels", ())


def queries() -> dict[str, str]:
    """Every PromQL text: alert name or dashboard panel title -> expression (Grafana's macros filled in)."""
    found = {f"alert {rule['alert']}": rule["expr"] for rule in alert_rules()}
    for panel in dashboard_panels():
        for target in panel.get("targets", ()):
            found[f"panel {panel['title']!r} {target['refId']}"] = (
                target["expr"].replace("$__rate_interval", "5m").replace("$__interval", "1m")
            )
    return found


def metric_names(expression: str) -> set[str]:
    names: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            names.add(node.name or "")

    promql_parser.walk(promql_parser.parse(expression), visit)
    return names


class TestEveryQueryReadsARealMetric:
    @pytest.mark.parametrize(("where", "expression"), sorted(queries().items()))
    def test_the_query_names_only_exported_external_or_pending_metrics(
        self, where: str, expression: str
    ) -> None:
        unknown = metric_names(expression) - exported_metrics() - EXTERNAL.keys() - PENDING.keys()
        assert not unknown, f"{where} reads {sorted(unknown)}: not exported by pod-tailor"

    def test_no_pending_metric_is_exported_yet(self) -> None:
        merged = PENDING.keys() & exported_metrics()
        assert not merged, f"now exported: remove {sorted(merged)} from PENDING"

    def test_every_pending_and_external_metric_is_still_read_somewhere(self) -> None:
        used = set().union(*(metric_names(e) for e in queries().values()))
        assert (PENDING.keys() | EXTERNAL.keys()) <= used

    def test_the_dashboard_shows_what_operators_asked_for(self) -> None:
        used = set().union(*(metric_names(e) for e in queries().values() if e))
        for metric in (
            "pod_tailor_admission_requests_total",
            "pod_tailor_admission_duration_seconds_bucket",
            "pod_tailor_verdict_cache_lookups_total",
            "pod_tailor_injections_total",
            "pod_tailor_snapshot_age_seconds",
            "pod_tailor_recommender_builds_total",
        ):
            assert metric in used, metric
        titles = {panel["title"] for panel in dashboard_panels()}
        assert {"Verdict cache hit rate", "Values injected by source", "Profile age"} <= titles

    def test_dashboard_panels_have_unique_ids_and_use_the_datasource_variable(self) -> None:
        panels = list(dashboard_panels())
        assert len({panel["id"] for panel in panels}) == len(panels)
        for panel in panels:
            for target in panel.get("targets", ()):
                assert target["datasource"]["uid"] == "${datasource}"


@pytest.fixture(scope="module")
def promtool() -> str:
    (found,) = require_programs("promtool", package="prometheus")
    return found


class TestPromtool:
    def test_promtool_accepts_the_rules_and_their_templates(self, promtool: str, tmp_path: Path) -> None:
        (obj,) = rule_objects()
        path = tmp_path / "rules.yaml"
        path.write_text(yaml.safe_dump({"groups": obj["spec"]["groups"]}))
        result = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout

    def test_every_alert_fires_on_its_failure_and_not_on_its_look_alike(
        self, promtool: str, tmp_path: Path
    ) -> None:
        (obj,) = rule_objects()
        groups = [
            {
                **group,
                "rules": [{k: v for k, v in rule.items() if k != "annotations"} for rule in group["rules"]],
            }
            for group in obj["spec"]["groups"]
        ]
        (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
        cases = Path(__file__).with_name("alerts_test.yaml")
        shutil.copy(cases, tmp_path / cases.name)
        result = subprocess.run(
            [promtool, "test", "rules", cases.name], capture_output=True, text=True, cwd=tmp_path
        )
        assert result.returncode == 0, result.stdout + result.stderr
        tested = set(re.findall(r"alertname: (\w+)", cases.read_text()))
        assert tested == {rule["alert"] for rule in alert_rules()}


# --- prometheus-operator's documented API (monitoring.coreos.com/v1), the fields pod-tailor may use ---
DURATION = re.compile(
    r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
)
Schema = dict[str, Any]
_KEY_REF: Schema = {"name": str, "key": str, "optional": bool}
_SECRET_OR_CONFIGMAP: Schema = {"secret": _KEY_REF, "configMap": _KEY_REF}
_TLS: Schema = {
    "ca": _SECRET_OR_CONFIGMAP,
    "cert": _SECRET_OR_CONFIGMAP,
    "keySecret": _KEY_REF,
    "caFile": str,
    "certFile": str,
    "keyFile": str,
    "serverName": str,
    "insecureSkipVerify": bool,
    "minVersion": str,
    "maxVersion": str,
}
_ENDPOINT: Schema = {
    "port": str,
    "targetPort": (int, str),
    "path": str,
    "scheme": {"http", "https"},
    "params": dict,
    "interval": DURATION,
    "scrapeTimeout": DURATION,
    "tlsConfig": _TLS,
    "honorLabels": bool,
    "honorTimestamps": bool,
    "metricRelabelings": list,
    "relabelings": list,
    "followRedirects": bool,
    "enableHttp2": bool,
    "filterRunning": bool,
    "proxyUrl": str,
    "authorization": dict,
    "basicAuth": dict,
    "oauth2": dict,
    "bearerTokenSecret": _KEY_REF,
}
_LABEL_SELECTOR: Schema = {"matchLabels": dict, "matchExpressions": list}
SERVICE_MONITOR: Schema = {
    "selector": _LABEL_SELECTOR,
    "endpoints": [_ENDPOINT],
    "namespaceSelector": {"any": bool, "matchNames": [str]},
    "jobLabel": str,
    "targetLabels": [str],
    "podTargetLabels": [str],
    "sampleLimit": int,
    "targetLimit": int,
    "labelLimit": int,
    "labelNameLengthLimit": int,
    "labelValueLengthLimit": int,
    "attachMetadata": dict,
    "keepDroppedTargets": int,
    "scrapeClass": str,
    "bodySizeLimit": str,
}
_RULE: Schema = {
    "alert": str,
    "record": str,
    "expr": (str, int),
    "for": DURATION,
    "keep_firing_for": DURATION,
    "labels": {str: str},
    "annotations": {str: str},
}
PROMETHEUS_RULE: Schema = {
    "groups": [
        {
            "name": str,
            "interval": DURATION,
            "rules": [_RULE],
            "limit": int,
            "query_offset": DURATION,
            "partial_response_strategy": {"abort", "warn"},
            "labels": {str: str},
        }
    ],
}
REQUIRED = {"ServiceMonitor": {"selector"}, "group": {"name", "rules"}, "rule": {"expr"}}


def conform(value: Any, schema: Any, where: str) -> None:
    """`value` as `schema` says: a type, a set of allowed strings, a pattern, [item schema], {str: type} or
    a field map (unknown fields refused, as the API server's structural schema prunes or rejects them)."""
    if isinstance(schema, re.Pattern):
        assert isinstance(value, str), f"{where}: {value!r} is not a string"
        assert schema.match(value), f"{where}: {value!r} is not a duration"
    elif isinstance(schema, set):
        assert value in schema, f"{where}: {value!r} not one of {sorted(schema)}"
    elif isinstance(schema, list):
        assert isinstance(value, list), f"{where}: a list"
        for i, item in enumerate(value):
            conform(item, schema[0], f"{where}[{i}]")
    elif isinstance(schema, dict) and list(schema) == [str]:
        assert isinstance(value, dict), f"{where}: an object"
        assert all(isinstance(v, str) for v in value.values()), f"{where}: strings"
    elif isinstance(schema, dict):
        assert isinstance(value, dict), f"{where}: an object"
        unknown = set(value) - set(schema)
        assert not unknown, f"{where}: fields not in the API: {sorted(unknown)}"
        for key, item in value.items():
            conform(item, schema[key], f"{where}.{key}")
    else:
        assert isinstance(value, schema), f"{where}: {value!r} is not {schema}"


def monitoring_objects() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(MONITORING.glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]


class TestPrometheusOperatorApi:
    @pytest.mark.parametrize(
        "obj", monitoring_objects(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}"
    )
    def test_every_field_is_one_the_api_documents(self, obj: dict[str, Any]) -> None:
        assert obj["apiVersion"] == "monitoring.coreos.com/v1"
        assert obj["metadata"]["namespace"] == "pod-tailor"
        schema = {"ServiceMonitor": SERVICE_MONITOR, "PrometheusRule": PROMETHEUS_RULE}[obj["kind"]]
        conform(obj["spec"], schema, obj["kind"])
        if obj["kind"] == "ServiceMonitor":
            assert REQUIRED["ServiceMonitor"] <= obj["spec"].keys()
            for endpoint in obj["spec"]["endpoints"]:
                assert ("port" in endpoint) != ("targetPort" in endpoint)
                interval, timeout = endpoint.get("interval", "30s"), endpoint.get("scrapeTimeout", "10s")
                assert _seconds(timeout) <= _seconds(interval)
        else:
            for group in obj["spec"]["groups"]:
                assert REQUIRED["group"] <= group.keys()
                for rule in group["rules"]:
                    assert REQUIRED["rule"] <= rule.keys()
                    assert ("alert" in rule) != ("record" in rule), rule
                    assert rule["labels"]["severity"] in {"info", "warning", "critical"}
                    assert rule["annotations"]["runbook_url"].endswith("#" + rule["alert"].lower())

    def test_a_wrong_field_is_caught_by_the_check(self) -> None:
        (monitor, *_) = [o for o in monitoring_objects() if o["kind"] == "ServiceMonitor"]
        broken = {**monitor["spec"], "endpoints": [{**monitor["spec"]["endpoints"][0], "scheme": "HTTPS"}]}
        with pytest.raises(AssertionError, match="not one of"):
            conform(broken, SERVICE_MONITOR, "ServiceMonitor")
        with pytest.raises(AssertionError, match="fields not in the API"):
            conform({**monitor["spec"], "endpoint": []}, SERVICE_MONITOR, "ServiceMonitor")

    def test_every_runbook_link_has_a_section_in_the_operations_guide(self) -> None:
        guide = (ROOT / "docs" / "operations.md").read_text().lower()
        for rule in alert_rules():
            assert f"### {rule['alert'].lower()}" in guide, rule["alert"]


def _seconds(text: str) -> int:
    units = {"h": 3600, "m": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([hms])", text))
