"""Node fit: injected requests never ask more than the largest node the Pod may land on (pure).

A Pod whose requests exceed every node it may be scheduled on stays Pending for ever (the cluster
autoscaler reports `NotTriggerScaleUp`). So the Pod as it will be created (`webhook.core.fit.caps`),
counted as the scheduler counts it, is held to the largest allocatable among the nodes its
`nodeSelector`, required node affinity, tolerations and OS allow (`webhook.core.fit.placement`), or to
`fit.maxNode`, the largest node an autoscaler could add, less the DaemonSets that would run on it
(`new_node_share`). "Largest" for both resources at once: the
node that holds the most of the Pod's cpu and memory together, so the capped Pod fits one real node.
A Pod no known node admits keeps its values (an autoscaler may add a node for it) with a warning.
The start-up boost is held to the same node: `room` says how much cpu it may add.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from webhook.core.fit.caps import CreatedTotals, lower
from webhook.core.fit.daemonsets import describe, owner, rooms
from webhook.core.fit.placement import _OS, DaemonSetShare, NodeIndex, allows, placement, pod_shapes
from webhook.core.model.decision import Cap, Injection
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.quantity import render
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.policies import Policy

__all__ = ["FitOutcome", "fit_pod"]

_INFINITE = Decimal("Infinity")
_ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class FitOutcome:
    caps: tuple[Cap, ...] = ()
    warnings: tuple[str, ...] = ()
    cpu_room: Decimal | None = None  # how much cpu the boost may still add; None: any, or no boost


Shape = tuple[Decimal, Decimal]  # allocatable cpu, memory


def _best(shapes: list[Shape], cpu: Decimal, memory: Decimal) -> Shape | None:
    """A node both resources fit (None), else the one that holds the most of both together."""
    for node_cpu, node_memory in shapes:  # the usual Pod fits one: no shares worked out
        if node_cpu >= cpu and node_memory >= memory:
            return None
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


def new_node_share(
    pod: Mapping[str, Any], index: NodeIndex, own: DaemonSetShare | None = None
) -> tuple[Decimal, Decimal, int]:
    """(cpu, memory, how many) the DaemonSets would take on the node an autoscaler adds for `pod`.

    That node does not exist yet, so no labels or taints of it are known but what the Pod demands:
    it carries the labels of the Pod's `nodeSelector` and its OS (`spec.os.name`, else linux), and no
    taint. A DaemonSet lands on it when its placement allows such a node: the node agents that run
    everywhere or on every Linux node, and those selecting a label the Pod selects too (a GPU device
    plugin for a Pod selecting the GPU pool). One that selects a label the Pod does not name, or the
    node by name, is not counted. The Pod's own DaemonSet (`own`) is not counted either: its share
    is the Pod. Remembered per index, by the Pod's selector and OS.
    """
    if not index.daemonsets:
        return _ZERO, _ZERO, 0
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector")
    selector = {str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) else {}
    os_spec = spec.get("os")
    os_name = os_spec.get("name") if isinstance(os_spec, Mapping) else None
    labels = {_OS: str(os_name) if os_name else "linux", **selector}
    key = ("new node", tuple(sorted(labels.items())), own.key if own is not None else None)
    shares = index.memo.get(key)
    if shares is None:
        landing = [share for share in index.daemonsets.values()
                   if (own is None or share.key != own.key) and allows(share.where, labels, ())]  # fmt: skip
        # Stored as the memo stores shapes: one (cpu, memory) per DaemonSet that lands.
        shares = index.memo[key] = tuple((share.cpu, share.memory) for share in landing)
    return sum((cpu for cpu, _ in shares), _ZERO), sum((memory for _, memory in shares), _ZERO), len(shares)


def fit_pod(
    pod: Mapping[str, Any],
    *,
    policy: Policy,
    nodes: NodeIndex | None,
    limit_ranges: Sequence[LimitRangeItem],
    injections: list[Injection],
    patch: PatchBuilder,
    workload: WorkloadKey | None = None,
    created: CreatedTotals | None = None,
) -> FitOutcome:
    """Hold the Pod's injected requests to the largest node it may use; `injections` updated in place.

    `created`: the decision's totals of the Pod as created (computed here when not given).
    """
    rules = policy.fit
    if not rules.enabled or nodes is None:
        return FitOutcome()
    own = owner(workload, nodes)  # a DaemonSet's own Pod: its share back
    shapes = pod_shapes(pod, nodes) if own is None else rooms(placement(pod), nodes, own)
    what = "largest node that fits the Pod's selector"
    warnings: list[str] = []
    new_node: Shape | None = None
    new_node_taken, real = (_ZERO, _ZERO, 0), shapes[:]
    if rules.max_node_cpu is not None and rules.max_node_memory is not None:
        new_node_taken = new_node_share(pod, nodes, own)
        new_node = (max(rules.max_node_cpu - new_node_taken[0], _ZERO),
                    max(rules.max_node_memory - new_node_taken[1], _ZERO))  # fmt: skip
        shapes.append(new_node)
        if len(shapes) == 1:
            what = "fit.maxNode (the largest node an autoscaler may add)"
    if not shapes:
        if nodes.count:
            warnings.append(
                "no known node matches the Pod's selector and tolerations; requests kept (an autoscaler "
                "may add one)"
            )
        return FitOutcome(warnings=tuple(warnings))
    created = created if created is not None else CreatedTotals(pod)
    need = created.of(injections)
    cpu, memory = need.get("requests.cpu", _ZERO), need.get("requests.memory", _ZERO)
    node = _best(shapes, cpu, memory)
    caps: list[Cap] = []
    if node is not None:
        for resource, wanted, have in (("cpu", cpu, node[0]), ("memory", memory, node[1])):
            if wanted <= have:
                continue
            if node == new_node and node not in real and rules.max_node_cpu and rules.max_node_memory:
                whole = (rules.max_node_cpu, rules.max_node_memory)
                reason = f"{what} {_new_node_text(resource, whole, new_node_taken)}"
            else:
                reason = f"{what} {describe(nodes, node, resource, share=own)}"
            floor = policy.resources[resource].min if resource in policy.resources else Decimal(0)
            done = lower(
                pod, field=f"requests.{resource}", excess=wanted - have, floor=floor, injections=injections,
                patch=patch, limit_ranges=limit_ranges, rule="fit", reason=reason,
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
    room = chosen[0] - need.get("requests.cpu", _ZERO)
    return FitOutcome(tuple(caps), tuple(warnings), max(room, _ZERO))


def _new_node_text(resource: str, whole: Shape, taken: tuple[Decimal, Decimal, int]) -> str:
    """`has 16 allocatable, 480m of it taken by 9 DaemonSets` for `fit.maxNode`."""
    column = 0 if resource == "cpu" else 1
    share, count = (taken[0], taken[1])[column], taken[2]
    text = f"has {render(resource, whole[column])} allocatable"
    if not count or not share:
        return text
    return f"{text}, {render(resource, share)} of it taken by {count} DaemonSet{'' if count == 1 else 's'}"
