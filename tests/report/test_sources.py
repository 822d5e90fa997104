"""Where each recommended value comes from, read from the engine's own answer."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.autoscalers.kit import hpa, vpa
from tests.report.fleet import container, recommendation, resources, workload
from tests.reviews import admission_review
from webhook.config.policies import bundled_policies
from webhook.core.model.autoscalers import Ignored, index_autoscalers, parse_autoscaler
from webhook.core.model.decision import Basis, Injection
from webhook.core.model.limitrange import LimitRangeItem, limit_range_items
from webhook.core.model.pod import LIMIT_RANGER_ANNOTATION, limit_ranger_marks
from webhook.core.model.profile import NoRecommendation
from webhook.core.model.quantity import parse
from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot, ProfileSnapshot
from webhook.offline.admitted import as_created, limit_range_defaults
from webhook.report.collect import Collected, from_manifests
from webhook.report.evaluate import evaluate, origin_of
from webhook.report.model import ContainerReport, WorkloadReport

WEB = WorkloadKey("shop", "Deployment", "web")


def _limit_range(*items: dict[str, Any]) -> tuple[LimitRangeItem, ...]:
    return limit_range_items({"spec": {"limits": list(items)}})


def _one(
    obj: dict[str, Any],
    *,
    profiles: ProfileSnapshot = EMPTY_PROFILES,
    limit_ranges: tuple[LimitRangeItem, ...] = (),
) -> WorkloadReport:
    (item,) = from_manifests(yaml.safe_dump(obj), origin="test")
    cluster = ClusterSnapshot(policies=bundled_policies(), limit_ranges={"shop": limit_ranges})
    return evaluate(item, cluster=cluster, profiles=profiles)


def _app(report: WorkloadReport) -> ContainerReport:
    return report.containers[0]


class TestOrigins:
    def test_a_confident_profile_is_history_with_its_evidence(self) -> None:
        profiles = ProfileSnapshot({WEB: {"app": recommendation("350m", "600Mi")}})
        app = _app(_one(workload("Deployment", "web", container("app", port=80)), profiles=profiles))
        origin = app.sources["requests.cpu"]
        assert (origin.kind, origin.confidence, origin.samples, origin.hours, origin.window) == (
            "history",
            0.93,
            4032,
            336.0,
            "14d",
        )
        assert app.value("recommended", "requests.cpu") == parse("350m")
        assert app.profile == profiles.profiles[WEB]["app"]

    @pytest.mark.parametrize(
        ("profile", "reason"),
        [
            (recommendation("350m", "600Mi", confidence=0.3), "profile confidence 0.30 < 0.5"),
            (NoRecommendation("only 2.0h and 24 samples of history"), "no profile: only 2.0h"),
        ],
    )
    def test_a_thin_profile_falls_back_to_the_policy_and_says_why(self, profile: Any, reason: str) -> None:
        profiles = ProfileSnapshot({WEB: {"app": profile}})
        origin = _app(_one(workload("Deployment", "web", container("app")), profiles=profiles)).sources[
            "requests.cpu"
        ]
        assert origin.kind == "policy"
        assert reason in origin.detail

    def test_values_the_author_set_stay_the_authors(self) -> None:
        body = container("app", resources=resources({"cpu": "1", "memory": "1Gi"}, {"memory": "1Gi"}))
        app = _app(_one(workload("Deployment", "web", body)))
        assert {key: o.kind for key, o in app.sources.items()} == {
            "requests.cpu": "author",
            "requests.memory": "author",
            "limits.memory": "author",
        }
        assert app.current == app.recommended

    def test_a_value_bounded_by_the_limitrange_says_so(self) -> None:
        bounded = _limit_range({"type": "Container", "min": {"cpu": "300m"}})
        app = _app(_one(workload("Deployment", "web", container("app")), limit_ranges=bounded))
        # LimitRanger fills the missing request with min (the API server's defaulting) before pod-tailor.
        assert app.sources["requests.cpu"].kind == "limitrange"
        assert app.value("recommended", "requests.cpu") == parse("300m")

    def test_a_value_lowered_to_the_limitrange_max_is_limitrange(self) -> None:
        profiles = ProfileSnapshot({WEB: {"app": recommendation("3", "600Mi")}})
        bounded = _limit_range(
            {
                "type": "Container",
                "max": {"cpu": "2"},
                "default": {"cpu": "2"},
                "defaultRequest": {"cpu": "100m"},
            }
        )
        app = _app(
            _one(workload("Deployment", "web", container("app")), profiles=profiles, limit_ranges=bounded)
        )
        assert app.value("recommended", "requests.cpu") == parse("2")
        assert app.sources["requests.cpu"].kind == "limitrange"
        assert "lowered to LimitRange max" in app.sources["requests.cpu"].detail

    def test_a_skipped_pod_leaves_its_missing_requests_unset_with_the_reason(self) -> None:
        obj = workload("Deployment", "web", container("app"))
        obj["spec"]["template"]["metadata"]["labels"]["pod-tailor.io/skip"] = "true"
        report = _one(obj)
        assert report.skipped
        assert not report.changed
        assert _app(report).sources["requests.cpu"].kind == "unset"
        assert "skip" in _app(report).sources["requests.cpu"].detail

    @pytest.mark.parametrize(
        ("basis", "kind"),
        [
            (Basis.HISTORY, "history"),
            (Basis.POLICY, "policy"),
            (Basis.LIMIT_RANGE, "limitrange"),
            (Basis.HELD, "held"),
        ],
    )
    def test_the_engines_basis_names_the_origin(self, basis: Basis, kind: str) -> None:
        origin = origin_of(Injection("app", "requests.cpu", "250m", "the engine's words", basis), None)
        assert (origin.kind, origin.detail) == (kind, "the engine's words")


class TestValuesAnAutoscalerOwns:
    """The report reads the engine's basis and notes, never its wording."""

    def _with(self, *objects: dict[str, Any]) -> WorkloadReport:
        (item,) = from_manifests(
            yaml.safe_dump(workload("Deployment", "web", container("app"))), origin="test"
        )
        found = []
        for obj in objects:
            scaler, _ = parse_autoscaler(obj)
            assert not isinstance(scaler, Ignored)
            found.append(("shop", scaler))
        cluster = ClusterSnapshot(policies=bundled_policies(), autoscalers=index_autoscalers(found))
        profiles = ProfileSnapshot({WEB: {"app": recommendation("350m", "600Mi")}})
        return evaluate(item, cluster=cluster, profiles=profiles)

    def test_a_request_an_hpa_scales_on_is_held_and_the_other_resource_is_history(self) -> None:
        sources = _app(self._with(hpa())).sources
        assert sources["requests.cpu"].kind == "held"
        assert "hpa web scales on cpu utilization 70" in sources["requests.cpu"].detail
        assert sources["requests.memory"].kind == "history"

    def test_resources_left_to_a_vpa_are_held_with_the_vpa_named(self) -> None:
        sources = _app(self._with(vpa(mode="Auto"))).sources
        assert sources["requests.cpu"].kind == sources["requests.memory"].kind == "held"
        assert "left to vpa web" in sources["requests.cpu"].detail


class TestTheApiServersStepsBeforeTheWebhook:
    def test_limitranger_defaults_are_filled_and_named_as_limitranger_names_them(self) -> None:
        pod: dict[str, Any] = {
            "metadata": {},
            "spec": {
                "initContainers": [{"name": "init"}],
                "containers": [{"name": "app", "resources": {"requests": {"memory": "64Mi"}}}],
            },
        }
        items = _limit_range(
            {
                "type": "Container",
                "default": {"cpu": "1", "memory": "512Mi"},
                "defaultRequest": {"cpu": "250m"},
            }
        )
        created = as_created(pod, limit_ranges=items)
        app = created["spec"]["containers"][0]["resources"]
        assert app == {
            "requests": {"memory": "64Mi", "cpu": "250m"},
            "limits": {"cpu": "1", "memory": "512Mi"},
        }
        assert limit_ranger_marks(created) == {
            ("app", "request", "cpu"),
            ("app", "limit", "cpu"),
            ("app", "limit", "memory"),
            ("init", "request", "cpu"),
            ("init", "request", "memory"),
            ("init", "limit", "cpu"),
            ("init", "limit", "memory"),
        }
        assert created["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION].startswith(
            "LimitRanger plugin set: "
        )
        assert pod["spec"]["containers"][0]["resources"] == {"requests": {"memory": "64Mi"}}  # not changed

    def test_it_is_idempotent(self) -> None:
        pod = {
            "metadata": {},
            "spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "2"}}}]},
        }
        items = _limit_range({"type": "Container", "defaultRequest": {"memory": "128Mi"}})
        once = as_created(pod, limit_ranges=items)
        assert as_created(once, limit_ranges=items)["spec"] == once["spec"]
        assert once["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "2", "memory": "128Mi"}

    @pytest.mark.parametrize(
        ("item", "requests", "limits"),
        [
            ({"max": {"cpu": "2"}}, {"cpu": "2"}, {"cpu": "2"}),  # default from max, request from default
            ({"min": {"memory": "64Mi"}}, {"memory": "64Mi"}, {}),  # request from min
            ({"default": {"cpu": "1"}, "defaultRequest": {"cpu": "100m"}}, {"cpu": "100m"}, {"cpu": "1"}),
            ({"type": "Pod", "max": {"cpu": "4"}}, {}, {}),  # Pod items set no container defaults
        ],
    )
    def test_limitrange_items_are_defaulted_as_the_api_server_stores_them(
        self, item: dict[str, Any], requests: dict[str, str], limits: dict[str, str]
    ) -> None:
        found = limit_range_defaults(_limit_range({"type": "Container", **item}))
        assert found == ({k: parse(v) for k, v in requests.items()}, {k: parse(v) for k, v in limits.items()})

    def test_a_malformed_pod_is_left_for_the_engine_to_name(self) -> None:
        pod: dict[str, Any] = {"metadata": {}, "spec": {"containers": "nope"}}
        assert as_created(copy.deepcopy(pod)) == pod


def test_a_review_is_reported_under_the_workload_its_pod_belongs_to() -> None:
    pod: dict[str, Any] = {
        "metadata": {
            "generateName": "web-7d4b9c8f6-",
            "labels": {"pod-template-hash": "7d4b9c8f6"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7d4b9c8f6", "controller": True}],
        },
        "spec": {"containers": [container("app")]},
    }
    review = admission_review(pod, uid="1", namespace="shop")
    (item,) = from_manifests(yaml.safe_dump(review), origin="review.json")
    assert isinstance(item, Collected)
    assert (item.kind, item.namespace, item.name, item.replicas) == ("Deployment", "shop", "web", 1)
