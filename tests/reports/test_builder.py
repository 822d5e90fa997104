"""A workload's decision as an OpenReports Report: one result per container and rule, the webhook's numbers.

Every Report built here is checked against the upstream CRD's schema, closed to fields it does not name
(what the API server would prune silently fails here).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.report.fleet import container, namespace, recommendation, resources, workload
from webhook.config.policies import bundled_policies
from webhook.core.engine import decide
from webhook.core.model.profile import Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.admitted import as_created
from webhook.report.collect import from_manifests
from webhook.report.evaluate import evaluate
from webhook.report.openreports import RULES, build_report, report_name

from .kit import assert_valid_report

WEB = WorkloadKey("shop", "Deployment", "web")
UID = "0b6c1d2e-0000-4000-8000-000000000001"
OWNER = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": UID}


def cluster(mode: str = "dry-run") -> ClusterSnapshot:
    labels = namespace("shop", mode)["metadata"]["labels"]
    return ClusterSnapshot(policies=bundled_policies(), namespaces={"shop": labels}, server_version=(1, 33))


def report_for(obj: dict[str, Any], *, profiles: dict[str, Recommendation] | None = None,
               mode: str = "dry-run") -> dict[str, Any]:  # fmt: skip
    (item,) = from_manifests(json.dumps(obj), origin="test")
    snapshot = cluster(mode)
    row = evaluate(item, cluster=snapshot, profiles=ProfileSnapshot({WEB: profiles or {}}))
    policy = snapshot.policies.get(row.policy)
    built = build_report(row, owner={**OWNER, "kind": obj["kind"], "name": obj["metadata"]["name"]},
                         policy=policy)  # fmt: skip
    assert_valid_report(built)
    return built


def results(report: dict[str, Any], rule: str, name: str = "app") -> dict[str, Any]:
    (found,) = [r for r in report["results"] if r["rule"] == rule and r["properties"]["container"] == name]
    return dict(found)


class TestTheReportObject:
    def test_it_is_owned_by_the_workload_and_scoped_to_it(self) -> None:
        built = report_for(workload("Deployment", "web", container(port=8080)))
        assert built["metadata"]["name"] == "pod-tailor-deployment-web"
        assert built["metadata"]["ownerReferences"] == [OWNER]
        assert built["scope"] == {**OWNER, "namespace": "shop"}
        digest = built["metadata"]["annotations"]["pod-tailor.io/report-digest"]
        assert digest == report_for(workload("Deployment", "web", container(port=8080)))["metadata"][
            "annotations"]["pod-tailor.io/report-digest"], "the same decision, the same digest"  # fmt: skip
        other = report_for(workload("Deployment", "web", container(port=9090)))
        assert other["metadata"]["annotations"]["pod-tailor.io/report-digest"] != digest
        assert built["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pod-tailor"

    def test_one_result_per_container_and_rule_and_grace_once_with_a_true_summary(self) -> None:
        built = report_for(workload("Deployment", "web", container("app", port=8080), container("log")))
        per_container = [r for r in built["results"] if r["properties"]["container"]]
        assert sorted((r["properties"]["container"], r["rule"]) for r in per_container) == sorted(
            (name, rule) for name in ("app", "log") for rule in RULES if rule != "grace"
        )
        assert next(r["rule"] for r in built["results"] if not r["properties"]["container"]) == "grace"
        for state, count in built["summary"].items():
            assert count == sum(1 for r in built["results"] if r["result"] == state)
        assert {r["policy"] for r in built["results"]} == {"pod-tailor"}
        assert {r["source"] for r in built["results"]} == {"pod-tailor"}

    @pytest.mark.parametrize("length", [10, 200, 260])
    def test_names_stay_within_the_api_limit_and_distinct(self, length: int) -> None:
        one, other = report_name("Deployment", "a" * length), report_name("Deployment", "a" * length + "b")
        assert len(one) <= 253
        assert one != other


class TestRules:
    def test_requests_from_history_are_a_warning_with_the_webhooks_own_numbers(self) -> None:
        obj = workload("Deployment", "web", container(port=8080))
        built = report_for(obj, profiles={"app": recommendation("350m", "600Mi")})
        found = results(built, "requests")
        assert found["result"] == "warn"
        assert found["severity"] == "low"
        assert found["properties"]["recommended"] == "cpu=350m, memory=600Mi"
        assert "history" in found["properties"]["source"]
        assert "336h of history over 14d" in found["properties"]["evidence"]
        # One engine: what the webhook would inject into this workload's Pod.
        (item,) = from_manifests(json.dumps(obj), origin="test")
        known = ProfileSnapshot({WEB: {"app": recommendation("350m", "600Mi")}})
        _, decision = decide(as_created(item.pod), namespace="shop", cluster=cluster(), profiles=known)
        injected = {i.field: i.value for i in decision.injections if i.target == "app"}
        assert (injected["requests.cpu"], injected["requests.memory"]) == ("350m", "600Mi")

    def test_values_the_author_set_within_the_policy_pass(self) -> None:
        app = container(port=8080, resources=resources({"cpu": "200m", "memory": "256Mi"},
                                                          {"cpu": "1", "memory": "512Mi"}))  # fmt: skip
        built = report_for(workload("Deployment", "web", app))
        assert results(built, "requests")["result"] == "pass"
        assert results(built, "limits")["result"] == "pass"
        assert results(built, "requests")["properties"]["current"] == "cpu=200m, memory=256Mi"

    def test_a_request_above_the_policys_max_fails(self) -> None:
        app = container(port=8080, resources=resources({"cpu": "200", "memory": "256Mi"}))
        found = results(report_for(workload("Deployment", "web", app)), "requests")
        assert found["result"] == "fail"
        assert "above policy default's max" in found["message"]
        assert found["severity"] == "medium"

    def test_a_memory_limit_below_the_peak_history_saw_fails(self) -> None:
        import dataclasses

        seen = recommendation("200m", "700Mi")
        seen = dataclasses.replace(seen, evidence=dataclasses.replace(seen.evidence, memory_peak=600 * 2**20))
        app = container(port=8080, resources=resources({"cpu": "200m", "memory": "256Mi"},
                                                          {"memory": "300Mi"}))  # fmt: skip
        found = results(report_for(workload("Deployment", "web", app), profiles={"app": seen}), "limits")
        assert found["result"] == "fail"
        assert "below the 600Mi peak history saw" in found["message"]

    def test_probes_and_prestop_added_to_a_serving_container_are_warnings(self) -> None:
        built = report_for(workload("Deployment", "web", container(port=8080)))
        assert results(built, "probes")["result"] == "warn"
        assert "readinessProbe" in results(built, "probes")["message"]
        assert results(built, "preStop")["result"] == "warn"

    def test_a_container_without_a_port_skips_probes_and_prestop_with_the_reason(self) -> None:
        built = report_for(workload("Deployment", "web", container()))
        for rule in ("probes", "preStop"):
            assert results(built, rule)["result"] == "skip"
            assert "not a serving container" in results(built, rule)["message"]

    def test_boost_off_in_the_policy_is_a_skip_that_says_so(self) -> None:
        found = results(report_for(workload("Deployment", "web", container(port=8080))), "boost")
        assert (found["result"], found["message"]) == ("skip", "start-up boost is off in the policy")

    def test_a_pod_the_engine_leaves_alone_skips_every_rule_with_the_engines_reason(self) -> None:
        obj = workload("Deployment", "web", container(port=8080))
        obj["spec"]["template"]["metadata"]["labels"]["pod-tailor.io/skip"] = "true"
        built = report_for(obj)
        assert {r["result"] for r in built["results"]} == {"skip"}
        assert {r["message"] for r in built["results"]} == {"pod label pod-tailor.io/skip=true"}

    @pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "DaemonSet", "CronJob"])
    def test_every_workload_kind_gives_a_valid_report(self, kind: str) -> None:
        built = report_for(workload(kind, "web", container(port=8080)))
        assert built["scope"]["kind"] == kind
        assert built["summary"]["warn"] > 0


class TestProperties:
    @settings(max_examples=40, deadline=None)
    @given(
        containers=st.lists(
            st.tuples(st.booleans(), st.sampled_from([None, "50m", "200m", "200"]), st.booleans()),
            min_size=1, max_size=3,
        ),
        kind=st.sampled_from(["Deployment", "StatefulSet", "DaemonSet", "CronJob"]),
        mode=st.sampled_from(["dry-run", "enforce"]),
        skip=st.booleans(),
    )  # fmt: skip
    def test_every_report_is_valid_complete_and_summed(
        self, containers: list[tuple[bool, str | None, bool]], kind: str, mode: str, skip: bool
    ) -> None:
        bodies = [
            container(f"c{i}", port=8080 + i if port else None,
                      **({"resources": resources({"cpu": cpu}, {"memory": "64Mi"} if limit else None)}
                         if cpu else {}))
            for i, (port, cpu, limit) in enumerate(containers)
        ]  # fmt: skip
        obj = workload(kind, "web", *bodies)
        if skip:
            spec = obj["spec"]["jobTemplate"]["spec"] if kind == "CronJob" else obj["spec"]
            spec["template"]["metadata"]["labels"]["pod-tailor.io/skip"] = "true"
        built = report_for(obj, mode=mode)  # validated against the CRD schema, closed
        for name in (f"c{i}" for i in range(len(containers))):
            rules = sorted(r["rule"] for r in built["results"] if r["properties"]["container"] == name)
            assert rules == sorted(rule for rule in RULES if rule != "grace")
        assert sum(built["summary"].values()) == len(built["results"])
        for state, count in built["summary"].items():
            assert count == sum(1 for r in built["results"] if r["result"] == state)
        if skip:
            assert {r["result"] for r in built["results"]} == {"skip"}
