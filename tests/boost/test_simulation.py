"""bench/boost_sim.py: the CFS fair-share model behind docs/startup-boost.md's table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import boost_sim
from boost_sim import Container, shares, start


class TestTheFairShare:
    def test_cpu_goes_in_proportion_to_requests_when_everyone_wants_more(self) -> None:
        got = shares(4.0, [Container(1.0, 4.0), Container(3.0, 4.0)])
        assert got == pytest.approx([1.0, 3.0])

    def test_what_one_does_not_want_goes_to_the_others(self) -> None:
        got = shares(4.0, [Container(3.0, 0.5), Container(1.0, 4.0)])
        assert got == pytest.approx([0.5, 3.5])

    def test_a_limit_caps_a_container_even_on_an_idle_node(self) -> None:
        assert shares(4.0, [Container(0.25, 2.0, limit=1.4)]) == pytest.approx([1.4])

    @given(
        st.lists(
            st.tuples(st.floats(0.01, 4), st.floats(0, 4), st.none() | st.floats(0.1, 4)),
            min_size=1,
            max_size=8,
        ),
        st.floats(0.5, 16),
    )
    def test_no_more_than_the_node_and_nobody_over_its_want_or_limit(
        self, found: list[tuple[float, float, float | None]], cores: float
    ) -> None:
        containers = [Container(request, want, limit) for request, want, limit in found]
        got = shares(cores, containers)
        assert sum(got) <= cores + 1e-6
        for container, share in zip(containers, got, strict=True):
            assert share <= min(container.want, container.limit or container.want) + 1e-6


class TestTheStart:
    def seconds(self, *, neighbours: int, boosted: float | None, limit: float | None) -> float:
        found = start(
            cores=4, neighbours=neighbours, work=60, threads=2, request=0.25, boosted=boosted, limit=limit
        )
        return found.seconds

    def test_on_a_packed_node_only_a_larger_request_speeds_the_start(self) -> None:
        plain = self.seconds(neighbours=5, boosted=None, limit=None)
        assert self.seconds(neighbours=5, boosted=None, limit=1.4) == plain
        assert self.seconds(neighbours=5, boosted=1.4, limit=None) < plain / 3

    def test_on_an_idle_node_the_boost_changes_nothing_and_a_limit_slows_the_start(self) -> None:
        assert self.seconds(neighbours=0, boosted=None, limit=None) == pytest.approx(30.0)
        assert self.seconds(neighbours=0, boosted=1.4, limit=None) == pytest.approx(30.0)
        assert self.seconds(neighbours=0, boosted=None, limit=1.4) > 40

    def test_the_printout_runs(self, capsys: pytest.CaptureFixture[str]) -> None:
        sys.argv = ["boost_sim.py"]
        assert boost_sim.main() == 0
        assert "request boost until Ready" in capsys.readouterr().out
