"""What the step limit needs across restarts: each recommendation's earlier values, carried on every write.

The engine serves a recommendation at most a bounded step from the one served before
(`webhook.core.sizing.steady`, per the namespace policy). The state that needs is not in any process: every
write to a store carries, per container, the trail of what the earlier builds recommended (the
previous document's trail plus its own value, the latest build of each UTC day, for a week), and
stamps each recommendation with its build time. Every writer (`profiles build`, `recommend`, `serve`'s
own builds) writes through `TrailingStore`, which `runner.open_store` hands out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from webhook.core.model.profile import ContainerProfile, Recommendation, TrailPoint
from webhook.core.model.workload import WorkloadKey
from webhook.core.sizing.steady import DAY
from webhook.profiles.store import ProfileDocument, ProfileStore, StoreError, WorkloadEntry

__all__ = ["KEEP_DAYS", "TrailingStore", "carry_trails"]

KEEP_DAYS = 7  # a fall of 30 % a day is bounded by 0.7^7 = 8 % after a week: older values change nothing


def _trail(before: ContainerProfile | None, *, fallback_at: float, built_at: float) -> tuple[TrailPoint, ...]:
    if not isinstance(before, Recommendation):
        return ()
    at = before.built_at if before.built_at is not None else fallback_at
    points = list(before.trail)
    if at > 0:
        points.append(TrailPoint(at, before.cpu, before.memory, oom=before.evidence.oom_kills > 0))
    latest: dict[int, TrailPoint] = {}
    for point in sorted(points, key=lambda p: p.at):
        if built_at - KEEP_DAYS * DAY < point.at < built_at:
            latest[int(point.at // DAY)] = point
    return tuple(latest[day] for day in sorted(latest))


def carry_trails(previous: ProfileDocument, new: ProfileDocument) -> ProfileDocument:
    """`new`, each recommendation stamped with its build time and given its trail from `previous`."""
    workloads: dict[WorkloadKey, WorkloadEntry] = {}
    for key, entry in new.workloads.items():
        old = previous.workloads.get(key)
        containers: dict[str, ContainerProfile] = {}
        for name, profile in entry.containers.items():
            if isinstance(profile, Recommendation):
                built_at = new.generated_at if profile.built_at is None else profile.built_at
                trail = _trail(old.containers.get(name) if old else None, fallback_at=previous.generated_at,
                               built_at=built_at)
                profile = dataclasses.replace(profile, built_at=built_at, trail=trail)
            containers[name] = profile
        workloads[key] = dataclasses.replace(entry, containers=containers)
    return dataclasses.replace(new, workloads=workloads)


class TrailingStore:
    """A `ProfileStore` whose writes carry the trails from what it held before."""

    def __init__(self, inner: ProfileStore) -> None:
        self.inner = inner

    def read(self) -> ProfileDocument:
        return self.inner.read()

    def fingerprint(self) -> object:
        return self.inner.fingerprint()

    def describe(self) -> str:
        return self.inner.describe()

    def write(self, document: ProfileDocument, *, scope: Iterable[str] | None = None) -> None:
        try:
            previous = self.inner.read()
        except StoreError:  # unreadable: this write replaces it; the step limit starts afresh
            previous = ProfileDocument({}, 0.0, "unreadable")
        self.inner.write(carry_trails(previous, document), scope=scope)
