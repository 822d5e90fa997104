"""Synthetic workloads with known shapes, written as OpenMetrics for `promtool tsdb create-blocks-from`.

Each container of each Pod gets the series cadvisor and kube-state-metrics would export: the CPU
counter (whose per-interval increase is the designed usage), the memory working set, the start time,
and optionally `kube_pod_owner`/`kube_replicaset_owner` and the OOMKilled reason. Samples sit half a
step off the evaluation grid, so `rate()` over two steps sees exactly one interval: the value the test
designed. The generator also returns, per workload and container, the usage values Prometheus will
see, so tests compute the analytic answer from the same numbers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO

DAY = 86_400
# What kube-prometheus records from the counter: the usage per scrape interval, as a gauge.
RECORDED_CPU = "node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate"
MIB = 2**20
Shape = Callable[[int, int, int], tuple[float, float]]  # (k-th interval, unix time, age s) -> (cores, bytes)


def noise(seed: int, k: int) -> float:
    """Deterministic uniform [0, 1) from (seed, k): the same data on every run."""
    x = (k * 2_654_435_761 + seed * 40_503 + 12_345) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x45D9F3B) & 0xFFFFFFFF
    x ^= x >> 16
    return x / 2**32


HPA_INFO = "kube_horizontalpodautoscaler_info"
HPA_MAX = "kube_horizontalpodautoscaler_spec_max_replicas"
HPA_TARGET = "kube_horizontalpodautoscaler_spec_target_metric"


@dataclass
class Pod:
    name: str
    start: int  # container start (unix s, on the step grid)
    end: int
    replicaset: str | None = None  # emitted as kube_pod_owner when `owners` is set on the workload
    oom: frozenset[str] = frozenset()  # containers whose last termination was OOMKilled


@dataclass
class Workload:
    namespace: str
    kind: str
    name: str
    containers: dict[str, Shape]
    pods: list[Pod]
    owners: bool = False  # emit kube-state-metrics owner series (else identity comes from pod names)
    requests: dict[str, tuple[float, int]] = field(default_factory=dict)  # container -> (cores, bytes)
    labels: dict[str, str] = field(default_factory=dict)  # on every series, e.g. {"cluster": "prod-eu"}
    hpa: bool = False  # an HPA scales it: kube-state-metrics' HPA series over the workload's life
    hpa_metrics: tuple[str, ...] = ("cpu", "memory")  # what the HPA scales on (`metric_name`)


@dataclass
class Observed:
    """What Prometheus will see, per (workload, container)."""

    cpu: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    memory: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def pod_times(pod: Pod, step: int) -> Iterator[int]:
    t = pod.start + step // 2
    while t <= pod.end:
        yield t
        t += step


def write_openmetrics(workloads: list[Workload], out: IO[str], *, step: int) -> Observed:
    """Write every series, one metric family at a time (OpenMetrics wants families contiguous)."""
    observed = Observed()
    families: dict[str, list[str]] = defaultdict(list)
    for wl in workloads:
        key = f"{wl.namespace}/{wl.kind}/{wl.name}"
        for index, pod in enumerate(wl.pods):
            times = list(pod_times(pod, step))
            for container, shape in wl.containers.items():
                base = _labels(namespace=wl.namespace, pod=pod.name, container=container, **wl.labels)
                counter = 10_000.0
                cpu_lines, mem_lines, start_lines, recorded = [], [], [], []
                for k, t in enumerate(times):
                    cores, memory = shape(k + index * 7919, t, t - pod.start)
                    if k:
                        counter += cores * step
                        observed.cpu[(key, container)].append(cores)
                        recorded.append(f"{RECORDED_CPU}{base} {cores:.6f} {t}")
                    observed.memory[(key, container)].append(memory)
                    cpu_lines.append(f"container_cpu_usage_seconds_total{base} {counter:.6f} {t}")
                    mem_lines.append(f"container_memory_working_set_bytes{base} {memory:.0f} {t}")
                    start_lines.append(f"container_start_time_seconds{base} {pod.start} {t}")
                families["container_cpu_usage_seconds_total"] += cpu_lines
                families["container_memory_working_set_bytes"] += mem_lines
                families["container_start_time_seconds"] += start_lines
                families[RECORDED_CPU] += recorded
                if container in pod.oom:
                    labels = _labels(
                        namespace=wl.namespace, pod=pod.name, container=container, reason="OOMKilled",
                        **wl.labels,
                    )
                    families["kube_pod_container_status_last_terminated_reason"] += [
                        f"kube_pod_container_status_last_terminated_reason{labels} 1 {t}" for t in times[-3:]
                    ]
                if container in wl.requests:
                    cores, memory_request = wl.requests[container]
                    for resource, value in (("cpu", cores), ("memory", memory_request)):
                        labels = _labels(
                            namespace=wl.namespace, pod=pod.name, container=container, resource=resource,
                            **wl.labels,
                        )
                        families["kube_pod_container_resource_requests"] += [
                            f"kube_pod_container_resource_requests{labels} {value} {t}" for t in times[-3:]
                        ]
            if wl.owners and pod.replicaset:
                labels = _labels(
                    namespace=wl.namespace, pod=pod.name, owner_kind="ReplicaSet",
                    owner_name=pod.replicaset, owner_is_controller="true", **wl.labels,
                )
                families["kube_pod_owner"] += [f"kube_pod_owner{labels} 1 {t}" for t in times]
        if wl.owners:
            for rs in sorted({p.replicaset for p in wl.pods if p.replicaset}):
                first = min(p.start for p in wl.pods if p.replicaset == rs) + step // 2
                labels = _labels(
                    namespace=wl.namespace, replicaset=rs, owner_kind=wl.kind, owner_name=wl.name,
                    **wl.labels,
                )
                families["kube_replicaset_owner"] += [
                    f"kube_replicaset_owner{labels} 1 {first + i * step}" for i in range(3)
                ]
        if wl.hpa:
            first, last = min(p.start for p in wl.pods), max(p.end for p in wl.pods)
            api = "apps/v1" if wl.kind in ("Deployment", "StatefulSet", "ReplicaSet") else "batch/v1"
            hpa = _labels(namespace=wl.namespace, horizontalpodautoscaler=wl.name, **wl.labels)
            info = _labels(namespace=wl.namespace, horizontalpodautoscaler=wl.name,
                           scaletargetref_api_version=api, scaletargetref_kind=wl.kind,
                           scaletargetref_name=wl.name, **wl.labels)
            targets = [
                (HPA_TARGET, _labels(namespace=wl.namespace, horizontalpodautoscaler=wl.name,
                                     metric_name=name, metric_target_type="utilization", **wl.labels), 80)
                for name in wl.hpa_metrics
            ]
            for t in range(first + step // 2, last, step):
                for metric, labels, value in ((HPA_INFO, info, 1), (HPA_MAX, hpa, 10), *targets):
                    families[metric].append(f"{metric}{labels} {value} {t}")
    for name, lines in families.items():
        family, kind = (name[: -len("_total")], "counter") if name.endswith("_total") else (name, "gauge")
        out.write(f"# TYPE {family} {kind}\n")
        out.write("\n".join(lines))
        out.write("\n")
    out.write("# EOF\n")
    return observed


def quantile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks, as `quantile_over_time` computes it."""
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)
