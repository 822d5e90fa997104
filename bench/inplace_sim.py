"""In-place right-sizing against admission-only sizing: a deterministic 30-day fleet simulation.

A fleet of workloads whose usage drifts, follows the day, or steps up or down once, with rollouts
every few days (each rollout re-creates the Pods through the real admission engine with that day's
profile). Profiles are rebuilt every night from the last 14 days (p95 cpu, peak memory + 15 %).
Three ways of sizing are replayed hour by hour:

- admission only: a Pod keeps the requests it was born with until the next rollout;
- admission + in-place: the same, plus `webhook.core.resize.plan.plan_resize` every 4 hours on every
  running Pod (the controller's own decision, with its record, step limit, minChange, memory rule and
  the per-workload cap), the resize applied by the kubelet at once;
- an oracle that knows the next 24 hours (p95 cpu, peak memory of what is coming).

Printed: waste (requested minus used, core-hours and GiB-hours), risk (share of Pod-hours with usage
above the request), resizes per Pod per day, restarts the resizes caused (a resize of a resource whose
resizePolicy restarts the container), and each way's distance to the oracle's requests.

    .venv/bin/python bench/inplace_sim.py [--workloads 40] [--days 30]
"""

from __future__ import annotations

import argparse
import copy
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import jsonpatch

from webhook.config.policies import load_policy_text
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.profile import Evidence, Recommendation
from webhook.core.model.qos import qos_class
from webhook.core.model.quantity import parse
from webhook.core.model.timestamps import stamp
from webhook.core.model.workload import WorkloadKey
from webhook.core.resize.history import RESIZED_ANNOTATION, Entry, history_text, read_history
from webhook.core.resize.plan import Around, plan_resize

MIB, GIB, HOUR, DAY = 2**20, 2**30, 3600.0, 86400.0
START = 1_790_000_000.0 - 1_790_000_000.0 % DAY  # a midnight, UTC
POLICY = load_policy_text("policies:\n  sim:\n    inPlace: {enabled: true}\n").policies["sim"]
FACTS = ClusterFacts(server_version=(1, 35))
ROOMY = {"cpu": Decimal(64), "memory": Decimal(256 * GIB)}
PASS_HOURS = 4


@dataclass
class Workload:
    name: str
    kind: str  # diurnal | drift | step
    replicas: int
    cpu: float  # cores per Pod, at the start
    memory: float  # bytes per Pod, at the start
    rollout_every: int  # days
    step_day: int = 0
    step_by: float = 1.0
    usage: list[tuple[float, float]] = field(default_factory=list)  # per hour: (cores, bytes) per Pod


def fleet(count: int, days: int, seed: int = 31, *, rollouts: bool = True) -> list[Workload]:
    rng = random.Random(seed)
    found = []
    for index in range(count):
        kind = ("diurnal", "drift", "step")[index % 3]
        w = Workload(f"w{index:02d}", kind, rng.choice((2, 3, 4, 6, 10)), rng.uniform(0.05, 1.2),
                     rng.uniform(120, 1500) * MIB, rng.choice((3, 4, 5, 7)),
                     step_day=rng.randint(8, 22), step_by=rng.choice((0.4, 2.2)))  # fmt: skip
        drift = rng.choice((-0.5, 0.8))
        if not rollouts:  # the same fleet, its Pods living the whole run
            w.rollout_every = 10_000
        for hour in range(days * 24 + 24):
            day = hour / 24
            wave = 1 + 0.6 * math.sin(2 * math.pi * ((hour % 24) - 8) / 24)
            noise = 1 + rng.uniform(-0.1, 0.1)
            if kind == "diurnal":
                scale, mem_scale = wave, 1 + 0.15 * (wave - 1)
            elif kind == "drift":
                scale = mem_scale = max(0.2, 1 + drift * day / days) * (1 + 0.2 * (wave - 1))
            else:
                scale = mem_scale = (w.step_by if day >= w.step_day else 1.0) * (1 + 0.2 * (wave - 1))
            w.usage.append((w.cpu * scale * noise, w.memory * mem_scale * (1 + (noise - 1) / 4)))
        found.append(w)
    return found


def profile(w: Workload, hour: int) -> dict[str, Recommendation]:
    """The nightly build at `hour` (a midnight): p95 cpu and peak memory + 15 % of the last 14 days."""
    window = w.usage[max(0, hour - 14 * 24) : hour]
    if len(window) < 3:
        return {}
    cpus = sorted(u[0] for u in window)
    cpu = cpus[min(len(cpus) - 1, int(0.95 * len(cpus)))]
    memory = max(u[1] for u in window) * 1.15
    evidence = Evidence("14d", len(window) * 60, float(len(window)), 95.0, 0.15, min(1.0, len(window) / 72))
    return {"app": Recommendation(Decimal(f"{cpu:.3f}"), Decimal(int(memory)), evidence)}


def new_pod(w: Workload, index: int, hour: int, profiles: dict[str, Recommendation]) -> dict[str, Any]:
    """A Pod of `w` created at `hour` through the admission engine, Running at once."""
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{w.name}-5d8f7b9c4", "uid": "u",
             "controller": True}  # fmt: skip
    app: dict[str, Any] = {"name": "app", "image": "example/app:1", "resources": {}}
    if int(w.name[1:]) % 4 == 3:  # every fourth workload is a JVM whose heap is sized at start
        app["resizePolicy"] = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{w.name}-{hour}-{index}", "namespace": "fleet",
                     "labels": {"app": w.name, "pod-template-hash": "5d8f7b9c4"}, "ownerReferences": [owner]},
        "spec": {"containers": [app], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                 "nodeName": "node-1"},
    }  # fmt: skip
    key = WorkloadKey("fleet", "Deployment", w.name)
    decision = tailor(pod, policy=POLICY, profiles=profiles, facts=FACTS, workload=key)
    pod = jsonpatch.apply_patch(pod, list(decision.ops))
    started = START + hour * HOUR
    actual = copy.deepcopy(pod["spec"]["containers"][0]["resources"])
    pod["status"] = {"phase": "Running", "startTime": stamp(started), "qosClass": qos_class(pod, []),
                     "containerStatuses": [{"name": "app", "resources": actual}]}  # fmt: skip
    return pod


def requests(pod: dict[str, Any]) -> tuple[float, float]:
    found = pod["spec"]["containers"][0]["resources"].get("requests") or {}
    return float(parse(found.get("cpu", "0"))), float(parse(found.get("memory", "0")))


@dataclass
class Tally:
    waste_cpu: float = 0.0  # core-hours requested and not used
    waste_memory: float = 0.0  # GiB-hours
    over: int = 0  # Pod-hours with usage above the request (cpu or memory)
    pod_hours: int = 0
    resizes: int = 0
    restarts: int = 0
    distance: float = 0.0  # sum over Pod-hours of |request - oracle| / oracle, cpu and memory averaged

    def hour(
        self, used: tuple[float, float], asked: tuple[float, float], oracle: tuple[float, float]
    ) -> None:
        self.pod_hours += 1
        self.waste_cpu += max(0.0, asked[0] - used[0])
        self.waste_memory += max(0.0, asked[1] - used[1]) / GIB
        self.over += used[0] > asked[0] or used[1] > asked[1]
        self.distance += (abs(asked[0] - oracle[0]) / oracle[0] + abs(asked[1] - oracle[1]) / oracle[1]) / 2


def oracle_at(w: Workload, hour: int) -> tuple[float, float]:
    ahead = w.usage[hour : hour + 24]
    cpus = sorted(u[0] for u in ahead)
    return cpus[min(len(cpus) - 1, int(0.95 * len(cpus)))], max(u[1] for u in ahead)


def restarts(pod: dict[str, Any], changed: Sequence[str]) -> int:
    """Containers the kubelet restarts for this resize: a changed resource whose resizePolicy says so."""
    policy = {
        p["resourceName"]: p["restartPolicy"] for p in pod["spec"]["containers"][0].get("resizePolicy", ())
    }
    return int(any(policy.get(resource) == "RestartContainer" for resource in changed))


def resize(
    pod: dict[str, Any], w: Workload, hour: int, profiles: dict[str, Recommendation], tally: Tally
) -> bool:
    """One controller decision for a running Pod, applied at once as the kubelet would; True if resized."""
    now = START + hour * HOUR
    history = read_history(pod["metadata"].get("annotations") or {})
    usage = {"app": Decimal(int(w.usage[hour][1]))}
    around = Around(now, node_free=ROOMY, memory_usage=usage, quota_room={}, history=history)
    key = WorkloadKey("fleet", "Deployment", w.name)
    plan = plan_resize(pod, policy=POLICY, profiles=profiles, facts=FACTS, workload=key, around=around)
    if plan.resize is None:
        return False
    tally.restarts += restarts(pod, [change.resource for change in plan.resize.changes])
    patched = jsonpatch.apply_patch(pod, list(plan.resize.ops))
    pod["spec"] = patched["spec"]
    pod["status"]["containerStatuses"][0]["resources"] = copy.deepcopy(
        pod["spec"]["containers"][0]["resources"]
    )
    pod["metadata"].setdefault("annotations", {})[RESIZED_ANNOTATION] = history_text(
        history, Entry(now, plan.resize.changes, plan.resize.why)
    )
    return True


def simulate(workloads: Sequence[Workload], days: int) -> dict[str, Tally]:
    tallies = {"admission only": Tally(), "admission + in-place": Tally(), "oracle": Tally()}
    pods: dict[str, dict[str, list[dict[str, Any]]]] = {"admission only": {}, "admission + in-place": {}}
    profiles: dict[str, dict[str, Recommendation]] = {w.name: {} for w in workloads}
    for hour in range(days * 24):
        for w in workloads:
            if hour % 24 == 0:
                profiles[w.name] = profile(w, hour)
            if hour == 0 or (hour % 24 == 10 and (hour // 24) % w.rollout_every == 0):
                for way in pods:  # a rollout: new Pods through admission with today's profile
                    pods[way][w.name] = [new_pod(w, i, hour, profiles[w.name]) for i in range(w.replicas)]
            in_place = pods["admission + in-place"][w.name]
            if hour % PASS_HOURS == 0:
                allowed = POLICY.in_place.concurrency(w.replicas)
                for pod in in_place:
                    if allowed and resize(pod, w, hour, profiles[w.name], tallies["admission + in-place"]):
                        allowed -= 1
                        tallies["admission + in-place"].resizes += 1
            used, oracle = w.usage[hour], oracle_at(w, hour)
            for way in pods:
                for pod in pods[way][w.name]:
                    tallies[way].hour(used, requests(pod), oracle)
            for _ in range(w.replicas):
                tallies["oracle"].hour(used, oracle, oracle)
    return tallies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=40)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--no-rollouts", action="store_true", help="Pods live the whole run (no rollout)")
    args = parser.parse_args()
    began = time.perf_counter()
    workloads = fleet(args.workloads, args.days, rollouts=not args.no_rollouts)
    tallies = simulate(workloads, args.days)
    pods = sum(w.replicas for w in workloads)
    print(f"{args.workloads} workloads ({pods} Pods: diurnal, drifting, stepping), {args.days} days, "
          f"{'no rollouts' if args.no_rollouts else 'rollouts every 3-7 days'}, nightly profiles of 14 days, "
          f"in-place pass every {PASS_HOURS} h "
          f"({time.perf_counter() - began:.0f} s)")  # fmt: skip
    print(f"{'':22} {'waste cpu':>12} {'waste mem':>12} {'usage > request':>16} {'resizes/Pod/day':>16} "
          f"{'restarts':>9} {'off oracle':>11}")  # fmt: skip
    for way, t in tallies.items():
        risk, per_day, off = t.over / t.pod_hours, t.resizes / pods / args.days, t.distance / t.pod_hours
        print(f"{way:22} {t.waste_cpu:9.0f} c-h {t.waste_memory:8.0f} GiB-h {risk:15.1%} "
              f"{per_day:16.2f} {t.restarts:9d} {off:10.0%}")  # fmt: skip
    base, inplace = tallies["admission only"], tallies["admission + in-place"]
    print(f"in-place vs admission only: waste cpu x{inplace.waste_cpu / base.waste_cpu:.2f}, "
          f"memory x{inplace.waste_memory / base.waste_memory:.2f}, "
          f"risk x{(inplace.over / inplace.pod_hours) / (base.over / base.pod_hours):.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
