"""Requests and limits: filled from a confident profile or the policy, never over a person's values."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.engine.podkit import GUESSED_LIMITS, container, first, pod, policy, run
from webhook.core.facts import ClusterFacts, LimitRangeItem
from webhook.core.pod import INJECTED_ANNOTATION, LIMIT_RANGER_ANNOTATION
from webhook.core.profile import Evidence, NoRecommendation, Recommendation

MiB = 2**20


def recommendation(
    cpu: str = "0.25", memory: int = 300 * MiB, *, confidence: float = 0.9, **extra: Any
) -> Recommendation:
    evidence = Evidence(
        window="14d", samples=4032, hours=336, cpu_percentile=95, memory_margin=0.15, confidence=confidence
    )
    return Recommendation(cpu=Decimal(cpu), memory=Decimal(memory), evidence=evidence, **extra)


class TestMissingValuesAreFilled:
    @pytest.mark.parametrize(
        ("requests", "limits", "expected_requests", "expected_limits"),
        [
            pytest.param(
                None, None, {"cpu": "100m", "memory": "256Mi"}, {}, id="nothing set: no limit from a guess"
            ),
            pytest.param(
                {"cpu": "1", "memory": "1Gi"},
                None,
                {"cpu": "1", "memory": "1Gi"},
                {},
                id="requests only: no limit without history",
            ),
            pytest.param(
                {"cpu": "200m", "memory": "64Mi"},
                {"cpu": "200m", "memory": "64Mi"},
                {"cpu": "200m", "memory": "64Mi"},
                {"cpu": "200m", "memory": "64Mi"},
                id="only limits written, requests copied by defaulting",
            ),
            pytest.param(
                {"memory": "100Mi"},
                None,
                {"cpu": "100m", "memory": "100Mi"},
                {},
                id="cpu missing",
            ),
        ],
    )
    def test_a_container_ends_with_the_policy_defaults_where_nothing_was_set(
        self,
        requests: dict[str, str] | None,
        limits: dict[str, str] | None,
        expected_requests: dict[str, str],
        expected_limits: dict[str, str],
    ) -> None:
        _, result = run(pod(container(requests=requests, limits=limits)))
        resources = first(result)["resources"]
        assert resources.get("requests") == expected_requests
        assert resources.get("limits", {}) == expected_limits

    def test_the_default_policy_sets_no_cpu_limit_to_avoid_start_up_throttling(self) -> None:
        _, result = run(pod(container()), using=GUESSED_LIMITS)
        assert "cpu" not in first(result)["resources"]["limits"]

    @pytest.mark.parametrize(
        ("mode", "ratio", "expected"),
        [("equal", 2, {"cpu": "100m", "memory": "256Mi"}), ("ratio", 3, {"cpu": "300m", "memory": "768Mi"})],
    )
    def test_limit_modes_derive_the_limit_from_the_request(
        self, mode: str, ratio: int, expected: dict[str, str]
    ) -> None:
        custom = policy(
            f"resources:\n  cpu: {{limit: {mode}, limitRatio: {ratio}, limitWithoutHistory: true}}\n"
            f"  memory: {{limit: {mode}, limitRatio: {ratio}, limitWithoutHistory: true}}"
        )
        _, result = run(pod(container()), using=custom)
        assert first(result)["resources"]["limits"] == expected

    def test_ephemeral_storage_is_managed_only_when_the_policy_names_it(self) -> None:
        custom = policy(
            "resources:\n"
            "  ephemeral-storage: {request: 1Gi, min: 1Mi, max: 100Gi, limit: ratio, limitRatio: 4,"
            " limitWithoutHistory: true}"
        )
        _, plain = run(pod(container()))
        _, with_storage = run(pod(container()), using=custom)
        assert "ephemeral-storage" not in plain["spec"]["containers"][0]["resources"]["requests"]
        assert first(with_storage)["resources"]["requests"]["ephemeral-storage"] == "1Gi"
        assert first(with_storage)["resources"]["limits"]["ephemeral-storage"] == "4Gi"


class TestEveryKindOfContainer:
    def test_init_containers_and_native_sidecars_get_requests(self) -> None:
        init = [container("setup", ports=()), container("proxy", ports=(15001,), restartPolicy="Always")]
        _, result = run(pod(container(), init=init))
        for body in result["spec"]["initContainers"]:
            assert body["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}

    def test_ephemeral_containers_are_never_touched(self) -> None:
        debug = {"name": "debug", "image": "busybox", "terminationMessagePolicy": "File"}
        subject = pod(container(), ephemeralContainers=[debug])
        _, result = run(subject)
        assert result["spec"]["ephemeralContainers"] == [debug]

    def test_a_container_without_a_resources_key_gets_one_whole_object(self) -> None:
        body = container()
        del body["resources"]
        decision, result = run(pod(body))
        assert any(op["path"] == "/spec/containers/0/resources" and op["op"] == "add" for op in decision.ops)
        assert first(result)["resources"]["requests"]["cpu"] == "100m"


class TestProfiles:
    def test_a_confident_profile_sizes_the_requests_and_is_explained(self) -> None:
        _, result = run(pod(container()), profiles={"app": recommendation()})
        assert first(result)["resources"]["requests"] == {"cpu": "250m", "memory": "300Mi"}
        assert first(result)["resources"]["limits"] == {"memory": "600Mi"}
        text = result["metadata"]["annotations"][INJECTED_ANNOTATION]
        assert "requests.cpu=250m (profile: p95 usage over 14d, 4032 samples, 336h)" in text
        assert "requests.memory=300Mi (profile: peak +15% over 14d" in text

    @pytest.mark.parametrize(
        ("profile", "reason"),
        [
            (recommendation(confidence=0.2), "profile confidence 0.20 < 0.5"),
            (NoRecommendation("only 2h of history, need 24h"), "no profile: only 2h of history, need 24h"),
        ],
    )
    def test_a_weak_or_missing_profile_falls_back_to_the_policy_and_says_why(
        self, profile: Any, reason: str
    ) -> None:
        _, result = run(pod(container()), profiles={"app": profile})
        assert first(result)["resources"]["requests"]["cpu"] == "100m"
        assert reason in result["metadata"]["annotations"][INJECTED_ANNOTATION]

    def test_profiles_are_ignored_when_the_policy_turns_them_off(self) -> None:
        _, result = run(
            pod(container()), using=policy("profiles: {use: false}"), profiles={"app": recommendation()}
        )
        assert first(result)["resources"]["requests"]["cpu"] == "100m"

    @pytest.mark.parametrize(
        ("cpu", "memory", "expected_cpu", "expected_memory"),
        [
            ("0.001", 1 * MiB, "10m", "16Mi"),  # raised to the policy min
            ("64", 200 * 2**30, "16", "64Gi"),  # lowered to the policy max
            ("0.2501", 300 * MiB + 1, "251m", "314572801"),  # rounded up, written canonically
        ],
    )
    def test_profile_values_are_bounded_by_the_policy_and_rounded_up(
        self, cpu: str, memory: int, expected_cpu: str, expected_memory: str
    ) -> None:
        _, result = run(pod(container()), profiles={"app": recommendation(cpu, memory)})
        assert first(result)["resources"]["requests"] == {"cpu": expected_cpu, "memory": expected_memory}

    def test_a_start_up_cpu_peak_raises_a_cpu_limit_so_start_up_is_not_throttled(self) -> None:
        custom = policy("resources:\n  cpu: {limit: ratio, limitRatio: 2}")
        profile = recommendation("0.2", startup_cpu=Decimal("1.5"), startup_seconds=40)
        _, result = run(pod(container()), using=custom, profiles={"app": profile})
        assert first(result)["resources"]["limits"]["cpu"] == "1500m"
        assert "start-up CPU peak" in result["metadata"]["annotations"][INJECTED_ANNOTATION]


class TestLimitRangerValues:
    def _limit_ranged(self) -> dict[str, Any]:
        body = container(requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "2", "memory": "2Gi"})
        marks = (
            "LimitRanger plugin set: cpu, memory request for container app;"
            " cpu, memory limit for container app"
        )
        return pod(body, annotations={LIMIT_RANGER_ANNOTATION: marks})

    @pytest.mark.parametrize(
        ("mode", "with_profile", "expected_cpu_request"),
        [
            ("keep", True, "500m"),
            ("replace-with-profile", False, "500m"),
            ("replace-with-profile", True, "250m"),
            ("replace", False, "100m"),
        ],
    )
    def test_values_limit_ranger_filled_in_are_replaced_only_as_the_policy_says(
        self, mode: str, with_profile: bool, expected_cpu_request: str
    ) -> None:
        profiles = {"app": recommendation()} if with_profile else {}
        _, result = run(self._limit_ranged(), using=policy(f"limitRanger: {mode}"), profiles=profiles)
        assert first(result)["resources"]["requests"]["cpu"] == expected_cpu_request

    def test_a_cpu_limit_limit_ranger_set_is_kept_when_the_policy_wants_none(self) -> None:
        _, result = run(self._limit_ranged(), profiles={"app": recommendation()})
        assert first(result)["resources"]["limits"]["cpu"] == "2"
        assert first(result)["resources"]["limits"]["memory"] == "600Mi"

    def test_values_a_person_set_are_never_replaced_even_with_a_profile(self) -> None:
        body = container(requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "2", "memory": "2Gi"})
        decision, _ = run(pod(body), using=policy("limitRanger: replace"), profiles={"app": recommendation()})
        assert not any("/resources" in op["path"] for op in decision.ops)

    def test_a_replaced_request_is_capped_at_a_limit_that_stays(self) -> None:
        body = container(requests={"cpu": "100m", "memory": "1Gi"}, limits={"cpu": "200m", "memory": "2Gi"})
        marks = "LimitRanger plugin set: cpu request for container app"
        decision, result = run(
            pod(body, annotations={LIMIT_RANGER_ANNOTATION: marks}), profiles={"app": recommendation("0.5")}
        )
        assert first(result)["resources"]["requests"]["cpu"] == "200m"
        assert any("capped at its limit 200m" in warning for warning in decision.warnings)


class TestBounds:
    @pytest.mark.parametrize(
        ("item", "expected_requests", "expected_limits"),
        [
            pytest.param(
                LimitRangeItem("Container", min={"cpu": Decimal("0.2"), "memory": Decimal(512 * MiB)}),
                {"cpu": "200m", "memory": "512Mi"},
                {"memory": "1Gi"},
                id="min raises",
            ),
            pytest.param(
                LimitRangeItem("Container", max={"memory": Decimal(384 * MiB)}),
                {"cpu": "100m", "memory": "256Mi"},
                {"memory": "384Mi"},
                id="max lowers the limit",
            ),
            pytest.param(
                LimitRangeItem("Container", max_limit_request_ratio={"memory": Decimal("1.5")}),
                {"cpu": "100m", "memory": "256Mi"},
                {"memory": "384Mi"},
                id="maxLimitRequestRatio lowers the limit",
            ),
            pytest.param(
                LimitRangeItem("Pod", max={"memory": Decimal(1 * MiB)}),
                {"cpu": "100m", "memory": "256Mi"},
                {"memory": "512Mi"},
                id="pod-type items do not bound a container",
            ),
        ],
    )
    def test_limit_ranges_bound_injected_values_so_the_pod_is_not_rejected_later(
        self, item: LimitRangeItem, expected_requests: dict[str, str], expected_limits: dict[str, str]
    ) -> None:
        _, result = run(pod(container()), using=GUESSED_LIMITS, facts=ClusterFacts(limit_ranges=(item,)))
        assert first(result)["resources"]["requests"] == expected_requests
        assert first(result)["resources"]["limits"] == expected_limits

    def test_a_limit_lowered_to_the_ratio_is_one_step_under_where_limit_ranger_rounds_over_it(self) -> None:
        # LimitRanger divides thousandths as floats: 2023 / 1000 * 1000 = 2023.0000000000002 > 2023.
        custom = policy(
            "resources:\n  cpu: {request: '1', limit: ratio, limitRatio: 3, limitWithoutHistory: true}"
        )
        item = LimitRangeItem("Container", max_limit_request_ratio={"cpu": Decimal("2.023")})
        _, result = run(pod(container()), using=custom, facts=ClusterFacts(limit_ranges=(item,)))
        assert first(result)["resources"]["requests"]["cpu"] == "1"
        assert first(result)["resources"]["limits"]["cpu"] == "2022m"

    def test_pod_level_resources_leave_those_resources_to_the_pod(self) -> None:
        subject = pod(container(), resources={"limits": {"cpu": "2"}})
        _, result = run(subject)
        assert first(result)["resources"]["requests"] == {"memory": "256Mi"}
        assert result["spec"]["resources"] == {"limits": {"cpu": "2"}}

    def test_an_unreadable_quantity_is_left_alone_with_a_warning(self) -> None:
        decision, result = run(pod(container(requests={"cpu": "lots"})))
        assert first(result)["resources"]["requests"]["cpu"] == "lots"
        assert any("'lots' unreadable" in warning for warning in decision.warnings)


class TestHowABoundedRequestIsExplained:
    PROFILE = "profile: p95 usage over 14d, 4032 samples, 336h"

    @pytest.mark.parametrize(
        ("cpu", "item", "expected", "note"),
        [
            pytest.param("0.001", None, "10m", "; raised to policy min", id="below-the-policy-min"),
            pytest.param("0.01", None, "10m", "", id="at-the-policy-min"),
            pytest.param("16", None, "16", "", id="at-the-policy-max"),
            pytest.param("64", None, "16", "; lowered to policy max", id="above-the-policy-max"),
            pytest.param("0.1", LimitRangeItem("Container", min={"cpu": Decimal("0.2")}), "200m",
                         "; raised to LimitRange min", id="below-the-limit-range-min"),
            pytest.param("0.2", LimitRangeItem("Container", min={"cpu": Decimal("0.2")}), "200m", "",
                         id="at-the-limit-range-min"),
            pytest.param("1", LimitRangeItem("Container", max={"cpu": Decimal("0.5")}), "500m",
                         "; lowered to LimitRange max", id="above-the-limit-range-max"),
            pytest.param("0.5", LimitRangeItem("Container", max={"cpu": Decimal("0.5")}), "500m", "",
                         id="at-the-limit-range-max"),
        ],
    )
    def test_a_request_moved_to_a_bound_says_so_and_one_at_the_bound_does_not(
        self, cpu: str, item: LimitRangeItem | None, expected: str, note: str
    ) -> None:
        """Kills the mutants of resources.py's `_bounded_request`: `<=`/`>=` for `<`/`>` against the policy's
        and the LimitRange's min and max (a value at the bound said to be moved), and each note's text."""
        facts = ClusterFacts(limit_ranges=(item,) if item else ())
        decision, _ = run(pod(container()), profiles={"app": recommendation(cpu)}, facts=facts)
        [request] = [i for i in decision.injections if i.field == "requests.cpu"]
        assert (request.value, request.source) == (expected, self.PROFILE + note)
