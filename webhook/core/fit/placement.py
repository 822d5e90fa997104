"""Which nodes a Pod could be scheduled on, and the largest of them (pure).

The scheduler's filters that depend only on the Pod and the Node: `nodeSelector`, required node
affinity (terms ORed; within a term every expression and field ANDed; In, NotIn, Exists,
DoesNotExist, Gt, Lt), the Pod's tolerations against the node's NoSchedule and NoExecute taints
(PreferNoSchedule does not filter), `spec.unschedulable` (unless the Pod tolerates
`node.kubernetes.io/unschedulable`), and `spec.os.name` against the node's `kubernetes.io/os`.
Topology spread, inter-Pod affinity and what runs on the nodes now are left out: they change by the
second and never make a node that is too small big enough.

A thousand nodes are mostly a few dozen node pools: nodes that share labels (less the ones unique per
node, such as the hostname), taints and schedulability are one `NodeGroup`, so a Pod is matched
against each group once; a Pod that selects on a per-node label is matched node by node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.core.model.quantity import QuantityError, parse

__all__ = [
    "DaemonSetShare",
    "NodeGroup",
    "NodeIndex",
    "NodeShape",
    "Placement",
    "allows",
    "index_nodes",
    "matching_shapes",
    "parse_node",
    "placement",
    "pod_shapes",
]

_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_OS = "kubernetes.io/os"
_FILTERING = ("NoSchedule", "NoExecute")
Taint = tuple[str, str, str]  # key, value, effect
Expression = tuple[str, str, tuple[str, ...]]  # key, operator, values


@dataclass(frozen=True, slots=True)
class NodeShape:
    """What of a Node decides whether a Pod fits it: allocatable cpu and memory, labels, taints."""

    name: str
    cpu: Decimal
    memory: Decimal
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()  # NoSchedule / NoExecute only; unschedulable as its taint
    # With DaemonSets known (`webhook.core.fit.daemonsets.subtract`): `cpu` and `memory` are the room left
    # after them, `allocatable` the node's own, `taken` their requests and `daemonsets` their keys.
    allocatable: tuple[Decimal, Decimal] | None = None
    taken: tuple[Decimal, Decimal] | None = None
    daemonsets: tuple[str, ...] = ()


def parse_node(obj: Mapping[str, Any]) -> NodeShape | str:
    """The node's shape, or why it is left out (no name, no readable allocatable cpu and memory)."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return "a node without a name"
    allocatable = status.get("allocatable")
    if not isinstance(allocatable, Mapping):
        return f"node {name}: no status.allocatable"
    try:
        cpu, memory = parse(allocatable["cpu"]), parse(allocatable["memory"])
    except (KeyError, QuantityError):
        return f"node {name}: allocatable cpu or memory missing or unreadable"
    labels = meta.get("labels")
    taints: list[Taint] = []
    for taint in spec.get("taints") or ():
        if isinstance(taint, Mapping) and taint.get("effect") in _FILTERING and taint.get("key"):
            taints.append((str(taint["key"]), str(taint.get("value") or ""), str(taint["effect"])))
    if spec.get("unschedulable") is True:
        taints.append((_UNSCHEDULABLE, "", "NoSchedule"))
    clean = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
    return NodeShape(name, cpu, memory, clean, tuple(sorted(set(taints))))


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """Nodes with the same shared labels and taints; `shapes` are their distinct (cpu, memory)."""

    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    shapes: tuple[tuple[Decimal, Decimal], ...]
    members: tuple[NodeShape, ...]


_MEMO_SIZE = 4096  # placements remembered per index; Pods choose them, so the memo is bounded


@dataclass(frozen=True, slots=True)
class NodeIndex:
    """Every usable node, grouped; `left_out` says which nodes were not and why.

    Immutable as a snapshot is; `memo` only remembers what `matching_shapes` found per placement
    (a workload's replicas, and most workloads of a pool, share one), derived from the index alone.
    """

    groups: tuple[NodeGroup, ...] = ()
    per_node_keys: frozenset[str] = frozenset()  # label keys with a value (nearly) per node
    left_out: tuple[str, ...] = ()
    count: int = 0
    # The DaemonSets subtracted from the nodes, by key; None: not known (not watched, or forbidden).
    daemonsets: Mapping[str, DaemonSetShare] | None = None
    memo: dict[Hashable, tuple[tuple[Decimal, Decimal], ...]] = field(
        default_factory=dict, compare=False, repr=False
    )
    # What `webhook.core.fit.daemonsets.describe` said per room, resource and DaemonSet (a scan of the nodes).
    described: dict[Hashable, str] = field(default_factory=dict, compare=False, repr=False)


def index_nodes(nodes: Sequence[NodeShape | str]) -> NodeIndex:
    """Group parsed nodes (strings are the reasons of nodes left out)."""
    shapes = [node for node in nodes if isinstance(node, NodeShape)]
    left_out = tuple(node for node in nodes if isinstance(node, str))
    values: dict[str, set[str]] = {}
    for node in shapes:
        for key, value in node.labels.items():
            values.setdefault(key, set()).add(value)
    threshold = max(16, len(shapes) // 4)
    per_node = frozenset(key for key, seen in values.items() if len(seen) > threshold) | {
        "kubernetes.io/hostname"
    }
    grouped: dict[tuple[Any, ...], list[NodeShape]] = {}
    for node in shapes:
        shared = tuple(sorted((k, v) for k, v in node.labels.items() if k not in per_node))
        grouped.setdefault((shared, node.taints), []).append(node)
    groups = tuple(
        NodeGroup(
            labels=dict(shared),
            taints=taints,
            shapes=tuple(sorted(Counter((n.cpu, n.memory) for n in members))),
            members=tuple(members),
        )
        for (shared, taints), members in grouped.items()
    )
    return NodeIndex(groups, per_node, left_out, len(shapes))


@dataclass(frozen=True, slots=True)
class Placement:
    """What of a Pod filters nodes, read once per Pod."""

    selector: Mapping[str, str]
    terms: tuple[tuple[tuple[Expression, ...], tuple[Expression, ...]], ...] | None  # None: no affinity
    tolerations: tuple[Mapping[str, Any], ...]
    os: str | None

    def keys(self) -> frozenset[str]:
        named = set(self.selector)
        for expressions, _fields in self.terms or ():
            named.update(key for key, _op, _values in expressions)
        return frozenset(named)

    @property
    def by_field(self) -> bool:
        return any(fields for _expressions, fields in self.terms or ())

    def key(self) -> Hashable:
        """Equal for placements the filters treat alike (tolerations by what `_tolerated` reads)."""
        tolerations = tuple(tuple(sorted((str(k), repr(v)) for k, v in t.items())) for t in self.tolerations)
        return tuple(sorted(self.selector.items())), self.terms, tolerations, self.os


@dataclass(frozen=True, slots=True)
class DaemonSetShare:
    """One DaemonSet: what each of its Pods requests and where they land."""

    key: str  # namespace/name
    cpu: Decimal
    memory: Decimal
    where: Placement


def _expressions(raw: object) -> tuple[Expression, ...]:
    expressions: list[Expression] = []
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, Mapping):
            values = item.get("values") or ()
            key, operator = str(item.get("key")), str(item.get("operator"))
            expressions.append((key, operator, tuple(str(v) for v in values)))
    return tuple(expressions)


def placement(pod: Mapping[str, Any]) -> Placement:
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector")
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))  # fmt: skip
    terms = None
    if isinstance(required, Mapping):
        terms = tuple(
            (_expressions(term.get("matchExpressions")), _expressions(term.get("matchFields")))
            for term in required.get("nodeSelectorTerms") or ()
            if isinstance(term, Mapping)
        )
    tolerations = tuple(t for t in spec.get("tolerations") or () if isinstance(t, Mapping))
    os_name = (spec.get("os") or {}).get("name") if isinstance(spec.get("os"), Mapping) else None
    return Placement(
        {str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) else {},
        terms,
        tolerations,
        str(os_name) if os_name else None,
    )


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _holds(expression: Expression, labels: Mapping[str, str]) -> bool:
    key, operator, values = expression
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        have, bound = _integer(labels[key]), _integer(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def _tolerated(taint: Taint, tolerations: Sequence[Mapping[str, Any]]) -> bool:
    key, value, effect = taint
    for toleration in tolerations:
        if toleration.get("effect") not in (None, "", effect):
            continue
        operator = toleration.get("operator") or "Equal"
        wanted = toleration.get("key") or ""
        if operator == "Exists" and (not wanted or wanted == key):
            return True
        if operator == "Equal" and wanted == key and str(toleration.get("value") or "") == value:
            return True
    return False


def allows(where: Placement, labels: Mapping[str, str], taints: Sequence[Taint], *, name: str = "") -> bool:
    """Whether a node with `labels` and `taints` (and `name`, for matchFields) passes the filters."""
    for key, value in where.selector.items():
        if labels.get(key) != value:
            return False
    if where.os is not None and labels.get(_OS, where.os) != where.os:
        return False
    if where.terms is not None:
        fields = {"metadata.name": name}
        if not any(
            (expressions or by_field)
            and all(_holds(e, labels) for e in expressions)
            and all(_holds(f, fields) for f in by_field)
            for expressions, by_field in where.terms
        ):
            return False
    return all(_tolerated(taint, where.tolerations) for taint in taints)


def matching_shapes(where: Placement, index: NodeIndex) -> list[tuple[Decimal, Decimal]]:
    """The distinct (cpu, memory) allocatable of the nodes the Pod may be scheduled on, sorted.

    Found once per placement and index (`NodeIndex.memo`): the scan is the larger part of node fit.
    """
    key = where.key()
    shapes = index.memo.get(key)
    if shapes is None:
        shapes = tuple(_scan(where, index))
        if len(index.memo) >= _MEMO_SIZE:
            index.memo.clear()
        index.memo[key] = shapes
    return list(shapes)


def pod_shapes(pod: Mapping[str, Any], index: NodeIndex) -> list[tuple[Decimal, Decimal]]:
    """`matching_shapes(placement(pod), index)`, remembered by the text of the fields `placement`
    reads: a workload's replicas repeat them, and reading them into a `Placement` and its key costs
    more than the lookup. The text (`repr` of decoded JSON values) differs wherever they differ."""
    spec = pod.get("spec") or {}
    text = repr((spec.get("nodeSelector"), spec.get("affinity"), spec.get("tolerations"), spec.get("os")))
    key = (_RAW, text)
    shapes = index.memo.get(key)
    if shapes is None:
        shapes = tuple(matching_shapes(placement(pod), index))
        if len(index.memo) >= _MEMO_SIZE:
            index.memo.clear()
        index.memo[key] = shapes
    return list(shapes)


_RAW = "pod fields"  # tags `pod_shapes`' memo keys (a `Placement.key()` is a 4-tuple)


def _scan(where: Placement, index: NodeIndex) -> list[tuple[Decimal, Decimal]]:
    per_node = where.by_field or bool(where.keys() & index.per_node_keys)
    allowed: set[tuple[Decimal, Decimal]] = set()
    for group in index.groups:
        if not per_node:
            if allows(where, group.labels, group.taints):
                allowed.update(group.shapes)
            continue
        for node in group.members:
            if allows(where, node.labels, node.taints, name=node.name):
                allowed.add((node.cpu, node.memory))
    return sorted(allowed)
