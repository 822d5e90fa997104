"""pod-tailor and KRR side by side on the same Prometheus data, each from a fresh Prometheus start.

    PYTHONPATH=. .venv/bin/python bench/peers.py --keep /tmp/peers60 --resolution 60 --workloads 500 --days 7
    PYTHONPATH=. .venv/bin/python bench/peers.py --keep /tmp/peers300 --resolution 300 --workloads 200 \
        --days 14 --window-days 7

(`--prepare` only makes the history, so that the measured runs can come later on a quieter machine.)

Generates (or reuses, with `--keep`) the history of `bench/peerdata.py`, backfills it with promtool,
installs KRR (robusta-dev/krr, `krr simple`) into a bench-only virtualenv outside the repository from
a fetched source tree (`--krr-source`: a git directory or a source folder; never a dependency of
pod-tailor), serves the Deployments KRR discovers from `tests/kubefake.py`, then runs each tool
against its own freshly started Prometheus and prints, for each: wall time, its own CPU, the queries
Prometheus answered, and Prometheus' heap peak (RssAnon sampled every 0.1 s: VmHWM also counts the
file pages of every block a reader touches, which are the page cache's, not the heap's).

Then per container, from raw `query_range` answers (every point of every Pod's rate at the build's
step and rate window, on the subquery's grid; every container of `--compare N` workloads drawn at
random with seed 28, or of all of them with `--compare 0`: reading every point takes long): the
exact pooled percentile and the exact largest per-Pod percentile, at pod-tailor's resolution and at
KRR's; against them pod-tailor's stored value (exactness, the issue's 1 % / 2 % goal) and KRR's
value, the difference decomposed into window (rate window and step), aggregation (pooled or max per
Pod) and approximation.

KRR's defaults are kept (a 75 s step and rate window) except where they cannot read the data: at a
scrape interval over 37 s a 75 s window holds one sample for most steps and `rate()` returns nothing,
so its step is set to two intervals (`--timeframe_duration`), the least that reads every step.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "profiles"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package, which kubefake imports
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/profiles.py before tests/profiles/

import httpx
import orjson
from kubefake import FakeKube
from peerdata import PeerHistory
from profiles import DAY, backfill_by_day
from promserver import PromServer
from synthetic import quantile

from webhook.profiles.exact import TOLERANCE

DEFAULT_KRR = Path("/work/.mirror/robusta-dev+krr/repo")
KRR_STEP = 75  # KRR's default --timeframe_duration (1.25 min)


# --------------------------------------------------------------------------- KRR in its own venv


def ensure_krr(home: Path, source: Path) -> list[str]:
    """The command that runs KRR from `home` (a virtualenv and an unpacked source), made if missing."""
    src, venv = home / "src", home / "venv"
    if not (src / "krr.py").exists():
        src.mkdir(parents=True, exist_ok=True)
        if (source / "HEAD").exists():  # a bare git directory (the fetched mirror)
            archive = subprocess.run(["git", "--git-dir", str(source), "archive", "HEAD"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        else:
            subprocess.run(["cp", "-r", f"{source}/.", str(src)], check=True)
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", str(src / "requirements.txt")],
                       check=True)
    compiled(str(venv / "bin" / "python"), src)
    return [str(venv / "bin" / "python"), str(src / "krr.py")]


def compiled(python: str, source: Path) -> None:
    """Byte-compile a tool's own source once, as an installed package is: each measured run then
    starts from bytecode, not compiling every module (PYTHONDONTWRITEBYTECODE would make it redo so
    on every start, a second of CPU that is neither tool's)."""
    subprocess.run([python, "-m", "compileall", "-q", str(source)], check=True, stdout=subprocess.DEVNULL)


# --------------------------------------------------------------------------- measuring one reader


def rss_anon(pid: int) -> float:
    """MiB of anonymous resident memory: the heap, without the mapped blocks' page cache."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return math.nan


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (every thread), seconds; nan once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return math.nan
    return (int(fields[11]) + int(fields[12])) / _TICKS  # fields 14 and 15 of proc(5), after the name


_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Tick:
    at: float  # seconds after the sampler began
    heap: float  # Prometheus' RssAnon, MiB
    prom_cpu: float  # Prometheus' CPU seconds so far
    reader_cpu: float  # the reader's CPU seconds so far (nan before it starts)


class Sampler(threading.Thread):
    """Prometheus' RssAnon and CPU (and the reader's CPU, once `reader` is set) every `every` seconds
    while a reader runs: `peak`, `start` and the whole `ticks` timeline (what each phase cost)."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.reader = 0  # the reader's pid, once started
        self.start_mib = rss_anon(pid)
        self.start_cpu = cpu_seconds(pid)
        self.peak = self.start_mib
        self.peak_at = 0.0  # seconds after the start
        self.began = time.monotonic()
        self.ticks: list[Tick] = []
        self.stopped = threading.Event()

    def sample(self) -> Tick:
        tick = Tick(time.monotonic() - self.began, rss_anon(self.pid), cpu_seconds(self.pid),
                    cpu_seconds(self.reader) if self.reader else math.nan)
        self.ticks.append(tick)
        if tick.heap > self.peak:
            self.peak, self.peak_at = tick.heap, tick.at
        return tick

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            self.sample()

    def stop(self) -> float:
        self.stopped.set()
        self.join()
        self.sample()
        return self.peak


def answered(url: str) -> int:
    """Queries Prometheus has answered (its own HTTP request counter for both query endpoints)."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    total = 0
    for line in text.splitlines():
        if line.startswith("prometheus_http_requests_total{") and (
            'handler="/api/v1/query"' in line or 'handler="/api/v1/query_range"' in line
        ):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


@dataclass
class Run:
    name: str
    wall: float
    cpu: float
    queries: int
    heap_peak: float  # Prometheus RssAnon peak, MiB
    heap_start: float
    output: str
    peak_at: float = 0.0  # seconds into the run
    peak_during: str = ""  # the reader's last line of output before the peak
    prom_cpu: float = 0.0  # Prometheus' own CPU seconds during the run
    load: tuple[float, float] = (math.nan, math.nan)  # the machine's 1-minute load before and after
    phases: list[Phase] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Phase:
    """One stretch of a build, between two of its progress lines: what it cost each side."""

    name: str
    start: float
    end: float
    prom_cpu: float
    reader_cpu: float
    heap_peak: float
    prom_idle: float = 0.0  # seconds in which Prometheus used under a tenth of a core (waiting for us)

    def bound(self) -> str:
        """Which side kept it busy: Prometheus (it had its cores), the reader (one core, the GIL) or
        neither (waiting on each other: too few queries in flight)."""
        wall = max(self.end - self.start, 1e-9)
        if self.prom_cpu / wall >= 1.5:
            return "Prometheus-bound"
        if self.reader_cpu / wall >= 0.8:
            return "client-bound"
        return "latency-bound" if (self.prom_cpu + self.reader_cpu) / wall < 1.2 else "mixed"


# pod-tailor's phases, each ending at the first progress line (after the last phase's) holding its text.
PHASES = (
    ("small queries", "big passes in"),
    ("big passes", "series values from"),
    ("follow-ups", "start-up:"),
    ("exact top fetch", "containers from"),
    ("summaries", "summaries:"),
    ("strategy, store", None),
)


def phases(lines: list[tuple[float, str]], ticks: list[Tick], *, began: float, ended: float) -> list[Phase]:
    """The build's phases from its progress lines' arrival times and the sampler's timeline."""
    if not any(marker and marker in line for _, line in lines for _, marker in PHASES):
        return []  # a reader without pod-tailor's progress lines (KRR, -q)
    out, start, rest = [], began, list(lines)
    for name, marker in PHASES:
        end = ended
        if marker is not None:
            hit = next((i for i, (_, line) in enumerate(rest) if marker in line), None)
            if hit is None:
                continue
            end, rest = rest[hit][0], rest[hit + 1:]
        inside = [t for t in ticks if start <= t.at <= end]
        if len(inside) >= 2:
            first, last = inside[0], inside[-1]
            began_cpu = 0.0 if math.isnan(first.reader_cpu) else first.reader_cpu  # started inside it
            reader = last.reader_cpu - began_cpu
            idle = sum(b.at - a.at for a, b in itertools.pairwise(inside)
                       if b.prom_cpu - a.prom_cpu < 0.1 * (b.at - a.at))
            out.append(Phase(name, start, end, last.prom_cpu - first.prom_cpu,
                             0.0 if math.isnan(reader) else reader, max(t.heap for t in inside), idle))
        start = end
    return out


def measured(name: str, data: Path, command: list[str], env: dict[str, str]) -> Run:
    server = PromServer(data, extra_args=("--storage.tsdb.max-block-duration=1d",)).start()
    try:
        assert server.process is not None
        httpx.post(f"{server.url}/api/v1/query", data={"query": "up"}, timeout=60)
        time.sleep(2)
        before = answered(server.url)
        load = os.getloadavg()[0]
        sampler = Sampler(server.process.pid)
        sampler.start()
        started = time.monotonic()
        child = subprocess.Popen([part.replace("{url}", server.url) for part in command],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
        sampler.reader = child.pid
        lines: list[tuple[float, str]] = []  # each output line and when it came: what ran at the peak
        assert child.stdout is not None
        for line in child.stdout:
            lines.append((time.monotonic() - sampler.began, line))
        ended = time.monotonic() - sampler.began
        sampler.sample()  # the reader's last CPU figure, before it is reaped
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - started
        peak = sampler.stop()
        output = "".join(line for _, line in lines)
        during = [line.strip() for at, line in lines if at <= sampler.peak_at][-1:] or ["(before any output)"]
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{name} failed:\n{output[-4000:]}")
        prom_cpu = cpu_seconds(server.process.pid) - sampler.start_cpu
        return Run(name, wall, usage.ru_utime + usage.ru_stime, answered(server.url) - before - 0, peak,
                   sampler.start_mib, output, sampler.peak_at, during[0], prom_cpu,
                   (load, os.getloadavg()[0]),
                   phases(lines, sampler.ticks, began=started - sampler.began, ended=ended))
    finally:
        server.stop()


# --------------------------------------------------------------------------- the exact statistics


def rates(url: str, workloads: list[Any], *, end: float, window: int, step: int, rate_window: int,
          krr: bool = False) -> dict[tuple[str, str, str], dict[str, list[float]]]:
    """(namespace, workload, container) -> pod -> every usage point in the window, from query_range
    (one per workload: every point of its Pods at `step`).

    The grid is the subquery's: multiples of `step` in (end - window, end]. `krr`: KRR's own
    expression (`max by (container, pod, job)` of the rate; the same points on this data).
    """
    first = (math.floor((end - window) / step) + 1) * step
    last = math.floor(end / step) * step
    out: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(dict)
    with httpx.Client(timeout=600) as client:
        for wl in workloads:
            pods = "|".join(pod.name for pod in wl.pods)
            query = (f'rate(container_cpu_usage_seconds_total{{namespace="{wl.namespace}",pod=~"{pods}",'
                     f'container!=""}}[{rate_window}s])')
            answer = client.post(f"{url}/api/v1/query_range",
                                 data={"query": query, "start": first, "end": last, "step": step})
            answer.raise_for_status()
            for series in orjson.loads(answer.content)["data"]["result"]:
                labels = series["metric"]
                values = [max(float(v), 0.0) for _, v in series["values"]]
                out[(wl.namespace, wl.name, labels["container"])].setdefault(labels["pod"], []).extend(values)
    del krr
    return out


def statistics_of(points: dict[str, list[float]], q: float) -> tuple[float, float]:
    """(pooled q-quantile, largest per-Pod q-quantile) of one container's points."""
    pooled = [v for values in points.values() for v in values]
    per_pod = max(quantile(values, q) for values in points.values() if values)
    return quantile(pooled, q), per_pod


# --------------------------------------------------------------------------- main


def _pod_tailor(store: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    document = json.loads(store.read_text())
    out = {}
    for key, entry in document["workloads"].items():
        namespace, _, name = key.split("/", 2)
        for container, profile in entry["containers"].items():
            if "cpu" in profile:
                out[(namespace, name, container)] = profile
    return out


def _krr(path: Path) -> dict[tuple[str, str, str], float]:
    out = {}
    for scan in json.loads(path.read_text())["scans"]:
        obj = scan["object"]
        value = scan["recommended"]["requests"]["cpu"]["value"]
        if isinstance(value, int | float) and not math.isnan(value):
            out[(obj["namespace"], obj["name"], obj["container"])] = float(value)
    return out


def _percentiles(values: list[float]) -> str:
    if not values:
        return "none"
    ordered = sorted(values)
    pick = {p: ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] for p in (10, 50, 90)}
    return f"p10 {pick[10]:+.2%}, median {pick[50]:+.2%}, p90 {pick[90]:+.2%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, required=True, help="history directory (made or reused)")
    parser.add_argument("--resolution", type=int, default=60, help="scrape interval, seconds [60]")
    parser.add_argument("--workloads", type=int, default=500)
    parser.add_argument("--days", type=int, default=7, help="days of history backfilled [7]")
    parser.add_argument("--window-days", type=int, default=7, help="days both tools read [7]")
    parser.add_argument("--krr-source", type=Path, default=DEFAULT_KRR,
                        help="KRR's source: a fetched git directory or a folder [%(default)s]")
    parser.add_argument("--krr-home", type=Path, default=Path(tempfile.gettempdir()) / "pod-tailor-krr",
                        help="where KRR's virtualenv lives, outside the repository [%(default)s]")
    parser.add_argument("--only", choices=("krr", "pod-tailor"), help="run one tool only")
    parser.add_argument("--prepare", action="store_true", help="make the history and stop")
    parser.add_argument("--compare", type=int, default=150, metavar="N",
                        help="compare per container on N workloads drawn at random "
                             "(seed 28; 0: all; -1: none) [150]")
    parser.add_argument("--pod-tailor-args", default="", metavar="ARGS",
                        help="more options for `profiles build`, e.g. '--prometheus-max-samples 250000'")
    args = parser.parse_args()
    data = args.keep / "data"
    if not (data.exists() and any(data.iterdir())):
        end = (int(time.time()) // args.resolution) * args.resolution - args.resolution
        start = end - args.days * DAY
        history = PeerHistory.build(workloads=args.workloads, containers=3, replicas=3, start=start, end=end,
                                    step=args.resolution)
        began = time.monotonic()
        samples = backfill_by_day(history, data, start=start, end=end)  # type: ignore[arg-type]
        (args.keep / "end").write_text(str(end))
        (args.keep / "meta.json").write_text(json.dumps({
            "resolution": args.resolution, "days": args.days, "workloads": args.workloads,
            "samples": samples}))
        print(f"backfilled {samples:,} samples in {time.monotonic() - began:.0f} s")
    if args.prepare:
        return 0
    meta = json.loads((args.keep / "meta.json").read_text())
    end = int((args.keep / "end").read_text())
    step, days = meta["resolution"], meta["days"]
    history = PeerHistory.build(workloads=meta["workloads"], containers=3, replicas=3, start=end - days * DAY,
                                end=end, step=step)
    print(f"{meta['workloads']} Deployments x 3 containers x 3 replicas, {days} d at {step} s "
          f"({meta['samples']:,} samples); both tools read {args.window_days} d; the history ends "
          f"{(time.time() - end) / 3600:.1f} h ago")
    window = args.window_days * DAY
    runs: list[Run] = []
    store = args.keep / "pod-tailor.json"
    krr_out = args.keep / "krr.json"
    krr_step = KRR_STEP if 2 * step <= KRR_STEP else 2 * step
    if args.only != "pod-tailor":
        krr = ensure_krr(args.krr_home, args.krr_source)
        with FakeKube(token="") as kube:
            namespaces = sorted({wl.namespace for wl in history.workloads})
            for namespace in namespaces:
                kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            for deployment in history.deployments():
                kube.put(deployment)
            kubeconfig = kube.write_kubeconfig(args.keep / "kubeconfig")
            command = [*krr, "simple", "-p", "{url}", "-k", str(kubeconfig), "-f", "json", "--fileoutput",
                       str(krr_out), "--history_duration", str(window // 3600), "--timeframe_duration",
                       f"{krr_step / 60:g}", "--cpu-min", "1", "--mem-min", "1", "-q", "-r", "Deployment"]
            runs.append(measured("KRR simple", data, command, dict(os.environ)))
    if args.only != "krr":
        compiled(sys.executable, Path(__file__).resolve().parents[1] / "webhook")
        command = [sys.executable, "-m", "webhook", "profiles", "build", "--prometheus-url", "{url}",
                   "--window", f"{args.window_days}d", "--end", str(end), "--no-checkpoint", "--allow-shrink",
                   "--profiles-path", str(store), *shlex.split(args.pod_tailor_args)]
        env = dict(os.environ, POD_TAILOR_PROFILES=str(store))
        store.unlink(missing_ok=True)
        runs.append(measured("pod-tailor build", data, command, env))
    print(f"\n  {'':18} {'wall s':>7} {'CPU s':>7} {'queries':>8} {'Prometheus heap peak MiB':>25} "
          f"{'Prometheus CPU s':>17} {'load':>9}")
    for run in runs:
        print(f"  {run.name:18} {run.wall:7.1f} {run.cpu:7.1f} {run.queries:8d} "
              f"{run.heap_peak:14.0f} (from {run.heap_start:.0f}) {run.prom_cpu:17.1f} "
              f"{run.load[0]:4.1f}-{run.load[1]:.1f}")
    for run in runs:
        print(f"  {run.name}: heap peak at {run.peak_at:.1f} s, after: {run.peak_during[:110]}")
    for run in runs:
        if not run.phases:
            continue
        print(f"\n  {run.name} by phase (from its progress lines; CPU per wall second in brackets):")
        print(f"    {'':17} {'from s':>7} {'wall s':>7} {'Prometheus CPU s':>20} {'own CPU s':>14} "
              f"{'heap peak MiB':>14} {'Prometheus idle s':>18}")
        for phase in run.phases:
            wall = max(phase.end - phase.start, 1e-9)
            print(f"    {phase.name:17} {phase.start:7.1f} {wall:7.1f} {phase.prom_cpu:11.1f} "
                  f"({phase.prom_cpu / wall:4.2f}) {phase.reader_cpu:7.1f} ({phase.reader_cpu / wall:4.2f}) "
                  f"{phase.heap_peak:14.0f} {phase.prom_idle:18.1f}  {phase.bound()}")
    found = {run.name: run for run in runs}
    if len(found) == 2:
        ours, theirs = found["pod-tailor build"], found["KRR simple"]
        print(f"  heap peak pod-tailor / KRR: {ours.heap_peak / theirs.heap_peak:.2f} (goal <= 1.5); "
              f"KRR / pod-tailor: wall {theirs.wall / ours.wall:.1f}x, CPU {theirs.cpu / ours.cpu:.1f}x "
              "(goal >= 3)")
    for run in runs:
        tail = [line for line in run.output.splitlines()
                if any(word in line for word in ("exact CPU", "reading at", "big passes", "series values",
                                                 "summaries"))]
        for line in tail:
            print(f"  {run.name}: {line.strip()}")
    if store.exists() and args.compare >= 0:
        compare(data, history, store=store, krr_out=krr_out if krr_out.exists() else None, end=end,
                window=window, krr_step=krr_step, sample=args.compare)
    return 0


def defaults(points: dict[tuple[str, str, str], dict[str, list[float]]], q: float) -> None:
    """What each aggregate does on this fleet: the requests it adds up to, and the throttling exposure
    of each container's busiest Pod (its share of points above the request)."""
    sums = {"pooled": 0.0, "maxPerPod": 0.0}
    exposure: dict[str, list[float]] = {"pooled": [], "maxPerPod": []}
    for per_pod in points.values():
        pooled, largest = statistics_of(per_pod, q)
        for name, request in (("pooled", pooled), ("maxPerPod", largest)):
            sums[name] += request
            exposure[name].append(max(sum(v > request for v in values) / len(values)
                                      for values in per_pod.values() if values))
    print(f"\n  the defaults on this fleet ({len(points)} containers, p{q * 100:g}):")
    for name in sums:
        ordered = sorted(exposure[name])
        middle, high = ordered[len(ordered) // 2], ordered[int(0.9 * (len(ordered) - 1))]
        print(f"    {name:9}: requests add up to {sums[name]:.1f} cores; the busiest Pod's points above its "
              f"request: median {middle:.1%}, p90 {high:.1%}")


def compare(data: Path, history: PeerHistory, *, store: Path, krr_out: Path | None, end: int, window: int,
            krr_step: int, sample: int = 0) -> None:
    ours = _pod_tailor(store)
    some = next(iter(ours.values()))["evidence"]
    from webhook.profiles.queries import duration

    step, rate_window = duration(some["cpuStep"]), duration(some["cpuRateWindow"])
    q = some["cpuPercentile"] / 100
    workloads = list(history.workloads)
    if 0 < sample < len(workloads):
        workloads = random.Random(28).sample(workloads, sample)  # every container of each one drawn
    print(f"\n  compared on {len(workloads)} of {len(history.workloads)} workloads"
          + (" drawn at random (seed 28)" if len(workloads) < len(history.workloads) else ""))
    server = PromServer(data, extra_args=("--storage.tsdb.max-block-duration=1d",)).start()
    try:
        began = time.monotonic()
        points = rates(server.url, workloads, end=end, window=window, step=step, rate_window=rate_window)
        krr_points = rates(server.url, workloads, end=time.time(), window=window, step=krr_step,
                           rate_window=krr_step) if krr_out is not None else {}
        took = time.monotonic() - began
    finally:
        server.stop()
    exact_error: list[float] = []
    for key, profile in ours.items():
        if key not in points:
            continue
        pooled, _ = statistics_of(points[key], q)
        value = profile["evidence"].get("cpuValue")
        if pooled > 0 and value is not None:
            exact_error.append(value / pooled - 1)
    print(f"\n  exactness, pod-tailor's stored CPU statistic against the exact pooled p{q * 100:g} from raw "
          f"query_range answers ({len(exact_error)} containers with data, step {step} s, rate window "
          f"{rate_window} s; {took:.0f} s to read them):")
    print(f"    {_percentiles(exact_error)}; largest {max(map(abs, exact_error), default=0):.2%} "
          f"(goal: median within 1 %, p10/p90 within 2 %; bracketed within {TOLERANCE:.1%})")
    defaults(points, q)
    if krr_out is None:
        return
    theirs = _krr(krr_out)
    window_d, aggregation, krr_vs_exact, total = [], [], [], []
    for key, value in theirs.items():
        if key not in points or key not in krr_points or key not in ours:
            continue
        pooled, per_pod = statistics_of(points[key], q)
        _, krr_exact = statistics_of(krr_points[key], q)
        stored = float(ours[key]["evidence"]["cpuValue"])
        if min(pooled, per_pod, krr_exact, stored) <= 0:
            continue
        aggregation.append(per_pod / pooled - 1)
        window_d.append(krr_exact / per_pod - 1)
        krr_vs_exact.append(value / krr_exact - 1)
        total.append(stored / value - 1)
    print(f"\n  per container, KRR's CPU request against pod-tailor's ({len(total)} containers):")
    print(f"    pod-tailor / KRR - 1: {_percentiles(total)}")
    print("    decomposed (each the ratio - 1 of the exact statistics from raw answers):")
    print("      aggregation, max of per-Pod p95 / pooled p95 (same resolution): "
          f"{_percentiles(aggregation)}")
    print(f"      window, KRR's {krr_step} s rate at a {krr_step} s step / pod-tailor's {rate_window} s rate "
          f"at a {step} s step (both max per Pod): {_percentiles(window_d)}")
    print(f"      approximation, KRR's value / its exact statistic: {_percentiles(krr_vs_exact)}")
    median = statistics.median(total) if total else math.nan
    print(f"    median pod-tailor / KRR - 1: {median:+.2%}")


if __name__ == "__main__":
    sys.exit(main())
