"""Which start-ups a build reads: the containers the memory pass saw start, grouped by start time."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.profiles.prometheus import joined
from webhook.profiles.slices import DAY
from webhook.profiles.startups import _run, startup_groups


class TestStartUpReads:
    """Start-up CPU is read for the containers that started, a group of close starts per query."""

    @staticmethod
    def starts(times: list[float]) -> list[tuple[tuple[str, str, str], float]]:
        return [(("ns", f"pod-{i}", "app"), t) for i, t in enumerate(times)]

    @pytest.mark.parametrize(
        ("times", "budget", "pods", "sizes"),
        [
            ([0, 60, 120], 1_000, 500, [3]),  # close starts: one query
            ([0, 60, 5 * DAY], 1_000, 500, [2, 1]),  # far apart: a query each, not one over 5 days
            ([0] * 7, 1_000, 3, [3, 3, 1]),  # at most `pods` Pods in one query
            ([0] * 4, 12, 500, [2, 2]),  # 6 points each (300 s window at 60 s): 2 fit in 12
        ],
    )
    def test_starts_are_grouped_by_time_under_a_point_and_pod_budget(
        self, times: list[float], budget: int, pods: int, sizes: list[int]
    ) -> None:
        groups = startup_groups(self.starts(times), window=300, step=60, budget=budget, pods=pods)
        assert [len(group) for group in groups] == sizes
        assert sorted(start for group in groups for start in group) == sorted(self.starts(times))

    def test_a_container_restarted_in_place_is_read_at_both_starts(self) -> None:
        sid = ("ns", "pod", "app")
        groups = startup_groups([(sid, 0.0), (sid, 3 * DAY)], window=300, step=60, budget=1_000, pods=500)
        assert groups == [[(sid, 0.0)], [(sid, 3 * DAY)]]

    def test_a_day_of_churn_in_a_large_cluster_is_read_in_a_few_dozen_queries(self) -> None:
        times = [i * DAY / 9_000 for i in range(9_000)]  # the 1-minute benchmark: ~9,000 starts a day
        groups = startup_groups(self.starts(times), window=300, step=60, budget=500_000, pods=500)
        assert len(groups) <= 20


class TestStartUpPoints:
    """A start's points are cut from its group's range answer as Prometheus wrote it (no tuple per point):
    exactly the points 0 <= t - start < reach, as seconds since the start and cores (0 for a reset)."""

    @given(
        st.lists(st.tuples(st.integers(0, 60), st.floats(-2, 8, allow_nan=False)), max_size=40,
                 unique_by=lambda point: point[0]).map(sorted),
        st.floats(min_value=-10, max_value=70, allow_nan=False),
        st.sampled_from([0, 0.5, 1, 3, 20]),
        st.sampled_from([1, 60, 0.5]),
    )
    def test_the_points_of_a_start_are_those_of_its_window(
        self, ticks: list[tuple[int, float]], at: float, limit: float, step: float
    ) -> None:
        origin = 1_795_708_800
        points: list[Any] = [[origin + tick * step, repr(value)] for tick, value in ticks]
        start = origin + at * step
        expected = [(float(t) - start, max(float(v), 0.0))
                    for t, v in points if 0 <= float(t) - start < limit * step]
        assert _run(points, start, limit * step) == expected

    @given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 3)), max_size=12))
    def test_pieces_join_per_series_in_time_order(self, pieces: list[tuple[str, int]]) -> None:
        answer = [({"pod": pod, "namespace": "ns"}, [[number * 10 + k, str(k)] for k in range(3)])
                  for number, (pod, _) in enumerate(pieces)]
        found = joined(answer)
        assert [labels["pod"] for labels, _ in found] == list(dict.fromkeys(pod for pod, _ in pieces))
        for labels, points in found:
            assert points == [p for other, ps in answer if other == labels for p in ps]


class TestGroupsByPod:
    @given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5)), max_size=40), st.integers(1, 4))
    def test_a_pod_restarted_within_a_group_counts_once(self, raw: list[tuple[int, int]], pods: int) -> None:
        starts = [(("ns", f"pod-{pod}", "app"), float(minute * 60)) for pod, minute in raw]
        groups = startup_groups(starts, window=300, step=60, budget=10_000, pods=pods)
        for group in groups:
            assert len({sid[:2] for sid, _ in group}) <= pods
        for before, after in itertools.pairwise(groups):  # a group is cut only when full
            assert len({sid[:2] for sid, _ in before} | {after[0][0][:2]}) > pods
