"""Profile build at cluster scale against a real, backfilled Prometheus; profile lookup at admission.

Generates `--workloads` Deployments x `--containers` containers x `--replicas` replicas over `--days`
at `--resolution` seconds, with churn (every Pod replaced every ~2 days, a new ReplicaSet hash every
~5 days), backfills it day by day with promtool (one-day blocks), starts Prometheus with its default
limits, then times a first `pod-tailor profiles build` and the next one (which reads the past days
from the first one's checkpoint) in child processes (their own peak RSS) and prints the numbers of
queries. Finally it times `ProfileSnapshot.for_workload` with 1,000 and 100,000 profiles
loaded (O(1): the ratio should be about 1). Targets: build under 60 s, build RSS under 500 MiB.

    .venv/bin/python bench/profiles.py                       # 2,000 x 3 x 3, 14 days at 5 minutes
    .venv/bin/python bench/profiles.py --resolution 60 --recorded --keep DIR --prepare
    .venv/bin/python bench/profiles.py --resolution 60 --recorded --keep DIR --slices 14
    .venv/bin/python bench/profiles.py --prometheus-cost --days 2               # what it costs Prometheus
    .venv/bin/python bench/profiles.py --prometheus-cost --workloads 20000 --hours 6 --plan-sample 0.1

At 1 minute the history is 1.45 G samples (~120 GiB of OpenMetrics, never all on disk at once: each
day's text is deleted once promtool has turned it into a block); the backfill took 64 min here.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "profiles"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests package, which promserver imports

from promserver import PromServer

from webhook.core.model.profile import Evidence, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import ProfileSnapshot
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry, load_snapshot

DAY = 86_400
MIB = 2**20
SAFE = "bcdfghjklmnpqrstvwxz2456789"
POD_LIFE = 2 * DAY
RS_LIFE = 5 * DAY
RECORDED = "node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate"
HPA_INFO = "kube_horizontalpodautoscaler_info"
HPA_MAX = "kube_horizontalpodautoscaler_spec_max_replicas"
HPA_TARGET = "kube_horizontalpodautoscaler_spec_target_metric"
HPA_ON_MEMORY = 5  # every 5th HPA scales on memory as well as cpu; the others on cpu only


def _name(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(SAFE) for _ in range(length))


def _pods(
    rng: random.Random, workload: str, *, start: int, end: int, replicas: int, step: int
) -> list[tuple[str, int, int]]:
    """(pod name, first sample, last sample) for every Pod the Deployment had, with churn."""
    pods = []
    rs_start = start
    while rs_start < end:
        rs_end = min(end, rs_start + RS_LIFE)
        rs = f"{workload}-{_name(rng, 9)}"
        for replica in range(replicas):
            t = rs_start + replica * step
            while t < rs_end:
                life = int(POD_LIFE * (0.7 + 0.6 * rng.random()))
                stop = min(rs_end, t + life)
                pods.append((f"{rs}-{_name(rng, 5)}", t - t % step + step // 2, stop - stop % step))
                t = stop
        rs_start = rs_end
    return pods


def _memory_value(base: float, t: int) -> int:
    """A working set slowly waving around `base` bytes."""
    return int(base * (0.9 + 0.1 * math.sin(t / 13_751.0))) + t % 7919 * 64


def _cores(level: float, t: int) -> float:
    """A diurnal CPU usage with deterministic jitter."""
    phase = math.sin(2 * math.pi * (t % DAY) / DAY)
    jitter = 0.2 * ((t * 2654435761) % 997) / 997
    return level * (1.0 + 0.4 * phase + jitter)


@dataclass
class History:
    """The synthetic cluster: every Deployment's Pods with churn; CPU counters carried across chunks."""

    plan: list[tuple[str, float, float, list[tuple[str, int, int]]]]
    containers: int
    step: int
    families: list[str]
    counters: dict[tuple[str, str], float] = field(default_factory=dict)
    hpa_share: float = 0.0  # this share of the workloads (every n-th) has an HPA: kube-state-metrics' series

    @classmethod
    def build(cls, *, workloads: int, containers: int, replicas: int, start: int, end: int, step: int,
              recorded: bool, hpa_share: float = 0.0) -> History:
        rng = random.Random(42)
        plan = []
        for w in range(workloads):
            namespace = f"team-{w % 40:02d}"
            name = f"svc-{w:04d}"
            level = 0.05 + 2.0 * rng.random() ** 2
            memory = (64 + 2000 * rng.random() ** 2) * MIB
            pods = _pods(rng, name, start=start, end=end, replicas=replicas, step=step)
            plan.append((namespace, level, memory, pods))
        families = ["container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                    "container_start_time_seconds"] + ([RECORDED] if recorded else [])
        return cls(plan, containers, step, families, hpa_share=hpa_share)

    def write(self, out: IO[str], *, lo: int, hi: int) -> int:
        """Write the samples in [lo, hi) as one OpenMetrics file; returns how many.

        Chunks must be written in time order: each counter continues where the previous chunk left it.
        """
        step, samples = self.step, 0
        for family in self.families:
            kind = "counter" if family.endswith("_total") else "gauge"
            out.write(f"# TYPE {family.removesuffix('_total')} {kind}\n")
            for namespace, level, memory, pods in self.plan:
                for c in range(self.containers):
                    container = ("app", "proxy", "log")[c % 3] + ("" if c < 3 else str(c))
                    share = 1.0 if c == 0 else 0.2
                    for pod, first, last in pods:
                        begin = max(first, first + -(-(lo - first) // step) * step)
                        times = range(begin, min(last, hi - 1) + 1, step)
                        if not times:
                            continue
                        prefix = f'{family}{{namespace="{namespace}",pod="{pod}",container="{container}"}} '
                        if family == "container_start_time_seconds":
                            started = str(first - step // 2)
                            out.write("".join(f"{prefix}{started} {t}\n" for t in times))
                        elif family == "container_memory_working_set_bytes":
                            base = memory * share
                            out.write("".join(f"{prefix}{_memory_value(base, t)} {t}\n" for t in times))
                        elif family == RECORDED:
                            out.write("".join(f"{prefix}{_cores(level * share, t):.4f} {t}\n" for t in times))
                        else:
                            counter = self.counters.get((pod, container), 1000.0)
                            parts = []
                            for t in times:
                                counter += _cores(level * share, t) * step
                                parts.append(f"{prefix}{counter:.4f} {t}\n")
                            self.counters[(pod, container)] = counter
                            out.write("".join(parts))
                        samples += len(times)
        samples += self.write_hpas(out, lo=lo, hi=hi, eof=False)
        out.write("# EOF\n")
        return samples

    def write_hpas(
        self, out: IO[str], *, lo: int, hi: int, eof: bool = True, metrics_only: bool = False
    ) -> int:
        """kube-state-metrics' series of the HPAs (every n-th workload's, for `hpa_share`) in [lo, hi):
        their targets, max replicas and the metrics they scale on (`metrics_only`: just those)."""
        every = round(1 / self.hpa_share) if self.hpa_share > 0 else 0
        chosen = [(ns, pods[0][0].rsplit("-", 2)[0]) for w, (ns, _, _, pods) in enumerate(self.plan)
                  if every and w % every == 0]
        times = range(lo - lo % self.step + self.step // 2, hi, self.step)
        written = 0
        out.write(f"# TYPE {HPA_TARGET} gauge\n")
        for index, (namespace, name) in enumerate(chosen):
            for metric in ("cpu", "memory") if index % HPA_ON_MEMORY == 0 else ("cpu",):
                labels = (f'namespace="{namespace}",horizontalpodautoscaler="{name}",metric_name="{metric}",'
                          'metric_target_type="utilization"')
                out.write("".join(f"{HPA_TARGET}{{{labels}}} 80 {t}\n" for t in times))
                written += len(times)
        for family, value in () if metrics_only else ((HPA_INFO, 1), (HPA_MAX, 10)):
            out.write(f"# TYPE {family} gauge\n")
            for namespace, name in chosen:
                labels = f'namespace="{namespace}",horizontalpodautoscaler="{name}"'
                if family == HPA_INFO:
                    labels += (',scaletargetref_api_version="apps/v1",scaletargetref_kind="Deployment",'
                               f'scaletargetref_name="{name}"')
                out.write("".join(f"{family}{{{labels}}} {value} {t}\n" for t in times))
                written += len(times)
        if eof:
            out.write("# EOF\n")
        return written


def backfill_hpas(history: History, data: Path, *, start: int, end: int, metrics_only: bool = False) -> int:
    """Add the HPA series to an existing history (one more set of blocks beside the days')."""
    path = data.parent / "chunks" / "hpas.om"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        samples = history.write_hpas(out, lo=start, hi=end + 1, metrics_only=metrics_only)
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                    str(path), str(data)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path.unlink()
    return samples


def backfill_by_day(history: History, data: Path, *, start: int, end: int, parallel: int = 2) -> int:
    """Write one OpenMetrics file per UTC day and turn each into a one-day block with promtool.

    The text of 14 days at 1 minute is ~120 GiB, more than the disk holds, so days are written one at
    a time while up to `parallel` promtool processes turn earlier days into blocks, each file deleted
    once its block exists. Blocks of one day do not overlap, so Prometheus loads them as they are.
    """
    scratch = data.parent / "chunks"
    scratch.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    running: list[tuple[subprocess.Popen[bytes], Path]] = []

    def reap(keep: int) -> None:
        while len(running) > keep:
            for item in list(running):
                if item[0].poll() is not None:
                    if item[0].returncode != 0:
                        raise SystemExit(f"promtool failed on {item[1]}")
                    item[1].unlink()
                    running.remove(item)
            time.sleep(0.2)

    samples = 0
    for lo in range(start - start % DAY, end, DAY):
        path = scratch / f"day-{lo}.om"
        with path.open("w", buffering=1 << 22) as out:
            samples += history.write(out, lo=max(lo, start), hi=min(lo + DAY, end + 1))
        reap(parallel - 1)
        command = ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                   str(path), str(data)]
        quiet = subprocess.DEVNULL
        running.append((subprocess.Popen(command, stdout=quiet, stderr=quiet), path))
        print(f"  {time.strftime('%H:%M:%S')} day {time.strftime('%Y-%m-%d', time.gmtime(lo))}: "
              f"{samples:,} samples so far", flush=True)
    reap(0)
    return samples


def _peak_rss_of(args: list[str], env: dict[str, str]) -> tuple[int, float, str]:
    """Run a child, return (exit code, its own peak RSS in MiB, its stdout+stderr)."""
    with tempfile.TemporaryFile("w+") as log:
        child = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        return child.returncode, usage.ru_maxrss / 1024, log.read()


def _vm_hwm(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def lookup_ns(count: int, *, rounds: int = 1_000_000) -> tuple[float, float]:
    """Nanoseconds per `for_workload` with `count` profiles loaded, and seconds to load them from JSON."""
    evidence = Evidence("14d", 20_160, 336.0, 95.0, 0.15, 0.93)
    rec = Recommendation(Decimal("0.25"), Decimal(256 * MIB), evidence)
    keys = [WorkloadKey(f"team-{i % 40:02d}", "Deployment", f"svc-{i:06d}") for i in range(count)]
    document = ProfileDocument({k: WorkloadEntry({"app": rec}) for k in keys}, time.time(), "bench")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "profiles.json"
        FileStore(path).write(document)
        started = time.perf_counter()
        snapshot: ProfileSnapshot = load_snapshot(path)
        load_seconds = time.perf_counter() - started
    rng = random.Random(7)
    # Fresh key objects, as `pod_workload` builds one per admission request (no identity shortcut).
    probes = [WorkloadKey(k.namespace, k.kind, k.name) for k in (rng.choice(keys) for _ in range(1000))]
    lookup = snapshot.for_workload
    best = math.inf
    for _ in range(5):
        started = time.perf_counter_ns()
        for _ in range(rounds // 1000):
            for key in probes:
                lookup(key)
        best = min(best, (time.perf_counter_ns() - started) / rounds)
    return best, load_seconds


def _prometheus_cost(args: argparse.Namespace, data: Path, *, window: str, end: str) -> int:
    import prometheus_cost as cost

    names = [("app", "proxy", "log")[c % 3] + ("" if c < 3 else str(c)) for c in range(args.containers)]
    containers = [(f"team-{w % 40:02d}", f"svc-{w:04d}", name)
                  for w in range(args.workloads) for name in names]
    extra = ["--slices", str(args.slices)] + (["--cpu-rate-metric", RECORDED] if args.recorded else [])
    costs = [
        cost.pod_tailor(data, window=window, step=args.resolution, end=end, extra=extra),
        cost.per_container_plan(data, containers=containers, window=window, step=args.resolution, end=end,
                                sample=args.plan_sample),
        *cost.decode_floor(data, window=window, step=args.resolution, end=end,
                           recorded=RECORDED if args.recorded else None),
        cost.raw_read(data, window=window, end=end),
    ]
    cost.report(costs, scale=f"{args.workloads:,} workloads x {args.containers} containers, {window}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--containers", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--hours", type=int, default=0, help="a window of this many hours instead of --days")
    parser.add_argument(
        "--prometheus-cost", action="store_true",
        help="measure what the build costs Prometheus (bench/prometheus_cost.py) against the per-container"
        " plan and the decode floor, each from a fresh Prometheus, instead of the build and next build",
    )
    parser.add_argument("--plan-sample", type=float, default=1.0,
                        help="share of the containers the per-container plan asks (times scaled up) [1]")
    parser.add_argument("--resolution", type=int, default=300, help="seconds between samples [300]")
    parser.add_argument(
        "--hpa-share", type=float, default=0.25,
        help="share of the workloads an HPA scales (kube-state-metrics' HPA series; added to a kept"
        " history that lacks them) [0.25]",
    )
    parser.add_argument("--keep", type=Path, help="keep (or reuse) the backfilled data here")
    parser.add_argument("--skip-build", action="store_true", help="only the lookup measurement")
    parser.add_argument("--prepare", action="store_true", help="only backfill the history into --keep")
    parser.add_argument("--slices", type=int, default=0, help="passed to profiles build --slices [0: auto]")
    parser.add_argument(
        "--no-checkpoint", action="store_true",
        help="one build without a checkpoint (cut evenly) instead of a full build and the next one",
    )
    parser.add_argument(
        "--recorded", action="store_true",
        help="also backfill kube-prometheus' recorded CPU rate and build with --cpu-rate-metric",
    )
    args = parser.parse_args()
    step = args.resolution
    span = args.hours * 3600 if args.hours else args.days * DAY
    window = f"{args.hours}h" if args.hours else f"{args.days}d"
    print(f"workloads {args.workloads} x containers {args.containers} x replicas {args.replicas}, "
          f"{window} at {step}s, Pods replaced every ~2 days, new ReplicaSet every 5 days")
    if not args.skip_build:
        root = args.keep or Path(tempfile.mkdtemp(prefix="pod-tailor-bench-"))
        data = root / "data"
        if not (data.exists() and any(data.iterdir())):
            end = (int(time.time()) // step) * step - step
            start = end - span
            started = time.monotonic()
            history = History.build(workloads=args.workloads, containers=args.containers,
                                    replicas=args.replicas, start=start, end=end, step=step,
                                    recorded=args.recorded, hpa_share=args.hpa_share)
            samples = backfill_by_day(history, data, start=start, end=end)
            (root / "end").write_text(str(end))
            (root / "hpas").write_text(str(args.hpa_share))
            (root / "hpa-metrics").write_text(str(HPA_ON_MEMORY))
            print(f"generated and backfilled {samples:,} samples in {time.monotonic() - started:.0f}s "
                  "(one-day blocks, promtool)")
            if args.prepare:
                return 0
        else:
            age = (time.time() - float((root / "end").read_text())) / 3600
            print(f"reusing the history in {data}, which ends {age:.1f} h ago")
            # Kept before HPAs were written, or before the metrics they scale on were.
            if args.hpa_share > 0 and not (root / "hpa-metrics").exists():
                end = int((root / "end").read_text())
                history = History.build(workloads=args.workloads, containers=args.containers,
                                        replicas=args.replicas, start=end - span, end=end, step=step,
                                        recorded=args.recorded, hpa_share=args.hpa_share)
                added = backfill_hpas(history, data, start=end - span, end=end,
                                      metrics_only=(root / "hpas").exists())
                (root / "hpas").write_text(str(args.hpa_share))
                (root / "hpa-metrics").write_text(str(HPA_ON_MEMORY))
                print(f"added {added:,} samples of HPA series ({args.hpa_share:.0%} of the workloads)")
        if args.prometheus_cost:
            return _prometheus_cost(args, data, window=window, end=(root / "end").read_text())
        # No compaction of the one-day blocks during the build (a Prometheus with the default 15-day
        # retention keeps blocks of at most 36 h anyway).
        with PromServer(data, extra_args=("--storage.tsdb.max-block-duration=1d",)) as server:
            assert server.process is not None
            store = root / "profiles.json"
            env = dict(os.environ, POD_TAILOR_PROFILES=str(store))
            command = [sys.executable, "-m", "webhook", "profiles", "build", "--prometheus-url", server.url,
                       "--window", f"{args.days}d", "--step", f"{step}s", "--rate-window", f"{2 * step}s",
                       "--startup-window", str(max(300, 4 * step)), "--end", (root / "end").read_text()]
            if args.recorded:
                command += ["--cpu-rate-metric", RECORDED]
            command += ["--slices", str(args.slices)]
            checkpoint = root / "checkpoint.json"
            checkpoint.unlink(missing_ok=True)
            command += ["--no-checkpoint"] if args.no_checkpoint else ["--checkpoint", str(checkpoint)]
            runs = []
            for name in ("full build", "next build") if not args.no_checkpoint else ("full build",):
                started = time.monotonic()
                code, rss, output = _peak_rss_of(command, env)
                runs.append((name, time.monotonic() - started, rss, output))
                print(output.rstrip())
                if code != 0:
                    print(f"{name} FAILED with exit code {code}")
                    return 1
            prometheus_rss = _vm_hwm(server.process.pid)
        for name, elapsed, rss, output in runs:
            queries = output.rsplit(" using ", 1)[-1].split()[0]
            # The full build's time is judged against the decode floor (`--prometheus-cost`).
            target = "target < 30s" if name == "next build" else "against the floor: --prometheus-cost"
            print(f"{name}: {elapsed:.1f}s wall ({target}), peak RSS {rss:.0f} MiB (target < 500 MiB), "
                  f"{queries} Prometheus queries")
        if len(runs) == 2:
            print("  the next build: the same window end, every whole day from the checkpoint the full build "
                  f"wrote ({checkpoint.stat().st_size / MIB:.0f} MiB); a build an hour later asks the same")
        print(f"Prometheus peak RSS {prometheus_rss:.0f} MiB")
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    timings = {count: lookup_ns(count) for count in (1_000, 10_000, 100_000)}
    small, large = timings[1_000][0], timings[100_000][0]
    each = ", ".join(f"{ns:.0f} ns with {n:,} profiles" for n, (ns, _) in timings.items())
    print(f"lookup per admission: {each}"
          + f" (100k/1k ratio {large / small:.2f}: a dict lookup, O(1); the rest is CPU cache misses)")
    print("loading the store: " + ", ".join(f"{n:,} workloads {s:.2f} s" for n, (_, s) in timings.items()))
    print(f"bench process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
