"""bench/traffic_sim.py: the scale-in simulation behind docs/traffic-path.md's table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import traffic_sim  # noqa: E402


@pytest.mark.parametrize(("sleep", "delay"), [(5, 2), (5, 5), (15, 10), (30, 30)])
def test_nothing_is_dropped_when_the_pause_outlasts_the_balancer(sleep: int, delay: int) -> None:
    assert traffic_sim.dropped(rate=50, pods=10, scale_in=4, sleep=sleep, delay=delay) == 0


@pytest.mark.parametrize(("sleep", "delay", "lost"), [(5, 10, 100), (5, 30, 500), (15, 30, 300)])
def test_what_is_sent_to_a_stopped_pod_is_dropped(sleep: int, delay: int, lost: int) -> None:
    """4 of 10 Pods stopped for (D - S) seconds at 50 requests/s: 4/10 x 50 x (D - S) requests."""
    assert traffic_sim.dropped(rate=50, pods=10, scale_in=4, sleep=sleep, delay=delay) == lost


def test_the_sized_pause_drops_nothing_on_every_path_and_today_drops_behind_balancers() -> None:
    shown = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "traffic_sim.py"), "--rate", "20"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [
        line.split()
        for line in shown.splitlines()
        if line.endswith(("inCluster 5s", "ingress 15s", "reach the controller"))
    ]
    assert len(rows) == 3
    for row in rows:
        sized_dropped = row[row.index("behind") - 2]
        assert sized_dropped == "0"
    assert "0" not in (rows[1][rows[1].index("behind") - 4], rows[2][rows[2].index("behind") - 4])
