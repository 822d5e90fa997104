"""Which start-ups a build reads: the containers the memory pass saw start, grouped by start time."""

from __future__ import annotations

import pytest

from webhook.profiles.followups import startup_groups
from webhook.profiles.slices import DAY


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
