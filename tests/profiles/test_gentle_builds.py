"""Profile builds that cost Prometheus a bounded amount whatever the fleet: a per-query sample budget met by
shards that leave every answer as it is, split-on-refusal, retries with backoff, and nothing unread ever
written as "no data".

Against a real Prometheus holding the synthetic cluster three times over (namespaces north, shop, south),
reached directly or through `FaultProxy`, which fails chosen queries as busy or limited backends do.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
import scenarios
from conftest import test_settings
from faultproxy import FaultProxy, prometheus_error
from hypothesis import given, settings
from hypothesis import strategies as st
from promserver import PromServer, backfill
from synthetic import RECORDED_CPU, write_openmetrics

from webhook.commands.profiles import BuildMeter
from webhook.core.model.profile import Evidence, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.budgets import fleet_budget
from webhook.profiles.build import BuildResult, BuildSettings, build_profiles
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.prometheus import Prometheus, PrometheusError
from webhook.profiles.runner import BuildRun, build_once
from webhook.profiles.shards import MAX_CLASSES, Shard, plan
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry
from webhook.report.progress import Progress

NAMESPACES = ("north", "shop", "south")
FAMILIES = (
    "container_cpu_usage_seconds_total", "container_memory_working_set_bytes", "container_start_time_seconds",
    "kube_pod_owner", "kube_replicaset_owner", "kube_pod_container_resource_requests",
    "kube_pod_container_status_last_terminated_reason", RECORDED_CPU,
)
POD_NAME = st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?", fullmatch=True)


def _big_pass(query: str) -> bool:
    return "quantile_over_time" in query or '"stat", "count"' in query


# --------------------------------------------------------------------------- shards (pure)


def _descend(shard: Shard, path: list[bool], namespaces: tuple[str, ...]) -> list[Shard]:
    """The shards met going down `path` (False: first half, True: second), the first one included."""
    out = [shard]
    for second in path:
        children = out[-1].split(namespaces)
        if not children:
            break
        out.append(children[second])
    return out


def _holds(shard: Shard, namespace: str, pod: str, container: str = "app") -> bool:
    pattern = shard.pod_pattern()
    named = container in shard.containers
    return (
        (not shard.namespaces or namespace in shard.namespaces)
        and (not shard.containers or named != shard.other_containers)
        and (pattern is None or re.fullmatch(pattern, pod) is not None)
    )


# The properties match up to 1,024 shards' patterns per example: no per-example deadline (a loaded 2-core
# machine took 345 ms over the default 200 ms), and a bounded count of examples instead.
BOUNDED = settings(deadline=None, max_examples=60)


class TestShards:
    @BOUNDED
    @given(pod=POD_NAME, path=st.lists(st.booleans(), max_size=14))
    def test_the_two_halves_of_a_split_hold_exactly_the_pods_of_the_shard(
        self, pod: str, path: list[bool]
    ) -> None:
        for shard in _descend(Shard(), path, NAMESPACES):
            children = shard.split(NAMESPACES)
            if not children:
                assert shard.classes == MAX_CLASSES * MAX_CLASSES
                continue
            for namespace in NAMESPACES:
                inside = [_holds(child, namespace, pod) for child in children]
                assert sum(inside) == int(_holds(shard, namespace, pod)), (shard, children, pod)

    @BOUNDED
    @given(pod=POD_NAME)
    @pytest.mark.parametrize(("last", "before"), [(1, 1), (2, 1), (32, 1), (32, 2), (32, 32)])
    def test_every_pod_name_is_in_exactly_one_class(self, pod: str, last: int, before: int) -> None:
        shards = [Shard(("shop",), (last, i), (before, j)) for i in range(last) for j in range(before)]
        assert sum(_holds(shard, "shop", pod) for shard in shards) == 1

    def test_a_shard_over_every_namespace_splits_by_namespace_first(self) -> None:
        assert Shard().split(NAMESPACES) == [Shard(("north",)), Shard(("shop", "south"))]
        assert Shard(("shop",)).split() == [Shard(("shop",), (2, 0)), Shard(("shop",), (2, 1))]

    def test_a_container_set_splits_into_halves_before_pod_classes(self) -> None:
        shard = Shard(("shop",), containers=("app", "log", "proxy"))
        assert shard.split() == [Shard(("shop",), containers=("app",)),
                                 Shard(("shop",), containers=("log", "proxy"))]
        rest = Shard(("shop",), containers=("app",), other_containers=True)
        assert rest.split() == [dataclasses.replace(rest, last=(2, 0)),
                                dataclasses.replace(rest, last=(2, 1))]

    @pytest.mark.parametrize(
        ("series", "budget", "expected"),
        [
            ({"a": {"app": 10}, "b": {"app": 10}}, 10_000_000, [Shard()]),  # a small cluster: one query
            ({"a": {"app": 100}, "b": {"app": 100}, "c": {"app": 100}}, 2 * 100 * 4032,
             [Shard(("a", "b")), Shard(("c",))]),
            # one container over the budget (3.3x): Pod-name classes with headroom (uneven over few Pods);
            # a namespace without live series joins a group
            ({"big": {"app": 100}, "gone": {}}, 30 * 4032, [Shard(("big",), (8, i)) for i in range(8)]
             + [Shard(("gone",))]),
            # a namespace over the budget is split by container; the smallest group reads every other name
            ({"big": {"app": 60, "proxy": 50, "log": 20}}, 80 * 4032,
             [Shard(("big",), containers=("app", "log")),
              Shard(("big",), containers=("app", "log"), other_containers=True)]),
            # a container over the budget alone is cut into classes, the rest still by container
            ({"big": {"app": 100, "log": 20}}, 30 * 4032,
             [Shard(("big",), (8, i), containers=("app",)) for i in range(8)]
             + [Shard(("big",), containers=("app",), other_containers=True)]),
        ],
    )
    def test_the_plan_packs_namespaces_and_cuts_the_ones_over_the_budget(
        self, series: dict[str, dict[str, float]], budget: int, expected: list[Shard]
    ) -> None:
        assert plan(series, span=14 * 86_400, resolution=300, budget=budget) == sorted(expected)

    @pytest.mark.parametrize(
        ("points", "ceiling", "expected"),
        [
            (50_000, 500_000, 200_000),  # a tiny fleet: one query, as ever (the floor is over its points)
            (1_854 * 2_016, 500_000, 233_604),  # the 300 s peer set (7 days at 5 m): a sixteenth
            (4_668 * 10_080, 500_000, 500_000),  # the 60 s peer set: the whole budget
            (16 * 500_000, 500_000, 500_000),  # where a sixteenth reaches the budget
            (1_854 * 2_016, 8_000, 8_000),  # a budget set under the floor is kept
        ],
    )
    def test_a_small_fleets_heavy_queries_hold_a_sixteenth_of_its_points(
        self, points: float, ceiling: int, expected: int
    ) -> None:
        assert fleet_budget(points, ceiling=ceiling) == expected

    @pytest.mark.parametrize(
        ("largest", "expected"),
        [
            (1_854 * 2_016 / 60, 233_604),  # the 300 s peer set: 20 namespaces x 3 container names
            (1_854 * 2_016 / 3, 500_000),  # one namespace: a container name over a sixteenth keeps it whole
            (1_854 * 2_016 / 10, 373_767),  # ... as one query, not Pod-name classes
        ],
    )
    def test_the_largest_container_is_never_cut_into_pod_name_classes_by_the_fleet_budget(
        self, largest: float, expected: int
    ) -> None:
        assert fleet_budget(1_854 * 2_016, ceiling=500_000, largest=largest) == expected

    @given(st.floats(0, 1e9), st.integers(1, 5_000_000), st.floats(0, 1))
    def test_the_fleet_budget_never_exceeds_the_build_budget_nor_shrinks_as_the_fleet_grows(
        self, points: float, ceiling: int, share: float
    ) -> None:
        largest = points * share
        budget = fleet_budget(points, ceiling=ceiling, largest=largest)
        assert budget <= ceiling
        assert budget >= min(ceiling, largest)
        assert budget <= fleet_budget(points * 2, ceiling=ceiling, largest=largest * 2)

    @given(st.dictionaries(st.sampled_from("abcdefgh"),
                           st.dictionaries(st.sampled_from(["app", "log", "proxy", "db"]),
                                           st.integers(0, 50_000)),
                           min_size=1),
           st.integers(100_000, 50_000_000),
           st.sampled_from(["app", "log", "proxy", "db", "gone"]), POD_NAME)
    @BOUNDED
    def test_every_series_is_planned_once_and_every_query_fits_the_budget(
        self, series: dict[str, dict[str, int]], budget: int, container: str, pod: str
    ) -> None:
        shards = plan(series, span=14 * 86_400, resolution=60, budget=budget)
        for namespace, containers in series.items():
            assert sum(_holds(s, namespace, pod, container) for s in shards) == 1  # never lost, never twice
            for name, count in containers.items():
                holding = [s for s in shards if (not s.namespaces or namespace in s.namespaces)
                           and (not s.containers or (name in s.containers) != s.other_containers)]
                if count * 14 * 1440 / len(holding) > budget:  # only beyond 1,024 classes
                    assert len(holding) == MAX_CLASSES * MAX_CLASSES


# --------------------------------------------------------------------------- against a real Prometheus


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PromServer, int]]:
    """The synthetic cluster's shop namespace copied to north and south, and its total sample count."""
    root = tmp_path_factory.mktemp("three")
    workloads = [dataclasses.replace(w, namespace=ns) for ns in NAMESPACES for w in scenarios.workloads()
                 if w.namespace == "shop"]
    with (root / "history.om").open("w") as out:
        write_openmetrics(workloads, out, step=scenarios.STEP)
    backfill(root / "history.om", root / "data")
    with PromServer(root / "data") as server:
        total = 0
        for family in FAMILIES:
            answer = httpx.post(f"{server.url}/api/v1/query", data={
                "query": f"sum(count_over_time({family}[15d]))", "time": str(scenarios.END)}).json()
            total += sum(int(float(item["value"][1])) for item in answer["data"]["result"])
        yield server, total


def _build(url: str, **overrides: object) -> tuple[BuildResult, list[str]]:
    said: list[str] = []
    prom = Prometheus(url)
    try:
        result = build_profiles(prom, test_settings(namespaces=NAMESPACES, **overrides), end=scenarios.END,
                                progress=said.append)
    finally:
        prom.close()
    return result, said


@pytest.fixture(scope="module")
def unlimited(three: tuple[PromServer, int]) -> BuildResult:
    return _build(three[0].url)[0]


class TestTheBudget:
    def test_a_tight_budget_gives_the_same_store_in_more_queries_each_under_it(
        self, three: tuple[PromServer, int], unlimited: BuildResult
    ) -> None:
        budget = 20_000
        with FaultProxy(three[0].url, lambda _: None) as proxy:
            tight, said = _build(proxy.url, max_samples=budget)
        assert tight.document.workloads == unlimited.document.workloads
        assert tight.queries > unlimited.queries
        peaks = [peak for _, query, peak in proxy.answered if _big_pass(query)]
        assert len(peaks) > 20
        assert max(peaks) <= budget * 1.1
        assert any("shards of <= 20,000 samples" in line for line in said)
        assert unlimited.peak_samples > 5 * budget  # the unsplit build's largest query, for scale

    def test_a_server_limit_of_a_twentieth_of_the_history_is_met_by_splitting_on_refusal(
        self, three: tuple[PromServer, int], unlimited: BuildResult, tmp_path: Path
    ) -> None:
        server, total = three
        copy = tmp_path / "data"
        shutil.copytree(server.data_dir, copy, ignore=shutil.ignore_patterns("lock", "wal", "chunks_head"))
        with PromServer(copy, max_samples=total // 20) as limited:
            # The default budget (5 M) is far above this server's limit; the CPU pass at every step
            # (the rebuild's: the exact statistic's estimate reads a fifth of them).
            found, said = _build(limited.url, exact_cpu=False)
        assert found.document.workloads == _build(server.url, exact_cpu=False)[0].document.workloads
        assert found.refusals > 0
        assert not found.unread
        assert any("split-on-refusal" in line for line in said)

    def test_no_more_queries_are_in_flight_than_the_concurrency(self, three: tuple[PromServer, int]) -> None:
        with FaultProxy(three[0].url, lambda _: None, delay=0.05) as proxy:
            _build(proxy.url, max_samples=50_000, concurrency=2)
        assert proxy.most_in_flight == 2


class TestFailingBackends:
    def test_a_busy_server_is_asked_again_after_a_pause_in_smaller_pieces(
        self, three: tuple[PromServer, int], unlimited: BuildResult
    ) -> None:
        failures = iter(range(3))

        def busy(query: str) -> tuple[int, bytes] | None:
            if _big_pass(query) and next(failures, None) is not None:
                return 503, b"upstream connect error or disconnect/reset before headers\n"
            return None

        with FaultProxy(three[0].url, busy) as proxy:
            found, said = _build(proxy.url, retry_pause=0.05)
        assert found.document.workloads == unlimited.document.workloads
        assert [status for status, _, _ in proxy.answered].count(503) == 3
        assert sum("HTTP 503" in line and "after 0.05s" in line for line in said) >= 1

    def test_a_namespace_that_stays_unreadable_keeps_its_previous_profiles(
        self, three: tuple[PromServer, int], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store = FileStore(tmp_path / "profiles.json")
        sentinel = Recommendation(Decimal("9.999"), Decimal(999), Evidence("14d", 1, 1.0, 95.0, 0.15, 1.0))
        before = {WorkloadKey(ns, "Deployment", "steady"): WorkloadEntry({"app": sentinel})
                  for ns in NAMESPACES}
        store.write(ProfileDocument(before, 1.0, "earlier"))

        def south_refused(query: str) -> tuple[int, bytes] | None:
            if _big_pass(query) and "south" in query:
                return 422, prometheus_error("execution", "the query exceeded the max number of chunks")
            return None

        with FaultProxy(three[0].url, south_refused) as proxy:
            run = BuildRun(PrometheusConnection(proxy.url), end=scenarios.END)
            result = build_once(run, test_settings(namespaces=NAMESPACES), store)
        after = store.read().workloads
        assert [namespace for namespace, _ in result.unread] == ["south"]
        assert after[WorkloadKey("south", "Deployment", "steady")].containers["app"] == sentinel
        assert not any(key.namespace == "south" and key.name != "steady" for key in after)
        north = after[WorkloadKey("north", "Deployment", "steady")].containers["app"]
        assert isinstance(north, Recommendation)
        assert north != sentinel
        refused = [status for status, _, _ in proxy.answered].count(422)
        assert 10 < refused <= 2 * 64 + 2  # split down, then given up: not 1,024 shards x 336 hours
        err = capsys.readouterr().err
        assert "could not be read from Prometheus" in err
        assert "south: " in err
        assert "max number of chunks" in err

    def test_a_build_that_reads_no_namespace_fails_and_leaves_the_store(self, three: tuple[PromServer, int],
                                                                       tmp_path: Path) -> None:
        store = FileStore(tmp_path / "profiles.json")
        store.write(ProfileDocument({}, 1.0, "earlier"))
        written = store.path.read_bytes()

        def refused(query: str) -> tuple[int, bytes] | None:
            return (422, prometheus_error("execution", "limit")) if _big_pass(query) else None

        failing = pytest.raises(PrometheusError, match="any namespace")
        with FaultProxy(three[0].url, refused) as proxy, failing:
            build_once(BuildRun(PrometheusConnection(proxy.url), end=scenarios.END),
                       test_settings(namespaces=NAMESPACES), store)
        assert store.path.read_bytes() == written

    def test_sigterm_in_the_middle_of_a_build_leaves_store_and_checkpoint_as_they_were(
        self, three: tuple[PromServer, int], tmp_path: Path
    ) -> None:
        store, checkpoint = tmp_path / "profiles.json", tmp_path / "checkpoint.json"
        FileStore(store).write(ProfileDocument({}, 1.0, "earlier"))
        written = store.read_bytes()
        with FaultProxy(three[0].url, lambda _: None, delay=0.3) as proxy:
            child = subprocess.Popen(
                [sys.executable, "-m", "webhook", "profiles", "build", "--prometheus-url", proxy.url,
                 "--profiles-path", str(store), "--checkpoint", str(checkpoint), "--step", "5m",
                 "--rate-window", "10m", "--end", str(scenarios.END), "--prometheus-max-samples", "20000"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )
            deadline = time.monotonic() + 60
            while sum(_big_pass(query) for _, query, _ in proxy.answered) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            asked = sum(_big_pass(query) for _, query, _ in proxy.answered)
            child.send_signal(signal.SIGTERM)
            child.communicate(timeout=60)
        assert asked >= 3
        assert child.returncode == -signal.SIGTERM
        assert store.read_bytes() == written
        assert not checkpoint.exists()


class TestProgress:
    def test_the_meter_counts_every_planned_query_and_the_samples_read(
        self, three: tuple[PromServer, int]
    ) -> None:
        ticks: list[tuple[int, int, int]] = []
        prom = Prometheus(three[0].url)
        settings: BuildSettings = test_settings(namespaces=NAMESPACES, max_samples=50_000)
        build_profiles(prom, settings, end=scenarios.END, meter=lambda *tick: ticks.append(tick))
        prom.close()
        assert [done for done, _, _ in ticks] == list(range(1, len(ticks) + 1))
        assert ticks[-1][0] == ticks[-1][1] > 1
        assert ticks[-1][2] > 0

    def test_the_bar_says_pieces_done_samples_read_and_time_left(self) -> None:
        stream = io.StringIO()
        meter = BuildMeter(Progress(stream, enabled=True, interval=0.0))
        meter(3, 12, 4_200_000)
        assert "3/12 pieces, 4.2 M samples read, ~" in stream.getvalue()
        assert "s left" in stream.getvalue()

    def test_on_a_terminal_the_build_draws_the_bar_and_in_a_pipe_prints_lines_only(
        self, three: tuple[PromServer, int], tmp_path: Path
    ) -> None:
        command = [sys.executable, "-m", "webhook", "profiles", "build", "--prometheus-url", three[0].url,
                   "--profiles-path", str(tmp_path / "p.json"), "--no-checkpoint", "--step", "5m",
                   "--rate-window", "10m", "--end", str(scenarios.END), "--prometheus-max-samples", "50000"]
        piped = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
        assert "\r" not in piped.stderr
        assert "slice 1/1" in piped.stderr
        controller, terminal = pty.openpty()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=terminal)
        os.close(terminal)
        drawn = b""
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        os.close(controller)
        assert child.wait(timeout=120) == 0
        assert re.search(rb"\r\[#*\.*\] \d+/\d+ pieces", drawn)
        assert b"slice 1/1" in drawn
