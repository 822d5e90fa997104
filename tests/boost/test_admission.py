"""The start-up boost at admission: which containers start with more CPU, how much, and what is recorded."""

from __future__ import annotations

import copy
import dataclasses
from decimal import Decimal
from typing import Any

import jsonpatch
import kubernetes_validate
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.autoscalers.kit import facts as hpa_facts
from tests.autoscalers.kit import hpa, recommendation
from tests.engine.podkit import container, first, pod, policy, run
from webhook.core.boost.record import BOOST_ANNOTATION, BOOSTED_LABEL, read_record
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.qos import qos_class

BOOST = policy("startupBoost: {enabled: true}", name="boost")
FACTOR = policy("startupBoost: {enabled: true, source: factor, factor: 3, max: '1'}", name="factor")
JVM = {"app": recommendation("0.25", startup_cpu=Decimal("1.4"), startup_seconds=90.0)}
V133 = ClusterFacts(server_version=(1, 33))


def boosted(subject: dict[str, Any] | None = None, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    decision, result = run(subject or pod(), **{"using": BOOST, "profiles": JVM, "facts": V133, **kwargs})
    kubernetes_validate.validate(result, kubernetes_validate.latest_version(), strict=True)
    return decision, result


class TestABoostedContainer:
    def test_starts_with_its_start_up_peak_and_the_record_to_return_to(self) -> None:
        decision, result = boosted()
        app = first(result)
        assert app["resources"]["requests"]["cpu"] == "1400m"
        assert app["resizePolicy"] == [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]
        assert result["metadata"]["labels"][BOOSTED_LABEL] == "true"
        record = read_record(result["metadata"]["annotations"])
        assert record is not None
        assert [(s.container, s.request, s.limit, s.boosted) for s in record.containers] == [
            ("app", "250m", None, "1400m")
        ]
        assert (record.until, record.extra_seconds, record.max_seconds) == ("ready", 30, 600)
        (said,) = [i for i in decision.injections if i.field == "startupBoost"]
        assert said.describe() == (
            "startupBoost=cpu 250m -> 1400m until Ready (start-up peak 1.4 cores over 90s in 14d history)"
        )
        assert "startupBoost=cpu 250m -> 1400m" in result["metadata"]["annotations"]["pod-tailor.io/injected"]

    def test_a_limit_keeps_its_ratio_and_the_qos_class_stays(self) -> None:
        subject = pod(
            container(requests={"cpu": "250m", "memory": "256Mi"}, limits={"cpu": "500m", "memory": "256Mi"})
        )
        decision, result = boosted(subject)
        resources = first(result)["resources"]
        assert (resources["requests"]["cpu"], resources["limits"]["cpu"]) == ("1400m", "2800m")
        assert "limit 500m -> 2800m, same ratio" in next(
            i.source for i in decision.injections if i.field == "startupBoost"
        )

    def test_a_guaranteed_pod_is_boosted_request_and_limit_together(self) -> None:
        values = {"cpu": "250m", "memory": "256Mi"}
        _, result = boosted(pod(container(requests=values, limits=values)))
        resources = first(result)["resources"]
        assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == "1400m"
        assert qos_class(result, ()) == "Guaranteed"

    @pytest.mark.parametrize(
        ("using", "limit_ranges", "expected", "said"),
        [
            (
                policy("startupBoost: {enabled: true, max: 800m}", name="capped"),
                (),
                "800m",
                "capped at max 800m",
            ),
            (BOOST, (LimitRangeItem("Container", max={"cpu": Decimal("1")}),), "1", "LimitRange max 1"),
            (FACTOR, (), "750m", "3 x request"),
        ],
        ids=["policy-max", "limitrange-max", "factor"],
    )
    def test_the_boost_is_capped(self, using: Any, limit_ranges: Any, expected: str, said: str) -> None:
        decision, result = boosted(
            using=using, facts=ClusterFacts(server_version=(1, 33), limit_ranges=limit_ranges)
        )
        assert first(result)["resources"]["requests"]["cpu"] == expected
        assert said in next(i.source for i in decision.injections if i.field == "startupBoost")


class TestNoBoost:
    @pytest.mark.parametrize(
        ("version", "note"),
        [
            ((1, 32), "in-place resize needs Kubernetes 1.33+ (cluster 1.32)"),
            (None, "in-place resize needs Kubernetes 1.33+ (cluster version unknown)"),
        ],
    )
    def test_before_in_place_resize_it_says_so(self, version: tuple[int, int] | None, note: str) -> None:
        decision, result = boosted(facts=ClusterFacts(server_version=version))
        assert first(result)["resources"]["requests"]["cpu"] == "250m"
        assert f"pod: no start-up boost: {note}" in [str(found) for found in decision.notes]
        assert BOOSTED_LABEL not in result["metadata"].get("labels", {})

    @pytest.mark.parametrize(
        ("subject", "profiles", "using"),
        [
            (pod(os={"name": "windows"}), JVM, BOOST),
            (
                pod(),
                {"app": recommendation("0.25", startup_cpu=Decimal("0.2"))},
                BOOST,
            ),  # peak below the request
            (pod(), {"app": recommendation("0.25")}, BOOST),  # no start-up seen
            (pod(), JVM, policy("")),  # off by default
            (
                pod(restart="Never", owner=("Job", "backup")),
                JVM,
                BOOST,
            ),  # batch: nothing to give back at Ready
        ],
        ids=["windows", "peak-below-request", "no-peak", "off", "job"],
    )
    def test_nothing_is_boosted(self, subject: dict[str, Any], profiles: Any, using: Any) -> None:
        decision, result = run(subject, using=using, profiles=profiles, facts=V133)
        assert not [i for i in decision.injections if i.field == "startupBoost"]
        assert BOOST_ANNOTATION not in result["metadata"].get("annotations", {})

    def test_a_container_that_restarts_on_cpu_resize_is_not_boosted(self) -> None:
        restart = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]
        decision, _ = boosted(pod(container(resizePolicy=restart)))
        assert "app: no start-up boost: cpu resizePolicy RestartContainer" in " ".join(
            map(str, decision.notes)
        )

    def test_cpu_an_hpa_scales_on_by_utilization_is_boosted_only_when_the_policy_says_so(self) -> None:
        around = dataclasses.replace(hpa_facts(hpa()), server_version=(1, 33))
        decision, _ = boosted(facts=around)
        assert not [i for i in decision.injections if i.field == "startupBoost"]
        assert any("startupBoost.hpaUtilization is off" in str(note) for note in decision.notes)
        allowed = policy("startupBoost: {enabled: true, hpaUtilization: true}", name="hpa")
        decision, _ = boosted(facts=around, using=allowed)
        assert [i for i in decision.injections if i.field == "startupBoost"]


class TestOnReinvocation:
    def test_a_boosted_pod_gets_an_empty_patch(self) -> None:
        _, result = boosted()
        again = tailor(result, policy=BOOST, profiles=JVM, facts=V133)
        assert again.ops == ()

    @settings(max_examples=150, deadline=None)
    @given(
        steady=st.integers(min_value=10, max_value=4000),
        peak=st.integers(min_value=10, max_value=8000),
        ratio=st.sampled_from([None, 1, 2, 4]),
        guaranteed=st.booleans(),
    )
    def test_the_qos_class_never_changes_and_the_request_never_falls(
        self, steady: int, peak: int, ratio: int | None, guaranteed: bool
    ) -> None:
        requests = {"cpu": f"{steady}m", "memory": "128Mi"}
        limits = (
            None
            if ratio is None
            else {"cpu": f"{steady * ratio}m", "memory": "128Mi" if guaranteed else "256Mi"}
        )
        subject = pod(container(requests=requests, limits=limits))
        profiles = {"app": recommendation("0.1", startup_cpu=Decimal(peak) / 1000, startup_seconds=60.0)}
        decision = tailor(subject, policy=BOOST, profiles=profiles, facts=V133)
        result = jsonpatch.apply_patch(copy.deepcopy(subject), list(decision.ops))
        assert qos_class(result, ()) == qos_class(subject, ())
        after = first(result)["resources"]["requests"]["cpu"]
        assert (
            Decimal(after.removesuffix("m")) / (1000 if after.endswith("m") else 1) >= Decimal(steady) / 1000
        )
        assert tailor(result, policy=BOOST, profiles=profiles, facts=V133).ops == ()
