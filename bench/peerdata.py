"""The history `bench/peers.py` reads with both tools: Deployments whose Pods do not behave alike.

Like `bench/profiles.py`'s cluster (Deployments x containers x replicas, a Pod replaced every ~2 days,
a new ReplicaSet every ~5 days), with what a pooled percentile rebuilt from each Pod's p95 and max gets
wrong, and what KRR needs to find the Pods:

- a daily and a weekly cycle (weekends at 60 %), so Pods that live through different days differ;
- per workload one of three shapes: replicas alike (60 %), replicas at different levels (20 %: a hot
  node, an uneven load balancer), replicas busy at different hours (20 %: shards, queue consumers);
- kube-state-metrics' owner series (`kube_pod_owner`, `kube_replicaset_owner`,
  `kube_pod_status_phase`) every 5 minutes, as a kube-state-metrics job scraped less often than the
  kubelets would write them.

Deterministic (seeded): the same arguments give the same history, so two runs compare.
"""

from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass, field
from typing import IO, Any

from profiles import DAY, MIB, _memory_value, _pods  # bench/profiles.py

WEEK = 7 * DAY
KSM_STEP = 300
NAMES = ("app", "proxy", "log")


@dataclass(frozen=True)
class Pod:
    name: str
    replicaset: str
    first: int
    last: int
    level: float  # this Pod's share of the workload's level
    phase: float  # this Pod's busy hour, as a fraction of the day


@dataclass(frozen=True)
class Workload:
    namespace: str
    name: str
    level: float
    memory: float
    shape: str  # alike | levels | hours
    pods: list[Pod]


def cores(workload: Workload, pod: Pod, t: int, share: float) -> float:
    """CPU cores of one container at `t`: daily cycle (at the Pod's own hour), weekly cycle, jitter."""
    day = math.sin(2 * math.pi * ((t % DAY) / DAY - pod.phase))
    weekly = 0.6 if (t // DAY + 4) % 7 >= 5 else 1.0  # the epoch began on a Thursday
    jitter = 0.25 * ((t * 2654435761 + zlib.crc32(pod.name.encode()) % 9973) % 997) / 997
    busy = 1.0 + (0.9 if workload.shape == "hours" else 0.4) * day
    return max(0.0, workload.level * share * pod.level * weekly * (busy + jitter))


@dataclass
class PeerHistory:
    workloads: list[Workload]
    containers: int
    step: int
    end: int
    counters: dict[tuple[str, str], float] = field(default_factory=dict)

    @classmethod
    def build(cls, *, workloads: int, containers: int, replicas: int, start: int, end: int, step: int
              ) -> PeerHistory:
        rng = random.Random(28)
        out = []
        for w in range(workloads):
            shape = "alike" if w % 5 < 3 else ("levels" if w % 5 == 3 else "hours")
            name = f"svc-{w:04d}"
            level = 0.05 + 1.5 * rng.random() ** 2
            memory = (64 + 1500 * rng.random() ** 2) * MIB
            pods = []
            for index, (pod, first, last) in enumerate(
                _pods(rng, name, start=start, end=end, replicas=replicas, step=step)
            ):
                pod_level = 1.0 + (rng.uniform(-0.5, 0.5) if shape == "levels" else rng.uniform(-0.05, 0.05))
                phase = (index % replicas) / replicas if shape == "hours" else 0.0
                pods.append(Pod(pod, pod.rsplit("-", 1)[0], first, last, pod_level, phase))
            out.append(Workload(f"team-{w % 20:02d}", name, level, memory, shape, pods))
        return cls(out, containers, step, end)

    def container_names(self) -> list[str]:
        return [NAMES[c % 3] + ("" if c < 3 else str(c)) for c in range(self.containers)]

    def write(self, out: IO[str], *, lo: int, hi: int) -> int:
        """The samples in [lo, hi) as one OpenMetrics text; chunks must come in time order (counters)."""
        step, samples = self.step, 0
        names = self.container_names()
        families = ("container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                    "container_start_time_seconds")
        for family in families:
            kind = "counter" if family.endswith("_total") else "gauge"
            out.write(f"# TYPE {family.removesuffix('_total')} {kind}\n")
            for wl in self.workloads:
                for c, container in enumerate(names):
                    share = 1.0 if c == 0 else 0.2
                    for pod in wl.pods:
                        begin = max(pod.first, pod.first + -(-(lo - pod.first) // step) * step)
                        times = range(begin, min(pod.last, hi - 1) + 1, step)
                        if not times:
                            continue
                        labels = f'namespace="{wl.namespace}",pod="{pod.name}",container="{container}"'
                        prefix = f"{family}{{{labels}}} "
                        if family == "container_start_time_seconds":
                            started = str(pod.first - step // 2)
                            out.write("".join(f"{prefix}{started} {t}\n" for t in times))
                        elif family == "container_memory_working_set_bytes":
                            base = wl.memory * share
                            out.write("".join(f"{prefix}{_memory_value(base, t)} {t}\n" for t in times))
                        else:
                            key = (pod.name, container)
                            counter = self.counters.get(key, 1000.0)
                            parts = []
                            for t in times:
                                counter += cores(wl, pod, t, share) * step
                                parts.append(f"{prefix}{counter:.4f} {t}\n")
                            self.counters[key] = counter
                            out.write("".join(parts))
                        samples += len(times)
        samples += self._owners(out, lo=lo, hi=hi)
        out.write("# EOF\n")
        return samples

    def _owners(self, out: IO[str], *, lo: int, hi: int) -> int:
        """kube-state-metrics' owner and phase series every `KSM_STEP` seconds over each Pod's life."""
        written = 0

        def times(first: int, last: int) -> range:
            begin = max(first, lo)
            begin += -begin % KSM_STEP
            return range(begin, min(last, hi - 1) + 1, KSM_STEP)

        out.write("# TYPE kube_pod_owner gauge\n")
        for wl in self.workloads:
            for pod in wl.pods:
                labels = (f'namespace="{wl.namespace}",pod="{pod.name}",owner_kind="ReplicaSet",'
                          f'owner_name="{pod.replicaset}",owner_is_controller="true"')
                found = times(pod.first, pod.last)
                out.write("".join(f"kube_pod_owner{{{labels}}} 1 {t}\n" for t in found))
                written += len(found)
        out.write("# TYPE kube_pod_status_phase gauge\n")
        for wl in self.workloads:
            for pod in wl.pods:
                labels = f'namespace="{wl.namespace}",pod="{pod.name}",phase="Running"'
                found = times(pod.first, pod.last)
                out.write("".join(f"kube_pod_status_phase{{{labels}}} 1 {t}\n" for t in found))
                written += len(found)
        out.write("# TYPE kube_replicaset_owner gauge\n")
        for wl in self.workloads:
            spans: dict[str, tuple[int, int]] = {}
            for pod in wl.pods:
                a, b = spans.get(pod.replicaset, (pod.first, pod.last))
                spans[pod.replicaset] = (min(a, pod.first), max(b, pod.last))
            for rs, (first, last) in spans.items():
                labels = (f'namespace="{wl.namespace}",replicaset="{rs}",owner_kind="Deployment",'
                          f'owner_name="{wl.name}",owner_is_controller="true"')
                found = times(first, last)
                out.write("".join(f"kube_replicaset_owner{{{labels}}} 1 {t}\n" for t in found))
                written += len(found)
        return written

    def deployments(self) -> list[dict[str, Any]]:
        """The Deployments as the API server would list them (for KRR's discovery)."""
        names = self.container_names()
        out = []
        for wl in self.workloads:
            labels = {"app": wl.name}
            out.append({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": wl.name, "namespace": wl.namespace, "labels": labels},
                "spec": {
                    "replicas": 3, "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                        {"name": name, "image": "registry.example/app:1"} for name in names
                    ]}},
                },
            })
        return out
