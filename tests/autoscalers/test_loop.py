"""The feedback loop, simulated (tests/autoscalers/loopsim.py; the long run is bench/autoscaler_loop.py)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.autoscalers.loopsim import Day, Service, simulate

ROUNDS = 16  # past the 14-day window, so the oldest day has left it once


@pytest.fixture(scope="module")
def off() -> list[Day]:
    return simulate(ROUNDS, rule="size")


@pytest.fixture(scope="module")
def on() -> list[Day]:
    return simulate(ROUNDS, rule="keep")


class TestWithTheRuleOff:
    def test_the_request_drifts_down_and_the_hpa_runs_into_max_replicas(self, off: list[Day]) -> None:
        """The proof the simulation is honest: sizing from the usage the HPA holds walks the request off."""
        requests = [day.cpu_request for day in off]
        assert requests == sorted(requests, reverse=True)
        assert requests[-1] < requests[0] * Decimal("0.7")
        assert off[-1].replicas_high == Service().max_replicas
        assert off[-1].replicas_mean > off[0].replicas_mean * 1.3
        assert off[-1].peak_utilization > 100  # over the 70 % target at the peak: saturated

    def test_the_headroom_check_says_it_will_saturate(self, off: list[Day]) -> None:
        assert off[0].saturates is None
        assert all(day.saturates for day in off[1:])
        assert "it will saturate" in (off[1].saturates or "")


class TestWithTheRuleOn:
    def test_request_and_replicas_hold_steady(self, on: list[Day]) -> None:
        assert {(d.cpu_request, d.replicas_low, d.replicas_high, d.replicas_mean) for d in on} == {
            (on[0].cpu_request, on[0].replicas_low, on[0].replicas_high, on[0].replicas_mean)
        }
        assert str(on[0].cpu_request) == "0.500"  # the policy's request, every day

    def test_memory_is_still_sized_from_history_and_holds_too(self, on: list[Day]) -> None:
        assert on[0].memory_request == 256 * 2**20  # no history yet: the policy's
        assert len({day.memory_request for day in on[1:]}) == 1
        assert on[1].memory_request != on[0].memory_request

    def test_no_headroom_warning(self, on: list[Day]) -> None:
        assert not any(day.saturates for day in on)
