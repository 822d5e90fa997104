"""How a big pass is split so that no single query costs Prometheus more than a sample budget.

A shard is a set of namespaces, a set of container names and a stable class of Pod names. Namespaces
are packed into groups under the budget; a namespace over it alone is split by its container names
(its live series counted per container), and only a container over the budget alone by Pod-name
classes: the Pods whose name ends in one class of characters (and, past 32 classes, whose
second-to-last character is in a class too). A Pod name's last characters are the random suffix of a
ReplicaSet's or Job's Pods, so the classes split a namespace evenly; a StatefulSet's ordinals and bare
Pods land in them too (less evenly: a shard Prometheus still refuses is split again).

Container names come first because Prometheus selects them for next to nothing (a handful of values,
one postings list each), while a Pod-name class is a regular expression run over every Pod name of
every block the query touches, several times slower, and the Pod names grow with the fleet
(docs/benchmarks.md). The last container group of a namespace is "every
container but the others'", so a container that is no longer running is read too.

Every series is always in exactly one shard, so per-series answers are the same whatever the split: a
shard's records are simply put side by side.

Pure: numbers in, shards out. The build asks one query per shard and kind (`webhook.profiles.build`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

__all__ = ["MAX_CLASSES", "Shard", "estimate", "plan"]

_LAST = "0123456789abcdefghijklmnopqrstuvwxyz"  # a Pod's name ends in one of these (DNS-1123)
_BEFORE = _LAST + "-."  # ... and the character before may be these too, or nothing
_START = ""  # stands for "no character before" (a one-character name)
MAX_CLASSES = 32  # per character position: 32 x 32 = 1,024 shards of one namespace at most


@dataclass(frozen=True, slots=True, order=True)
class Shard:
    """Namespaces (empty: every namespace of the build's scope), containers and a class of Pod names.

    `last` = (classes, index): the Pods whose last character's position in `_LAST` modulo `classes`
    is `index`; `before` likewise for the character before it ((1, 0): any). `containers`: the
    container names (empty: every one), or with `other_containers` every name but these.
    """

    namespaces: tuple[str, ...] = ()
    last: tuple[int, int] = (1, 0)
    before: tuple[int, int] = (1, 0)
    containers: tuple[str, ...] = ()
    other_containers: bool = False

    @property
    def whole(self) -> bool:
        """Every Pod of its namespaces (no Pod-name matcher needed)."""
        return self.last[0] == 1 and self.before[0] == 1

    @property
    def classes(self) -> int:
        return self.last[0] * self.before[0]

    def pod_pattern(self) -> str | None:
        """The regular expression (RE2, anchored by Prometheus) that picks this shard's Pods."""
        if self.whole:
            return None
        ends = _members(_LAST, self.last)
        if self.before[0] == 1:
            return f".*[{ends}]"
        before = [c for c in [*_BEFORE, _START] if _index(c, self.before)]
        chars = "".join(sorted(c for c in before if c != _START))
        # '-' first in a class is literal; '.' in a class is literal.
        chars = ("-" + chars.replace("-", "")) if "-" in chars else chars
        pattern = f".*[{chars}][{ends}]" if chars else ""
        if _START in before:
            pattern = f"{pattern}|[{ends}]" if pattern else f"[{ends}]"
        return pattern

    def split(self, namespaces: Sequence[str] = ()) -> list[Shard]:
        """Two shards that together are this one; [] when it cannot be split further.

        Several namespaces split first (`namespaces` lists them when the shard stands for all), then
        the last character's classes, then the one before.
        """
        names = self.namespaces or tuple(namespaces)
        if len(names) > 1:
            half = len(names) // 2
            return [replace(self, namespaces=names[:half]), replace(self, namespaces=names[half:])]
        if len(self.containers) > 1 and not self.other_containers:
            half = len(self.containers) // 2
            return [replace(self, containers=self.containers[:half]),
                    replace(self, containers=self.containers[half:])]
        for position in ("last", "before"):
            classes, index = getattr(self, position)
            if classes * 2 <= MAX_CLASSES:
                halves = [(classes * 2, index), (classes * 2, index + classes)]
                if position == "last":
                    return [replace(self, last=half) for half in halves]
                return [replace(self, before=half) for half in halves]
        return []

    def describe(self) -> str:
        where = ",".join(self.namespaces) if self.namespaces else "all namespaces"
        if self.containers:
            which = "other than " if self.other_containers else ""
            where += f", containers {which}{','.join(self.containers)}"
        number = self.before[1] * self.last[0] + self.last[1] + 1
        return where if self.whole else f"{where}, Pod-name class {number}/{self.classes}"


def _index(char: str, spec: tuple[int, int]) -> bool:
    classes, index = spec
    position = len(_BEFORE) if char == _START else _BEFORE.index(char)
    return position % classes == index


def _members(alphabet: str, spec: tuple[int, int]) -> str:
    return "".join(c for c in alphabet if _index(c, spec))


def estimate(series: float, *, span: float, resolution: float) -> float:
    """Samples one query over `series` live series loads: each at most one point per `resolution`."""
    return series * span / max(resolution, 1.0)


def plan(
    series: Mapping[str, Mapping[str, float]], *, span: float, resolution: float | Mapping[str, float],
    budget: float,
) -> list[Shard]:
    """The shards of one pass over `span`: as few queries as keep each under `budget` samples.

    `resolution`: seconds per point a query materialises (`resolution.points`), one for all or per
    namespace (its own scrape interval). `series`: live series per namespace and container, naming
    every namespace of the build's scope that has history (an empty mapping for one without live
    series: its cost is unknown, it joins a group). Everything under the budget is one query over the
    whole scope (`Shard()`). Otherwise namespaces are packed into groups under the budget, largest
    first, and a namespace over it on its own is split by container (`_by_container`).
    """
    def finest(ns: str) -> float:
        """Seconds per point a query over `ns` materialises (its data's interval, or the step)."""
        if isinstance(resolution, Mapping):
            return resolution.get(ns) or max(resolution.values(), default=1.0)
        return resolution

    cost = {ns: {name: estimate(n, span=span, resolution=finest(ns)) for name, n in by_name.items()}
            for ns, by_name in series.items()}
    total = {ns: sum(by_name.values()) for ns, by_name in cost.items()}
    if sum(total.values()) <= budget:
        return [Shard()]
    shards: list[Shard] = []
    for ns in sorted(ns for ns in total if total[ns] > budget):
        shards += _by_container(ns, cost[ns], budget)
    fitting = {ns: samples for ns, samples in total.items() if samples <= budget}
    shards += [Shard(tuple(sorted(members))) for _, members in _packed(fitting, budget)]
    return sorted(shards)


def _packed(cost: Mapping[str, float], budget: float) -> list[tuple[float, list[str]]]:
    """The names of `cost` (each within `budget`) in groups that add up to at most `budget`: first
    fit, largest first; (used, members) per group, in the order they were opened."""
    groups: list[tuple[float, list[str]]] = []
    for name in sorted(cost, key=lambda name: (-cost[name], name)):
        for i, (used, members) in enumerate(groups):
            if used + cost[name] <= budget:
                groups[i] = (used + cost[name], [*members, name])
                break
        else:
            groups.append((cost[name], [name]))
    return groups


def _by_container(namespace: str, cost: Mapping[str, float], budget: float) -> list[Shard]:
    """A namespace over the budget: its containers packed into groups under it (the smallest group
    reads every container but the other groups', the ones not running now included); a container
    over the budget alone is cut into Pod-name classes. One container, or none under the budget:
    the whole namespace in Pod-name classes."""
    fitting = [name for name in cost if cost[name] <= budget]
    if len(cost) < 2 or not fitting:
        return _cut(namespace, sum(cost.values()) / budget)
    shards: list[Shard] = []
    for name in sorted(set(cost) - set(fitting)):
        shards += _cut(namespace, cost[name] / budget, containers=(name,))
    groups = _packed({name: cost[name] for name in fitting}, budget)
    groups.sort(key=lambda group: (-group[0], group[1]))
    rest = sorted(set(cost) - set(groups[-1][1]))
    shards += [Shard((namespace,), containers=tuple(sorted(members))) for _, members in groups[:-1]]
    shards.append(Shard((namespace,), containers=tuple(rest), other_containers=True))
    return shards


# Pod-name classes are even only over many Pods: a cut plans each class at this share of the budget.
_CLASS_HEADROOM = 0.75


def _cut(namespace: str, pieces: float, *, containers: tuple[str, ...] = ()) -> list[Shard]:
    """`namespace` (its `containers`, else all) in Pod-name classes (up to 1,024), enough for
    `pieces` budgets' worth with headroom."""
    pieces = math.ceil(pieces / _CLASS_HEADROOM)
    last = min(MAX_CLASSES, 1 << max(0, pieces - 1).bit_length())
    before = min(MAX_CLASSES, 1 << max(0, math.ceil(pieces / last) - 1).bit_length())
    return [Shard((namespace,), (last, i), (before, j), containers)
            for i in range(last) for j in range(before)]
