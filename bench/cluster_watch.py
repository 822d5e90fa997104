"""Cluster snapshot cost: a full rebuild per watch event, and event-to-snapshot latency through a real watch.

Every watch event rebuilds the whole `ClusterSnapshot` (simple and always consistent). This prints what
that costs at cluster sizes, as a ratio to the admission budget that matters: a rebuild must stay far
below the interval between namespace/LimitRange changes, and never touches the admission path (which only
reads `state.cluster`). Target: a rebuild for 2,000 namespaces under 10 ms.

    .venv/bin/python bench/cluster_watch.py [--events N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from webhook.cluster.snapshot import ParseCache, build_snapshot
from webhook.config.policies import bundled_policies
from webhook.config.settings import Settings
from webhook.refreshers.cluster import ClusterRefresher
from webhook.refreshers.state import State

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package, which kubefake imports
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from kubefake import FakeKube


def objects(count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    namespaces = [
        {"metadata": {"name": f"ns-{i}", "labels": {"pod-tailor.io/mode": "enforce", "team": f"t{i % 40}"}}}
        for i in range(count)
    ]
    limit_ranges = [
        {
            "metadata": {"name": "limits", "namespace": f"ns-{i}"},
            "spec": {
                "limits": [{"type": "Container", "max": {"cpu": "4", "memory": "8Gi"}, "min": {"cpu": "10m"}}]
            },
        }
        for i in range(count)
    ]
    return namespaces, limit_ranges


def rebuild_cost(count: int, *, cached: bool, rounds: int = 20) -> float:
    """Median seconds per rebuild; `cached`: as the refresher does it, one LimitRange changed per event."""
    namespaces, limit_ranges = objects(count)
    policies, settings = bundled_policies(), Settings()
    parsed = ParseCache()
    times = []
    for round_ in range(rounds + 1):
        limit_ranges[round_ % count]["metadata"]["resourceVersion"] = str(round_)  # the event's change
        started = time.perf_counter()
        build_snapshot(
            policies=policies, settings=settings,
            objects={"namespaces": namespaces, "limitranges": limit_ranges},
            server_version=(1, 31), taken_at=0.0, source="bench", cache=parsed if cached else None,
        )  # fmt: skip
        if round_:  # the first cached round fills the cache
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def event_latency(events: int, namespaces: int) -> list[float]:
    """Seconds from a change on the (fake) API server to the swapped snapshot showing it."""
    latencies = []
    with FakeKube() as kube, tempfile.TemporaryDirectory() as tmp:
        all_namespaces, all_limit_ranges = objects(namespaces)
        for namespace, limit_range in zip(all_namespaces, all_limit_ranges, strict=True):
            kube.put({"apiVersion": "v1", "kind": "Namespace", **namespace})
            kube.put({"apiVersion": "v1", "kind": "LimitRange", **limit_range})
        state = State()
        refresher = ClusterRefresher(
            Settings(kubeconfig=str(kube.write_kubeconfig(Path(tmp) / "kc"))), env={}
        )
        refresher.start(state)
        try:
            while state.pending:
                time.sleep(0.001)
            for i in range(events):
                label = {"pod-tailor.io/mode": "dry-run", "n": str(i)}
                started = time.perf_counter()
                kube.put(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns-0", "labels": label}}
                )
                while (state.cluster.namespaces or {}).get("ns-0", {}).get("n") != str(i):
                    time.sleep(0.0001)
                latencies.append(time.perf_counter() - started)
        finally:
            refresher.stop()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100)
    args = parser.parse_args()
    for count in (100, 2_000, 10_000):
        cold, warm = rebuild_cost(count, cached=False), rebuild_cost(count, cached=True)
        print(
            f"rebuild, {count:>6} namespaces + LimitRanges: {warm * 1000:7.2f} ms "
            f"({warm / 0.010:5.2f} x the 10 ms target; uncached {cold * 1000:.2f} ms = {cold / warm:.1f}x)"
        )
    latencies = sorted(event_latency(args.events, 2_000))
    median, p95 = statistics.median(latencies), latencies[int(len(latencies) * 0.95) - 1]
    print(
        f"event -> snapshot, 2000 ns + LimitRanges: median {median * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
