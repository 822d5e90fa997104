"""Totals per namespace and for the whole fleet: what is reserved now and after, and what is missing.

Requests and limits are the Pod's effective values as Kubernetes sums them (init containers and
native sidecars included, `pod_total`), times the Pods running at once. Missing requests count every
container; missing readiness and preStop count the serving containers of long-running Pods only,
the ones pod-tailor would give them to (a batch container has no endpoint to be ready for).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal

from webhook.report.model import Report, Totals, WorkloadReport

__all__ = ["assemble", "totals"]

_SIZED = ("cpu", "memory")


def _add(into: dict[str, Decimal], values: Mapping[str, Decimal], times: int) -> None:
    for resource, value in values.items():
        into[resource] = into.get(resource, Decimal(0)) + value * times


def totals(workloads: Iterable[WorkloadReport]) -> Totals:
    sums: dict[str, dict[str, Decimal]] = defaultdict(dict)
    origins: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    for workload in workloads:
        counts["workloads"] += 1
        counts["changed"] += workload.changed
        counts["pods"] += workload.replicas
        for name, pair in (("requests", workload.requests), ("limits", workload.limits)):
            _add(sums[f"{name}_now"], pair[0], workload.replicas)
            _add(sums[f"{name}_after"], pair[1], workload.replicas)
        for container in workload.containers:
            counts["containers"] += 1
            for which in ("current", "recommended"):
                if any(container.value(which, f"requests.{r}") is None for r in _SIZED):
                    counts[f"no_requests_{which}"] += 1
            if container.serving:
                counts["serving"] += 1
                counts["no_readiness_now"] += not container.readiness[0]
                counts["no_readiness_after"] += not container.readiness[1]
                counts["no_pre_stop_now"] += not container.pre_stop[0]
                counts["no_pre_stop_after"] += not container.pre_stop[1]
            origins.update(origin.kind for origin in container.sources.values())
    return Totals(
        workloads=counts["workloads"],
        changed=counts["changed"],
        pods=counts["pods"],
        containers=counts["containers"],
        requests_now=sums["requests_now"],
        requests_after=sums["requests_after"],
        limits_now=sums["limits_now"],
        limits_after=sums["limits_after"],
        without_requests=(counts["no_requests_current"], counts["no_requests_recommended"]),
        serving=counts["serving"],
        without_readiness=(counts["no_readiness_now"], counts["no_readiness_after"]),
        without_pre_stop=(counts["no_pre_stop_now"], counts["no_pre_stop_after"]),
        origins=dict(origins),
    )


def assemble(
    workloads: Iterable[WorkloadReport],
    *,
    generated_at: float,
    source: str,
    profiles: str = "none",
    profiles_at: float = 0.0,
    problems: Iterable[str] = (),
    modes: Mapping[str, str] | None = None,
    policies: Mapping[str, str] | None = None,
) -> Report:
    """The whole report: workloads sorted as kubectl lists them (namespace, kind, name), with totals."""
    ordered = tuple(sorted(workloads, key=lambda w: (w.namespace, w.kind, w.name, w.source)))
    by_namespace: dict[str, list[WorkloadReport]] = defaultdict(list)
    for workload in ordered:
        by_namespace[workload.namespace].append(workload)
    known_modes = dict(modes or {})
    known_policies = dict(policies or {})
    for namespace, members in by_namespace.items():
        known_modes.setdefault(namespace, members[0].mode)
        known_policies.setdefault(namespace, members[0].policy)
    return Report(
        workloads=ordered,
        namespaces={ns: totals(members) for ns, members in sorted(by_namespace.items())},
        cluster=totals(ordered),
        generated_at=generated_at,
        source=source,
        profiles=profiles,
        profiles_at=profiles_at,
        problems=tuple(problems),
        modes=known_modes,
        policies=known_policies,
    )
