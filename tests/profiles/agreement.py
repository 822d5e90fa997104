"""When two builds of the same history agree: what the split, sliced and checkpointed builds must keep."""

from __future__ import annotations

from decimal import Decimal

from webhook.core.model.profile import Recommendation
from webhook.profiles.build import BuildResult

CPU_STEP = Decimal("0.005")  # the strategy rounds CPU up to 5m


HOURS_STEP = 0.01  # evidence hours are kept to two decimals: two rounded figures differ by one step more


def assert_agrees(found: BuildResult, expected: BuildResult, *, hours_within: float | None = None) -> None:
    """The same kind of profile everywhere: memory exact, CPU within 3 % + one rounding step, hours within
    `hours_within` (a bound that can be reached) plus the rounding of the two figures."""
    for key, entry in expected.document.workloads.items():
        for container, profile in entry.containers.items():
            other = found.document.workloads[key].containers[container]
            assert type(other) is type(profile)
            if isinstance(profile, Recommendation):
                assert isinstance(other, Recommendation)
                assert other.memory == profile.memory
                assert abs(other.cpu - profile.cpu) <= profile.cpu * Decimal("0.03") + CPU_STEP, key
                if hours_within is not None:
                    apart = abs(other.evidence.hours - profile.evidence.hours)
                    assert apart <= hours_within + HOURS_STEP, key
