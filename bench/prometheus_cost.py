"""What a profile build costs Prometheus: `bench/profiles.py --prometheus-cost`.

Three ways of reading the same history, each against a freshly started Prometheus (so its memory
high-water mark, VmHWM, belongs to that run alone), measured in the same run on the same machine:

- pod-tailor: `pod-tailor profiles build` in a child process (its wall time, CPU and peak RSS);
- the per-container plan the well-known recommenders use: one query per container for its p95 CPU
  and one for its peak memory (`--plan-sample` < 1 asks a random share and scales the wall and CPU
  time up; the memory growth is per query, so a share shows it);
- the decode floor, as the issue sets it ("132 s vs ~74 s on 2 cores": the 147 s of CPU the
  build's statistics cost Prometheus one query at a time, over two cores): every statistic the big
  passes read (memory peak, sample count, start times; CPU quantile and maximum) asked once over the
  whole window, unsplit, one query at a time; the floor is their sum over the two cores;
- the raw read, for reference: every CPU and memory sample read once (`count_over_time`, two at a
  time), less than any reader of these statistics can pay.

Printed as a table, with the ratios the issue sets as goals: Prometheus' growth during pod-tailor's
build within 2x of the per-container plan's, pod-tailor at least 2x faster than that plan, and its
wall time within 1.3x of the decode floor.
"""

from __future__ import annotations

import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
from promserver import PromServer

from webhook.profiles import queries

MIB = 2**20
CPU = "container_cpu_usage_seconds_total"
MEMORY = "container_memory_working_set_bytes"


@dataclass(frozen=True)
class Cost:
    name: str
    wall: float
    queries: int
    cpu: float  # the reader's own CPU seconds (NaN: not measured)
    rss: float  # the reader's own peak RSS, MiB (NaN: not measured)
    growth: float  # Prometheus' VmHWM during the run minus before it, MiB
    note: str = ""


def vm_hwm(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _fresh(data: Path) -> PromServer:
    server = PromServer(data, extra_args=("--storage.tsdb.max-block-duration=1d",)).start()
    httpx.post(f"{server.url}/api/v1/query", data={"query": "up"}, timeout=60)  # the first query's own setup
    return server


def _hwm(server: PromServer) -> float:
    assert server.process is not None
    return vm_hwm(server.process.pid)


def pod_tailor(data: Path, *, window: str, step: int, end: str, extra: Sequence[str] = ()) -> Cost:
    server = _fresh(data)
    try:
        before = _hwm(server)
        command = [sys.executable, "-m", "webhook", "profiles", "build", "--prometheus-url", server.url,
                   "--window", window, "--step", f"{step}s", "--rate-window", f"{2 * step}s",
                   "--end", end, "--no-checkpoint", "--summary-days", "0", "--allow-shrink", *extra]
        with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile("w+") as log:
            env = dict(os.environ, POD_TAILOR_PROFILES=str(Path(tmp) / "profiles.json"))
            started = time.monotonic()
            child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.monotonic() - started
            log.seek(0)
            output = log.read()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"pod-tailor build failed:\n{output[-3000:]}")
        queries = int(output.rsplit(" using ", 1)[-1].split()[0])
        shards = next((line.split("slice(s)", 1)[1].strip() for line in output.splitlines()
                       if "slice(s)" in line and "live series" in line), "")
        own, rss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
        return Cost("pod-tailor build", wall, queries, own, rss, _hwm(server) - before, shards)
    finally:
        server.stop()


def per_container_plan(
    data: Path, *, containers: Sequence[tuple[str, str, str]], window: str, step: int, end: str,
    sample: float, concurrency: int = 2,
) -> Cost:
    """One p95-CPU and one peak-memory query per (namespace, workload, container), `concurrency` at once."""
    chosen = list(containers)
    if sample < 1.0:
        chosen = random.Random(5).sample(chosen, max(1, round(len(chosen) * sample)))
    server = _fresh(data)
    try:
        before = _hwm(server)
        usage_before = resource.getrusage(resource.RUSAGE_SELF)
        client = httpx.Client(timeout=600)

        def ask(item: tuple[str, str, str]) -> None:
            namespace, workload, container = item
            where = f'namespace="{namespace}",pod=~"{workload}-.*",container="{container}"'
            for query in (
                f"quantile_over_time(0.95, rate({CPU}{{{where}}}[{2 * step}s])[{window}:{step}s])",
                f"max_over_time({MEMORY}{{{where}}}[{window}])",
            ):
                answer = client.post(f"{server.url}/api/v1/query", data={"query": query, "time": end})
                answer.raise_for_status()

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(ask, chosen))
        wall = time.monotonic() - started
        usage = resource.getrusage(resource.RUSAGE_SELF)
        client.close()
        scale = len(containers) / len(chosen)
        cpu = (usage.ru_utime + usage.ru_stime - usage_before.ru_utime - usage_before.ru_stime) * scale
        note = f"{len(chosen)} of {len(containers)} containers asked, times x{scale:.1f}" if scale > 1 else ""
        return Cost("per-container plan", wall * scale, 2 * len(containers), cpu, float("nan"),
                    _hwm(server) - before, note)
    finally:
        server.stop()


def _statistics(window: str, step: int, recorded: str | None) -> dict[str, str]:
    """The build's statistics over the whole window, in the build's own query texts, unsplit: the CPU
    quantile (the sort, the longest), the memory ones, the CPU maximum."""
    span = queries.duration(window)

    def cpu(quantile: float) -> str:
        return queries.cpu_stats((), span=span, step=step, rate_window=2 * step, quantiles=(quantile,),
                                 recorded=recorded)

    memory = queries.memory_stats((), span=span, latest=max(300, 2 * step))
    return {"cpu quantile": cpu(0.95), "memory": memory, "cpu max": cpu(1.0)}


def _timed(
    data: Path, asked: dict[str, str], *, end: str, workers: int
) -> tuple[float, dict[str, float], float]:
    """(wall, seconds per query, Prometheus' growth) for `asked`, `workers` at a time, in order."""
    server = _fresh(data)
    try:
        before = _hwm(server)
        took: dict[str, float] = {}
        with httpx.Client(timeout=3600) as client:

            def ask(item: tuple[str, str]) -> None:
                started = time.monotonic()
                answer = client.post(f"{server.url}/api/v1/query", data={"query": item[1], "time": end})
                answer.raise_for_status()
                took[item[0]] = time.monotonic() - started

            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(ask, asked.items()))
            wall = time.monotonic() - started
        return wall, took, _hwm(server) - before
    finally:
        server.stop()


def decode_floor(data: Path, *, window: str, step: int, end: str, recorded: str | None = None) -> list[Cost]:
    """The build's statistics, each asked once over the whole window, unsplit, measured two ways:

    - one query at a time, their sum over the two cores: the issue's arithmetic ("~74 s on 2 cores"
      was 147 s of single queries over two), which assumes two queries at once run as fast as one;
    - two at a time, longest first, on the two cores: what these queries take on this machine when
      they share it as a build's two queries in flight do (each runs slower: memory bandwidth, and
      Go's collector no longer has a core to itself).
    """
    asked = _statistics(window, step, recorded)
    _, alone, growth = _timed(data, asked, end=end, workers=1)
    each = ", ".join(f"{query} {seconds:.1f} s" for query, seconds in alone.items())
    wall, shared, shared_growth = _timed(data, asked, end=end, workers=2)
    both = ", ".join(f"{query} {seconds:.1f} s" for query, seconds in shared.items())
    nan = float("nan")
    return [
        Cost("decode floor", sum(alone.values()) / 2, len(asked), nan, nan, growth,
             f"one at a time ({each}), their sum over 2 cores"),
        Cost("floor, two at a time", wall, len(asked), nan, nan, shared_growth, f"measured wall ({both})"),
    ]


def raw_read(data: Path, *, window: str, end: str) -> Cost:
    """Prometheus reading every CPU and memory sample once, two queries at once (one per core)."""
    server = _fresh(data)
    try:
        before = _hwm(server)
        client = httpx.Client(timeout=3600)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(
                lambda metric: client.post(f"{server.url}/api/v1/query", data={
                    "query": f"sum(count_over_time({metric}[{window}]))", "time": end}),
                (CPU, MEMORY),
            ))
        wall = time.monotonic() - started
        client.close()
        samples = sum(float(a.json()["data"]["result"][0]["value"][1]) for a in answers)
        return Cost("raw read", wall, 2, float("nan"), float("nan"), _hwm(server) - before,
                    f"{samples / 1e6:,.0f} M samples read once")
    finally:
        server.stop()


def report(costs: Sequence[Cost], *, scale: str) -> None:
    print(f"\n{scale}")
    print(f"  {'':20} {'wall s':>8} {'queries':>8} {'CPU s':>7} {'RSS MiB':>8} {'Prometheus +MiB':>16}  note")
    for c in costs:
        numbers = f"{c.wall:8.1f} {c.queries:8d} {c.cpu:7.1f} {c.rss:8.0f} {c.growth:16.0f}"
        print(f"  {c.name:20} {numbers}  {c.note}")
    found = {c.name: c for c in costs}
    ours, plan, floor = found["pod-tailor build"], found["per-container plan"], found["decode floor"]
    growth = ours.growth / plan.growth if plan.growth > 0 else float("inf")
    print(f"  Prometheus growth, pod-tailor / per-container plan: {growth:.2f} (goal <= 2)")
    print(f"  wall, per-container plan / pod-tailor: {plan.wall / ours.wall:.2f} (goal >= 2)")
    print(f"  wall, pod-tailor / decode floor: {ours.wall / floor.wall:.2f} (goal <= 1.3)")
    if "floor, two at a time" in found:
        shared = found["floor, two at a time"].wall
        print(f"  wall, pod-tailor / the floor's queries two at a time: {ours.wall / shared:.2f}")
    if "raw read" in found:
        print(f"  wall, pod-tailor / raw read of every sample once: {ours.wall / found['raw read'].wall:.2f}")
    print(f"  pod-tailor peak RSS {ours.rss:.0f} MiB (goal < 500)")
