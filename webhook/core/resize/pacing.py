"""How fast in-place resizes may go: per workload and across the cluster (pure).

A workload keeps most of its Pods as they are while a few resize: at most max(1, maxConcurrentPercent)
of its Pods are resizing at once (asked, not yet actual), the way a rolling update keeps most replicas
serving. Across the cluster, at most `per_minute` resizes are asked in any sliding minute, so a new
profile never turns into a burst of kubelet work on every node at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["RateLimit", "workload_room"]


@dataclass(frozen=True, slots=True)
class RateLimit:
    per_minute: int

    def allows(self, asked_at: Iterable[float], *, now: float) -> bool:
        """Whether one more resize may be asked now, given when the last ones were."""
        return sum(1 for at in asked_at if now - 60 < at <= now) < self.per_minute


def workload_room(*, pods: int, resizing: int, allowed: int) -> str | None:
    """Why no other Pod of the workload may start resizing now (`allowed` of its `pods` at once), or None."""
    if resizing >= allowed:
        return f"{resizing} of the workload's {pods} Pods resizing already (at most {allowed} at once)"
    return None
