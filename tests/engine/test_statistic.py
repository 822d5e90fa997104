"""A policy names the usage statistic its requests are sized from; a workload may choose within bounds."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from webhook.config.policies import bundled_policy_document
from webhook.core.model.profile import Evidence, NoRecommendation, Recommendation
from webhook.core.policy.policies import parse_policies
from webhook.core.policy.reader import PolicyError
from webhook.core.policy.statistic import (
    CPU_PERCENTILE_ANNOTATION,
    MEMORY_MARGIN_ANNOTATION,
    CpuStatistic,
    UsageStatistic,
    for_workload,
)

MIB = 2**20
BASE = bundled_policy_document()["policies"]["default"]


def _policy(profiles: dict[str, Any]) -> UsageStatistic:
    document = {"policies": {"team": {"profiles": profiles}}}
    policy = parse_policies(document, base=BASE).get("team")
    assert policy is not None
    return policy.usage


def _profile(**evidence: Any) -> Recommendation:
    ev = Evidence("7d", 10_000, 168.0, 95.0, 0.15, 0.9, memory_peak=float(400 * MIB), **evidence)
    return Recommendation(Decimal("0.5"), Decimal(460 * MIB), ev,
                          cpu_by={"99/pooled/auto": Decimal("0.8"), "95/maxPerPod/auto": Decimal("0.6")})


def test_the_bundled_policy_names_p95_pooled_auto_and_a_15_percent_margin() -> None:
    usage = _policy({})
    assert usage.cpu == CpuStatistic(95.0, "pooled", "auto")
    assert usage.memory_margin == Decimal("0.15")
    assert usage.statistics() == {CpuStatistic()}


@pytest.mark.parametrize(
    ("profiles", "field"),
    [
        ({"cpu": {"percentile": 0}}, "profiles.cpu.percentile"),
        ({"cpu": {"aggregate": "mean"}}, "profiles.cpu.aggregate"),
        ({"cpu": {"rateWindow": "fast"}}, "profiles.cpu.rateWindow"),
        ({"cpu": {"percentiles": [90, "99"]}}, "profiles.cpu.percentiles"),
        ({"cpu": {"median": 50}}, "profiles.cpu.median"),
        ({"memory": {"margin": 0.2, "marginRange": [0.3, 0.5]}}, "profiles.memory.marginRange"),
    ],
)
def test_a_wrong_statistic_is_refused_naming_its_field(profiles: dict[str, Any], field: str) -> None:
    with pytest.raises(PolicyError, match=field.replace(".", r"\.")):
        _policy(profiles)


def test_a_policy_s_statistic_is_looked_up_in_what_the_build_counted() -> None:
    usage = _policy({"cpu": {"aggregate": "maxPerPod"}})
    sized, notes = for_workload({"app": _profile()}, usage, {})
    profile = sized["app"]
    assert isinstance(profile, Recommendation)
    assert profile.cpu == Decimal("0.6")
    assert profile.evidence.cpu_aggregate == "maxPerPod"
    assert notes == []


def test_a_statistic_no_build_counted_keeps_the_stored_one_and_says_so() -> None:
    usage = _policy({"cpu": {"percentile": 90}})
    sized, notes = for_workload({"app": _profile()}, usage, {})
    assert sized["app"] == _profile()
    assert len(notes) == 1
    assert "no 90/pooled/auto CPU statistic" in notes[0]


@pytest.mark.parametrize(
    ("annotation", "cpu", "noted"),
    [("99", Decimal("0.8"), False), ("97", Decimal("0.5"), True), ("lots", Decimal("0.5"), True)],
)
def test_a_workload_chooses_its_percentile_among_the_policy_s(
    annotation: str, cpu: Decimal, noted: bool
) -> None:
    usage = _policy({"cpu": {"percentiles": [99]}})
    sized, notes = for_workload({"app": _profile()}, usage, {CPU_PERCENTILE_ANNOTATION: annotation})
    profile = sized["app"]
    assert isinstance(profile, Recommendation)
    assert profile.cpu == cpu
    assert bool(notes) is noted


@pytest.mark.parametrize(("annotation", "memory_mib"), [("0.3", 520), ("0.9", 460)])
def test_a_workload_chooses_its_memory_margin_within_the_range(annotation: str, memory_mib: int) -> None:
    usage = _policy({"memory": {"marginRange": [0.1, 0.5]}})
    sized, _ = for_workload({"app": _profile()}, usage, {MEMORY_MARGIN_ANNOTATION: annotation})
    profile = sized["app"]
    assert isinstance(profile, Recommendation)
    assert profile.memory == memory_mib * MIB  # 400 MiB peak x 1.3; out of range: as stored


def test_after_an_oom_kill_the_margin_is_not_reapplied_to_the_peak() -> None:
    usage = _policy({"memory": {"margin": 0.5}})
    sized, _ = for_workload({"app": _profile(oom_kills=1)}, usage, {})
    assert sized["app"] == _profile(oom_kills=1)


def test_no_recommendation_passes_through() -> None:
    none = NoRecommendation("only 2h of history")
    sized, notes = for_workload({"app": none}, _policy({"memory": {"margin": 0.3}}), {})
    assert sized == {"app": none}
    assert notes == []
