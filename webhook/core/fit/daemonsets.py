"""What DaemonSets take on each node, so node fit holds a Pod to the room left after them (pure).

Every node a DaemonSet's Pods may land on runs one of them, so its requests are never free for anything
else. A DaemonSet is kept as its template's requests summed as the scheduler counts them
(`webhook.core.fit.nodefree.pod_requests`) and its placement (`webhook.core.fit.placement.placement`),
with the tolerations the DaemonSet controller adds to every Pod it creates (not-ready and unreachable
NoExecute; disk, memory and pid pressure and unschedulable NoSchedule; network-unavailable for
host-network Pods). `subtract` runs when the node index is built, never per admission: a node's `cpu` and
`memory` become the room left, so the per-Pod fit does no more work than without them. A DaemonSet's own
Pod is not held to the room its own share took: `owner` finds its DaemonSet (the Pod's workload, from its
owner reference on the server, the manifest in the preview), `rooms` adds that share back (a scan of the
matching nodes, for DaemonSet Pods only).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from webhook.core.fit.nodefree import pod_requests
from webhook.core.fit.placement import (
    _OS,
    DaemonSetShare,
    NodeIndex,
    NodeShape,
    Placement,
    allows,
    index_nodes,
    placement,
)
from webhook.core.model.quantity import render
from webhook.core.model.workload import WorkloadKey

__all__ = [
    "describe", "index_with_daemonsets", "members", "owner", "parse_daemonset", "rooms",
    "subtract",
]

_ZERO = Decimal(0)
# What the DaemonSet controller adds to each of its Pods (pkg/controller/daemon/util).
_ADDED: tuple[Mapping[str, Any], ...] = tuple(
    {"key": f"node.kubernetes.io/{key}", "operator": "Exists", "effect": effect}
    for key, effect in (
        ("not-ready", "NoExecute"),
        ("unreachable", "NoExecute"),
        ("disk-pressure", "NoSchedule"),
        ("memory-pressure", "NoSchedule"),
        ("pid-pressure", "NoSchedule"),
        ("unschedulable", "NoSchedule"),
    )
)
_HOST_NETWORK = {
    "key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule",
}


def parse_daemonset(obj: Mapping[str, Any]) -> DaemonSetShare | str:
    """The DaemonSet's share, or why it is left out (no name, no template)."""
    meta = obj.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace") or "default"
    if not isinstance(name, str) or not name:
        return "a DaemonSet without a name"
    template = (obj.get("spec") or {}).get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        return f"DaemonSet {namespace}/{name}: no pod template"
    spec = dict(template["spec"])
    added = _ADDED + ((_HOST_NETWORK,) if spec.get("hostNetwork") is True else ())
    spec["tolerations"] = [*(spec.get("tolerations") or ()), *added]
    pod = {"metadata": template.get("metadata") or {}, "spec": spec}
    requests = pod_requests(pod)
    return DaemonSetShare(
        key=f"{namespace}/{name}",
        cpu=requests.get("cpu", _ZERO),
        memory=requests.get("memory", _ZERO),
        where=placement(pod),
    )


def subtract(nodes: Sequence[NodeShape | str], daemonsets: Sequence[DaemonSetShare]) -> list[NodeShape | str]:
    """Each node with the DaemonSets that land on it subtracted: room = allocatable - their requests, >= 0.

    Which DaemonSets land is found once per distinct "what `allows` reads" of a node (the labels their
    placements name, the OS label, the taints; the name only for matchFields): a thousand nodes are a
    few pools, so a rebuild matches a few dozen nodes, not every node against every DaemonSet.
    """
    read = tuple(sorted(set().union(*(share.where.keys() for share in daemonsets)) | {_OS}))
    by_name = any(share.where.by_field for share in daemonsets)
    landing_by_signature: dict[Hashable, tuple[tuple[str, ...], Decimal, Decimal]] = {}
    out: list[NodeShape | str] = []
    for node in nodes:
        if not isinstance(node, NodeShape):
            out.append(node)
            continue
        signature = (tuple(node.labels.get(k) for k in read), node.taints, node.name if by_name else "")
        landing = landing_by_signature.get(signature)
        if landing is None:
            shares = [s for s in daemonsets if allows(s.where, node.labels, node.taints, name=node.name)]
            landing = landing_by_signature[signature] = (
                tuple(share.key for share in shares),
                sum((share.cpu for share in shares), _ZERO),
                sum((share.memory for share in shares), _ZERO),
            )
        keys, taken_cpu, taken_memory = landing
        cpu, memory = node.allocatable or (node.cpu, node.memory)
        out.append(replace(
            node, cpu=max(cpu - taken_cpu, _ZERO), memory=max(memory - taken_memory, _ZERO),
            allocatable=(cpu, memory), taken=(taken_cpu, taken_memory), daemonsets=keys,
        ))
    return out


def index_with_daemonsets(
    nodes: Sequence[NodeShape | str], daemonsets: Sequence[DaemonSetShare] | None
) -> NodeIndex:
    """The node index (`index_nodes`) over the room DaemonSets leave; None: DaemonSets not known."""
    if daemonsets is None:
        return index_nodes([_own(node) for node in nodes])
    index = index_nodes(subtract(nodes, daemonsets))
    return replace(index, daemonsets={share.key: share for share in daemonsets})


def _own(node: NodeShape | str) -> NodeShape | str:
    """The node as parsed: its allocatable back, no DaemonSet counted."""
    if not isinstance(node, NodeShape) or node.allocatable is None:
        return node
    return replace(node, cpu=node.allocatable[0], memory=node.allocatable[1], allocatable=None, taken=None,
                   daemonsets=())


def members(index: NodeIndex) -> list[NodeShape]:
    """Every usable node of the index (to rebuild it with more nodes or DaemonSets)."""
    return [member for group in index.groups for member in group.members]


def owner(workload: WorkloadKey | None, index: NodeIndex) -> DaemonSetShare | None:
    """The DaemonSet among those subtracted whose Pod is being decided (its workload), else None."""
    if workload is None or workload.kind != "DaemonSet" or not index.daemonsets:
        return None
    return index.daemonsets.get(f"{workload.namespace}/{workload.name}")


def rooms(where: Placement, index: NodeIndex, share: DaemonSetShare) -> list[tuple[Decimal, Decimal]]:
    """The distinct rooms of the nodes the Pod may use, its own DaemonSet's share not taken, sorted."""
    distinct: set[tuple[Decimal, Decimal]] = set()
    for node in members(index):
        if allows(where, node.labels, node.taints, name=node.name):
            distinct.add(_room(node, share))
    return sorted(distinct)


def _room(node: NodeShape, share: DaemonSetShare | None) -> tuple[Decimal, Decimal]:
    if share is None or share.key not in node.daemonsets or node.allocatable is None or node.taken is None:
        return node.cpu, node.memory
    return (
        max(node.allocatable[0] - node.taken[0] + share.cpu, _ZERO),
        max(node.allocatable[1] - node.taken[1] + share.memory, _ZERO),
    )


def describe(index: NodeIndex, shape: tuple[Decimal, Decimal], resource: str, *,
             share: DaemonSetShare | None = None) -> str:
    """`has 1.93 allocatable, 0.4 of it taken by 3 DaemonSets` for the node whose room is `shape`.

    Remembered per index (`NodeIndex.described`): the scan is over every node, on the admission path.
    """
    column = 0 if resource == "cpu" else 1
    if not index.daemonsets:  # none subtracted: no node has any taken
        return f"has {render(resource, shape[column])} allocatable"
    key = (shape, resource, share.key if share is not None else None)
    text = index.described.get(key)
    if text is None:
        text = index.described[key] = _describe(index, shape, resource, column, share=share)
    return text


def _describe(index: NodeIndex, shape: tuple[Decimal, Decimal], resource: str, column: int, *,
              share: DaemonSetShare | None) -> str:
    for node in members(index):
        if _room(node, share) != shape or node.allocatable is None or node.taken is None:
            continue
        others = [key for key in node.daemonsets if share is None or key != share.key]
        taken = node.taken[column]
        if share is not None and len(others) < len(node.daemonsets):  # its own share given back
            taken -= (share.cpu, share.memory)[column]
        if not others or not taken:
            break
        plural = "DaemonSet" if len(others) == 1 else "DaemonSets"
        return (f"has {render(resource, node.allocatable[column])} allocatable, "
                f"{render(resource, taken)} of it taken by {len(others)} {plural}")
    return f"has {render(resource, shape[column])} allocatable"
