"""The one mutable thing in the process: references to the current immutable snapshots.

Background refreshers build a complete snapshot and swap it in with one assignment; the admission
path reads `state.cluster` and `state.profiles` once per request and never blocks on I/O.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Protocol

from webhook.config.policies import bundled_policies
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot, ProfileSnapshot
from webhook.refreshers.health import Health

__all__ = ["Refresher", "State"]


@dataclass
class State:
    cluster: ClusterSnapshot = field(default_factory=lambda: ClusterSnapshot(policies=bundled_policies()))
    profiles: ProfileSnapshot = EMPTY_PROFILES
    # Names of refreshers that have not yet completed their first full load; /readyz waits for them.
    pending: set[str] = field(default_factory=set)
    # Human-readable notes for /readyz (e.g. "no cluster configuration: embedded defaults").
    notes: dict[str, str] = field(default_factory=dict)
    # Whether each source's last refresh worked; the snapshots stay the last good ones either way.
    health: Health = field(default_factory=Health)
    draining: bool = False  # set on SIGTERM: /readyz answers 503 while in-flight requests finish

    def swap_cluster(self, snapshot: ClusterSnapshot) -> None:
        self.cluster = snapshot

    def swap_profiles(self, snapshot: ProfileSnapshot) -> None:
        self.profiles = snapshot

    def ages(self, now: float | None = None) -> dict[str, float]:
        """Seconds since each snapshot was taken (for the snapshot-age metrics).

        Embedded defaults (no cluster) never go stale: 0. Profiles never built are infinitely old, so an
        alert on `age > N` fires for them instead of reading them as fresh.
        """
        now = time.time() if now is None else now
        return {
            "cluster": now - self.cluster.taken_at if self.cluster.taken_at else 0.0,
            "profiles": now - self.profiles.taken_at if self.profiles.taken_at else math.inf,
        }


class Refresher(Protocol):
    """A long-running background task that keeps one snapshot fresh.

    `run` registers its `name` in `state.pending` until its first full load, swaps snapshots whole,
    survives outages by keeping the last snapshot, and returns only when cancelled.
    """

    name: str

    async def run(self, state: State) -> None: ...
