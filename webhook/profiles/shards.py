"""How a big pass is split so that no single query costs Prometheus more than a sample budget.

A shard is a set of namespaces and a stable class of Pod names: the Pods whose name ends in one
class of characters (and, past 32 classes, whose second-to-last character is in a class too). A Pod
name's last characters are the random suffix of a ReplicaSet's or Job's Pods, so the classes split
a namespace evenly; a StatefulSet's ordinals and bare Pods land in them too (less evenly: a shard
Prometheus still refuses is split again). Every series of a Pod is always in exactly one shard, so
per-series answers are the same whatever the split: a shard's records are simply put side by side.

Pure: numbers in, shards out. The build asks one query per shard and kind (`webhook.profiles.build`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["MAX_CLASSES", "Shard", "estimate", "plan"]

_LAST = "0123456789abcdefghijklmnopqrstuvwxyz"  # a Pod's name ends in one of these (DNS-1123)
_BEFORE = _LAST + "-."  # ... and the character before may be these too, or nothing
_START = ""  # stands for "no character before" (a one-character name)
MAX_CLASSES = 32  # per character position: 32 x 32 = 1,024 shards of one namespace at most


@dataclass(frozen=True, slots=True, order=True)
class Shard:
    """Namespaces (empty: every namespace of the build's scope) and a class of Pod names.

    `last` = (classes, index): the Pods whose last character's position in `_LAST` modulo `classes`
    is `index`; `before` likewise for the character before it ((1, 0): any).
    """

    namespaces: tuple[str, ...] = ()
    last: tuple[int, int] = (1, 0)
    before: tuple[int, int] = (1, 0)

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
            return [Shard(names[:half], self.last, self.before), Shard(names[half:], self.last, self.before)]
        for position in ("last", "before"):
            classes, index = getattr(self, position)
            if classes * 2 <= MAX_CLASSES:
                halves = [(classes * 2, index), (classes * 2, index + classes)]
                if position == "last":
                    return [Shard(self.namespaces, half, self.before) for half in halves]
                return [Shard(self.namespaces, self.last, half) for half in halves]
        return []

    def describe(self) -> str:
        where = ",".join(self.namespaces) if self.namespaces else "all namespaces"
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


def plan(series: Mapping[str, float], *, span: float, resolution: float, budget: float) -> list[Shard]:
    """The shards of one pass over `span`: as few queries as keep each under `budget` samples.

    `series`: live series per namespace, naming every namespace of the build's scope that has
    history (0 for one without live series: its cost is unknown, it joins a group). Everything under
    the budget is one query over the whole scope (`Shard()`, as small builds always were). Otherwise
    namespaces are packed into groups under the budget, largest first, and a namespace over it on
    its own is cut into Pod-name classes (a power of two, at least as many as it needs).
    """
    cost = {ns: estimate(n, span=span, resolution=resolution) for ns, n in series.items()}
    if sum(cost.values()) <= budget:
        return [Shard()]
    shards: list[Shard] = []
    groups: list[tuple[float, list[str]]] = []
    for ns in sorted(cost, key=lambda name: (-cost[name], name)):
        if cost[ns] > budget:
            shards += _cut(ns, math.ceil(cost[ns] / budget))
            continue
        for i, (used, members) in enumerate(groups):  # first fit, largest first
            if used + cost[ns] <= budget:
                groups[i] = (used + cost[ns], [*members, ns])
                break
        else:
            groups.append((cost[ns], [ns]))
    shards += [Shard(tuple(sorted(members))) for _, members in groups]
    return sorted(shards)


def _cut(namespace: str, pieces: int) -> list[Shard]:
    """`namespace` in at least `pieces` Pod-name classes (up to 1,024)."""
    last = min(MAX_CLASSES, 1 << max(0, pieces - 1).bit_length())
    before = min(MAX_CLASSES, 1 << max(0, math.ceil(pieces / last) - 1).bit_length())
    return [Shard((namespace,), (last, i), (before, j)) for i in range(last) for j in range(before)]
