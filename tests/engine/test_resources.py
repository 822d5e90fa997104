"""Requests and limits: filled from a confident profile or the policy, never over a person's values."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.engine.podkit import GUESSED_LIMITS, container, first, pod, policy, run
from webhook.core.facts import ClusterFacts
from webhook.core.model.decision import Basis, Decision
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.pod import INJECTED_ANNOTATION, LIMIT_RANGER_ANNOTATION
from webhook.core.model.profile import Evidence, NoRecommendation, Recommendation

MiB = 2**20


def injected(decision: Decision, field: str) -> tuple[str, str]:
    """The value and the explanation of the one injection of `field` ("limits.cpu")."""
    [found] = [i for i in decision.injections if i.field == field]
    return found.value, found.source


def recommendation(
    cpu: str = "0.25", memory: int = 300 * MiB, *, confidence: float = 0.9, oom_kills: int = 0, **extra: Any
) -> Recommendation:
    evidence = Evidence(
        window="14d", samples=4032, hours=336, cpu_percentile=95, memory_margin=0.15, confidence=confidence,
        oom_kills=oom_kills,
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

    def test_oom_kills_in_the_window_are_named_in_the_memory_source(self) -> None:
        """Kills resources.py's `_profile_source` with the OOM-kill clause never added (`and False`)."""
        _, result = run(pod(container()), profiles={"app": recommendation(oom_kills=2)})
        text = result["metadata"]["annotations"][INJECTED_ANNOTATION]
        assert "requests.memory=300Mi (profile: peak +15%, 2 OOM kill(s) over 14d" in text

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

    def test_a_start_up_peak_equal_to_the_derived_limit_leaves_the_ratio_as_the_explanation(self) -> None:
        """Kills resources.py's `_bounded_limit` with `>=` for `>` on the start-up peak (a peak that raises
        nothing said to be the limit's source)."""
        custom = policy("resources:\n  cpu: {limit: ratio, limitRatio: 2}")
        profile = recommendation("0.2", startup_cpu=Decimal("0.4"), startup_seconds=40)
        decision, _ = run(pod(container()), using=custom, profiles={"app": profile})
        assert injected(decision, "limits.cpu") == ("400m", '2 x request, policy "custom"')


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


def cpu_policy(*, request: str = "100m", limit: str = "ratio", ratio: str = "2") -> Any:
    return policy(
        f"resources:\n  cpu: {{request: '{request}', limit: {limit}, limitRatio: {ratio},"
        " limitWithoutHistory: true}"
    )


def cpu_bound(**bound: Decimal) -> LimitRangeItem:
    """A Container LimitRange item bounding cpu: cpu_bound(max=...), min=..., max_limit_request_ratio=..."""
    return LimitRangeItem("Container", **{key: {"cpu": value} for key, value in bound.items()})


TWICE = '2 x request, policy "custom"'


class TestHowABoundedLimitIsExplained:
    @pytest.mark.parametrize(
        ("rules", "requests", "item", "expected"),
        [
            pytest.param(cpu_policy(request="101m", ratio="1.5"), None, None,
                         ("152m", '1.5 x request, policy "custom"'),
                         id="rounded-up (kills up=False and up=None)"),
            pytest.param(cpu_policy(), None, cpu_bound(max=Decimal("0.2")), ("200m", TWICE),
                         id="at-the-limit-range-max (kills >=)"),
            pytest.param(cpu_policy(ratio="3"), None, cpu_bound(max=Decimal("0.2")),
                         ("200m", '3 x request, policy "custom"; lowered to LimitRange max'),
                         id="above-the-limit-range-max"),
            pytest.param(cpu_policy(), None, cpu_bound(max_limit_request_ratio=Decimal(2)), ("200m", TWICE),
                         id="at-the-ratio (kills >=)"),
            pytest.param(cpu_policy(), None, cpu_bound(max_limit_request_ratio=Decimal(4)), ("200m", TWICE),
                         id="under-the-ratio (kills request / ratio for request x ratio)"),
            pytest.param(cpu_policy(ratio="3"), None, cpu_bound(max_limit_request_ratio=Decimal(2)),
                         ("200m", '3 x request, policy "custom";'
                                  " lowered to LimitRange maxLimitRequestRatio 2"),
                         id="over-the-ratio"),
            pytest.param(cpu_policy(limit="equal"), None, cpu_bound(min=Decimal("0.2")),
                         ("200m", '= request, policy "custom"'), id="at-the-limit-range-min (kills <=)"),
            pytest.param(cpu_policy(), {"cpu": "50m"}, cpu_bound(min=Decimal("0.2")),
                         ("200m", f"{TWICE}; raised to LimitRange min"),
                         id="below-the-limit-range-min (kills the raise dropped)"),
        ],
    )
    def test_a_limit_moved_to_a_bound_says_so_and_one_at_the_bound_does_not(
        self, rules: Any, requests: dict[str, str] | None, item: LimitRangeItem | None,
        expected: tuple[str, str],
    ) -> None:
        """Kills the mutants of resources.py's `_bounded_limit` named in each row's id: a limit rounded
        down, `>=`/`<=` for `>`/`<` against the LimitRange's max, ratio and min (a limit at the bound said
        to be moved), the ratio taken as `request / ratio`, and the raise to the LimitRange's min dropped
        (a person's 50m request, 2 x, is still under the min)."""
        facts = ClusterFacts(limit_ranges=(item,) if item else ())
        decision, _ = run(pod(container(requests=requests)), using=rules, facts=facts)
        assert injected(decision, "limits.cpu") == expected

    def test_a_limit_lowered_to_the_ratio_is_rounded_down_even_where_limit_ranger_would_not_see_a_byte_over(
        self,
    ) -> None:
        """Kills resources.py's `_round` always rounding up (`(up) or True`) and `_bounded_limit`'s
        `up=True` where the limit is lowered to the ratio: 14748870197266 x 9.624 = 141943126778487.98,
        and LimitRanger's float division passes the byte over (141943126778488) as well, so only
        rounding down keeps the limit at or under request x ratio."""
        custom = policy(
            "resources:\n  memory: {request: '14748870197266', max: 20Ti, limit: ratio, limitRatio: 10,"
            " limitWithoutHistory: true}"
        )
        item = LimitRangeItem("Container", max_limit_request_ratio={"memory": Decimal("9.624")})
        decision, _ = run(pod(container()), using=custom, facts=ClusterFacts(limit_ranges=(item,)))
        assert injected(decision, "requests.memory")[0] == "14748870197266"
        assert injected(decision, "limits.memory")[0] == "141943126778487"


class TestAPersonsRequestOutsideThePolicy:
    LIMIT_RANGER_CPU = {LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: cpu request for container app"}

    @pytest.mark.parametrize(
        ("cpu", "annotations", "expected"),
        [
            pytest.param("5m", None, ["app: cpu request 5m is below the policy min 10m; kept"],
                         id="below-the-min"),
            pytest.param("10m", None, [], id="at-the-min"),
            pytest.param("1500m", None, [], id="at-the-max"),
            pytest.param("2", None, ["app: cpu request 2 is above the policy max 1500m; kept"],
                         id="above-the-max"),
            pytest.param("5m", LIMIT_RANGER_CPU, [], id="limit-ranger-set-and-kept"),
        ],
    )
    def test_is_kept_with_a_warning_and_one_at_a_bound_or_limit_rangers_without(
        self, cpu: str, annotations: dict[str, str] | None, expected: list[str]
    ) -> None:
        """Kills resources.py's `_outside` mutants (`<=`/`>=` for `<`/`>`, the bound rendered as bytes
        (1500m as "2") or not at all, "XXXX" for no complaint) and `size_container`'s `persons` taken as
        None or with `or` for `and` (LimitRanger's request, kept by `limitRanger: keep`, is nobody's
        choice to warn about)."""
        subject = pod(container(requests={"cpu": cpu}), annotations=annotations)
        decision, result = run(subject, using=policy("limitRanger: keep\nresources:\n  cpu: {max: 1500m}"))
        assert first(result)["resources"]["requests"]["cpu"] == cpu
        assert [warning for warning in decision.warnings if warning.endswith("; kept")] == expected


class TestUnreadableValues:
    def test_an_unreadable_cpu_leaves_the_memory_still_sized(self) -> None:
        """Kills resources.py's `size_container` with `break` for `continue` after an unreadable value."""
        _, result = run(pod(container(requests={"cpu": "lots"})))
        assert first(result)["resources"]["requests"] == {"cpu": "lots", "memory": "256Mi"}

    @pytest.mark.parametrize("raw", ["x" * 70, "-" + "1" * 69], ids=["unparsable", "negative"])
    def test_a_long_unreadable_value_is_quoted_to_sixty_characters(self, raw: str) -> None:
        """Kills resources.py's `_read` with `[:61]` for `[:60]`, on either way a value is unreadable."""
        decision, _ = run(pod(container(requests={"cpu": raw})))
        assert f"app: cpu value {raw[:60]!r} unreadable; left alone" in decision.warnings


class TestWhatEachValueRestsOn:
    @pytest.mark.parametrize(
        ("profiles", "item", "expected"),
        [
            pytest.param({}, None, {"requests.cpu": Basis.POLICY, "requests.memory": Basis.POLICY},
                         id="no profile: the policy"),
            pytest.param({"app": recommendation()}, None,
                         {"requests.cpu": Basis.HISTORY, "requests.memory": Basis.HISTORY,
                          "limits.memory": Basis.HISTORY},
                         id="a confident profile: history, the limit derived from it too"),
            pytest.param({}, cpu_bound(min=Decimal("0.2")),
                         {"requests.cpu": Basis.LIMIT_RANGE, "requests.memory": Basis.POLICY},
                         id="a request raised to the LimitRange min"),
            pytest.param({"app": recommendation()},
                         LimitRangeItem("Container", max={"memory": Decimal(500 * MiB)}),
                         {"requests.cpu": Basis.HISTORY, "requests.memory": Basis.HISTORY,
                          "limits.memory": Basis.LIMIT_RANGE},
                         id="a limit lowered to the LimitRange max"),
        ],
    )
    def test_each_injected_value_names_its_basis_for_the_metrics_and_the_report(
        self, profiles: dict[str, Any], item: LimitRangeItem | None, expected: dict[str, Basis]
    ) -> None:
        """Kills resources.py's `size_container` mutants on the basis (HISTORY for POLICY and back, the
        LimitRange basis of a request or a limit never chosen): the report's origin and the metrics'
        profile/policy split read it, not the explanation."""
        facts = ClusterFacts(limit_ranges=(item,) if item else ())
        decision, _ = run(pod(container()), profiles=profiles, facts=facts)
        assert {i.field: i.basis for i in decision.injections if "." in i.field} == expected


class TestAPersonsValuesBesideOurs:
    def test_history_above_a_persons_request_derives_the_limit_and_says_so(self) -> None:
        """Kills resources.py's `size_container` mutants on a person's request beside history: cpu not
        counted as evidence (`"XXcpuXX"`/`"CPU"`: no limit at all), the note never added (`is None`), the
        note replacing the ratio's (`=` for `+=`) and history's value rendered as bytes."""
        custom = policy("resources:\n  cpu: {limit: ratio, limitRatio: 2}")
        subject = pod(container(requests={"cpu": "100m"}))
        decision, _ = run(subject, using=custom, profiles={"app": recommendation("0.25")})
        assert injected(decision, "limits.cpu") == (
            "500m", '2 x request, policy "custom"; from history\'s 250m, above the request'
        )

    def test_a_persons_cpu_request_and_limit_leave_the_memory_still_sized(self) -> None:
        """Kills resources.py's `size_container` with `break` for `continue` when neither value is ours."""
        _, result = run(pod(container(requests={"cpu": "500m"}, limits={"cpu": "1"})))
        assert first(result)["resources"]["requests"] == {"cpu": "500m", "memory": "256Mi"}

    def test_a_request_replacing_limit_rangers_is_not_capped_at_a_limit_replaced_too(self) -> None:
        """Kills resources.py's `size_container` with the limit LimitRanger set kept as a cap while it is
        being replaced (`(limit_is_ours) and False`)."""
        body = container(requests={"memory": "100Mi"}, limits={"memory": "200Mi"})
        marks = {
            LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: memory request for container app;"
            " memory limit for container app"
        }
        decision, result = run(pod(body, annotations=marks), profiles={"app": recommendation()})
        assert first(result)["resources"]["requests"]["memory"] == "300Mi"
        assert first(result)["resources"]["limits"]["memory"] == "600Mi"
        assert not [warning for warning in decision.warnings if "capped" in warning]

    def test_a_replaced_request_equal_to_the_limit_that_stays_is_not_said_to_be_capped(self) -> None:
        """Kills resources.py's `size_container` with `>=` for `>` on the cap at a person's limit."""
        body = container(requests={"cpu": "100m"}, limits={"cpu": "250m"})
        marks = {LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: cpu request for container app"}
        decision, _ = run(pod(body, annotations=marks), profiles={"app": recommendation("0.25")})
        assert injected(decision, "requests.cpu") == ("250m", TestHowABoundedRequestIsExplained.PROFILE)
        assert not [warning for warning in decision.warnings if "capped" in warning]

    def test_a_limit_ranger_value_equal_to_its_replacement_is_not_patched(self) -> None:
        """Kills resources.py's `size_container` with `or` for `and` before a request is written."""
        body = container(requests={"cpu": "100m"})
        marks = {LIMIT_RANGER_ANNOTATION: "LimitRanger plugin set: cpu request for container app"}
        decision, _ = run(pod(body, annotations=marks), using=policy("limitRanger: replace"))
        assert [i.field for i in decision.injections if i.field.endswith(".cpu")] == []
