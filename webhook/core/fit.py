"""Node fit: injected requests never ask more than the largest node the Pod may land on (pure).

A Pod whose requests exceed every node it may be scheduled on stays Pending for ever (the cluster
autoscaler reports `NotTriggerScaleUp`). So the Pod as it will be created (`webhook.core.caps`),
counted as the scheduler counts it, is held to the largest allocatable among the nodes its
`nodeSelector`, required node affinity, tolerations and OS allow (`webhook.core.nodefit`), or to
`fit.maxNode`, the largest node an autoscaler could add. "Largest" for both resources at once: the
node that holds the most of the Pod's cpu and memory together, so the capped Pod fits one real node.
A Pod no known node admits keeps its values (an autoscaler may add a node for it) with a warning.
The start-up boost is held to the same node: `room` says how much cpu it may add.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from webhook.core.caps import CreatedTotals, lower
from webhook.core.daemonsets import describe, owner, rooms
from webhook.core.decision import Cap, Injection
from webhook.core.facts import ClusterFacts
from webhook.core.nodefit import placement, pod_shapes
from webhook.core.patch import PatchBuilder
from webhook.core.quantity import render
from webhook.core.workload import WorkloadKey

if TYPE_CHECKING:
    from webhook.core.policy import Policy

__all__ = ["FitOutcome", "fit_pod"]

_INFINITE = Decimal("Infinity")


@dataclass(frozen=True, slots=True)
class FitOutcome:
    caps: tuple[Cap, ...] = ()
    warnings: tuple[str, ...] = ()
    cpu_room: Decimal | None = None  # how much cpu the boost may still add; None: any, or no boost


Shape = tuple[Decimal, Decimal]  # allocatable cpu, memory


def _best(shapes: list[Shape], cpu: Decimal, memory: Decimal) -> Shape | None:
    """A node both resources fit (None), else the one that holds the most of both together."""
    best, score = shapes[0], Decimal(-1)
    for node_cpu, node_memory in shapes:
        if node_cpu >= cpu and node_memory >= memory:
            return None
        held = min(node_cpu / cpu if cpu else _INFINITE, node_memory / memory if memory else _INFINITE)
        if held > score or (held == score and node_cpu + node_memory > best[0] + best[1]):
            best, score = (node_cpu, node_memory), held
    return best


def _best_fit(shapes: list[Shape], memory: Decimal) -> Shape:
    """The node with the most cpu among those that hold `memory` (else the largest of all)."""
    holding = [shape for shape in shapes if shape[1] >= memory] or shapes
    return max(holding)


def fit_pod(
    pod: Mapping[str, Any],
    *,
    policy: Policy,
    facts: ClusterFacts,
    injections: list[Injection],
    patch: PatchBuilder,
    workload: WorkloadKey | None = None,
    created: CreatedTotals | None = None,
) -> FitOutcome:
    """Hold the Pod's injected requests to the largest node it may use; `injections` updated in place.

    `created`: the decision's totals of the Pod as created (computed here when not given).
    """
    rules = policy.fit
    if not rules.enabled or facts.nodes is None:
        return FitOutcome()
    own = owner(workload, facts.nodes)  # a DaemonSet's own Pod: its share back
    shapes = pod_shapes(pod, facts.nodes) if own is None else rooms(placement(pod), facts.nodes, own)
    what = "largest node that fits the Pod's selector"
    warnings: list[str] = []
    if rules.max_node_cpu is not None and rules.max_node_memory is not None:
        shapes.append((rules.max_node_cpu, rules.max_node_memory))
        if len(shapes) == 1:
            what = "fit.maxNode (the largest node an autoscaler may add)"
    if not shapes:
        if facts.nodes.count:
            warnings.append(
                "no known node matches the Pod's selector and tolerations; requests kept (an autoscaler "
                "may add one)"
            )
        return FitOutcome(warnings=tuple(warnings))
    created = created if created is not None else CreatedTotals(pod)
    need = created.of(injections)
    cpu, memory = need.get("requests.cpu", Decimal(0)), need.get("requests.memory", Decimal(0))
    node = _best(shapes, cpu, memory)
    caps: list[Cap] = []
    if node is not None:
        for resource, wanted, have in (("cpu", cpu, node[0]), ("memory", memory, node[1])):
            if wanted <= have:
                continue
            reason = f"{what} {describe(facts.nodes, node, resource, share=own)}"
            floor = policy.resources[resource].min if resource in policy.resources else Decimal(0)
            done = lower(
                pod, field=f"requests.{resource}", excess=wanted - have, floor=floor, injections=injections,
                patch=patch, limit_ranges=facts.limit_ranges, rule="fit", reason=reason,
            )
            caps += done.caps
            if done.short > 0:
                warnings.append(
                    f"requests {resource} {render(resource, wanted)} exceed the {what} "
                    f"({render(resource, have)}) even without pod-tailor"
                )
    if not policy.startup_boost.enabled:  # the cpu room is the boost's alone
        return FitOutcome(tuple(caps), tuple(warnings))
    if node is not None:
        need = created.of(injections)
        chosen = node
    else:
        chosen = _best_fit(shapes, memory)
    room = chosen[0] - need.get("requests.cpu", Decimal(0))
    return FitOutcome(tuple(caps), tuple(warnings), max(room, Decimal(0)))
