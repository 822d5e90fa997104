"""Steady recommendations: a rebuilt profile moves a container's request a bounded step a day.

Why: every rebuild reads a window that slid by a day; without a bound a quiet weekend drops next
Monday's requests at once, and a request that feeds back into what is measured (an HPA on
Utilization, `webhook.core.sizing.holds`) walks off. The default lets a recommendation fall at most 30 % a
day and rise at once (a container short of memory must not wait), memory after an OOM kill always
at once.

Where: at admission, in this pure fold. The store keeps, with each recommendation, what the earlier
builds recommended, one value a day for a week (`Recommendation.trail`, written by
`webhook.profiles.trailingstore`); the engine folds the namespace policy's step limit over that trail and the
current value. So the limit is the policy's (per namespace, as every other value is), every replica
serves the same number, and a restart loses nothing: the state is in the store, not in a process.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from webhook.core.model.profile import Recommendation
from webhook.core.model.quantity import render
from webhook.core.policy.sections import StepLimit

__all__ = ["DAY", "Steadied", "steadied"]

DAY = 86_400
_UNIT = {"cpu": Decimal("0.001"), "memory": Decimal(2**20)}  # held values round up to 1m and 1Mi


@dataclass(frozen=True, slots=True)
class Steadied:
    value: Decimal  # what to serve
    history: Decimal  # what this build's history alone says

    @property
    def held(self) -> bool:
        return self.value != self.history

    def note(self, resource: str) -> str:
        held, history = render(resource, self.value), render(resource, self.history)
        return f"held at {held}: step limit, history says {history}"


def _step(served: Decimal, wanted: Decimal, *, days: Decimal, limit: StepLimit, at_once: bool) -> Decimal:
    if days <= 0 or wanted == served:
        return wanted
    if wanted < served:
        floor = served * (1 - limit.down_per_day) ** days if limit.down_per_day < 1 else Decimal(0)
        return max(wanted, floor)
    if limit.up_per_day is None or at_once:
        return wanted
    return min(wanted, served * (1 + limit.up_per_day) ** days)


def steadied(rec: Recommendation, resource: str, limit: StepLimit) -> Steadied:
    """The value to serve for `resource` (cpu or memory): the step limit folded over the trail.

    Oldest first, each build's value is served as far as the limit allows from the one before; a
    fall over two builds a day apart is bounded as one over two days, so how often builds run does
    not change the bound. Without a trail (a first build, an old store) the history is served as is.
    """
    history = rec.cpu if resource == "cpu" else rec.memory
    if rec.built_at is None or not rec.trail or resource not in _UNIT:
        return Steadied(history, history)
    points = sorted(
        (p.at, p.cpu if resource == "cpu" else p.memory, p.oom) for p in rec.trail if p.at < rec.built_at
    )
    points.append((rec.built_at, history, rec.evidence.oom_kills > 0))
    served = points[0][1]
    for (before, _, _), (at, wanted, oom) in itertools.pairwise(points):
        days = Decimal(repr(at - before)) / DAY
        served = _step(served, wanted, days=days, limit=limit, at_once=resource == "memory" and oom)
    if served == history:
        return Steadied(history, history)
    unit = _UNIT[resource]
    return Steadied((served / unit).to_integral_value(rounding=ROUND_CEILING) * unit, history)
