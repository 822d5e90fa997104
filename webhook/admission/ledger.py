"""What Pods admitted in the last seconds charge their namespace's quotas, before the status shows it.

A ResourceQuota's `status.used` reaches pod-tailor through a watch, after the Pod it counts was
created: a ReplicaSet creating 50 Pods at once has every one of them decided against the same `used`.
The ledger remembers what each admitted Pod (not a dry run) charges each quota that counts it
(`Decision.charges`) and hands the sum to the engine as a fact (`decide(pending=...)`), so the 50th
Pod sees the 49 before it.

An entry expires when the quota's status has caught up: a new version of the quota seen at least
`settle` seconds after the Pod was admitted (quota admission writes `used` while the create is in
flight, so a status written that much later includes the Pod, or the Pod was refused), or after
`ttl` at the latest; at most `max_entries` a quota are kept, the oldest going first. Counting a Pod
twice for a moment only makes pod-tailor more careful. Kept in memory per process: each replica
counts what it admitted (the API server spreads a burst over the replicas, so each sees part of it;
the quota status covers the rest within seconds).

A cached verdict in a quota namespace is reused only where deciding again would give the same
decision: `reuse` checks the verdict's room reading (`RoomReading.holds`) against what the quotas
have left after the pending charges, once per replica.

The admission path runs on one event loop, so deciding and recording happen without a lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

from webhook.core.model.resourcequota import Quota, RoomReading

__all__ = ["Charges", "QuotaLedger"]

Charges = Mapping[str, Mapping[str, Decimal]]  # quota name -> key -> what one Pod charges it


class _Recent:
    """One quota's recent charges, oldest first, and their sum."""

    __slots__ = ("entries", "total")

    def __init__(self) -> None:
        self.entries: deque[tuple[float, Mapping[str, Decimal]]] = deque()
        self.total: dict[str, Decimal] = {}

    def add(self, amounts: Mapping[str, Decimal]) -> None:
        total = self.total
        for key, amount in amounts.items():
            total[key] = total[key] + amount if key in total else amount

    def take(self, amounts: Mapping[str, Decimal]) -> None:
        """A charge no longer counted: off the sum (every key of it is there, added with it)."""
        total = self.total
        for key, amount in amounts.items():
            total[key] -= amount


class QuotaLedger:
    """Per namespace and quota: the recent Pods' charges and their sum, and when each quota's status
    last changed."""

    def __init__(
        self,
        *,
        settle: float = 5.0,
        ttl: float = 120.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settle, self.ttl, self.max_entries, self._clock = settle, ttl, max_entries, clock
        self._recent: dict[tuple[str, str], _Recent] = {}  # (namespace, quota) -> its recent charges
        self._versions: dict[tuple[str, str], tuple[str, float]] = {}  # version, when first seen

    def __len__(self) -> int:
        return sum(len(recent.entries) for recent in self._recent.values())

    def pending(self, namespace: str, quotas: Sequence[Quota]) -> dict[str, dict[str, Decimal]]:
        """Quota name -> key -> what recent Pods charge it that `quotas` (as last seen) do not show."""
        now = self._clock()
        found: dict[str, dict[str, Decimal]] = {}
        for quota in quotas:
            key = (namespace, quota.name)
            seen = self._versions.get(key)
            if seen is None or seen[0] != quota.version:
                seen = self._versions[key] = (quota.version, now)
            recent = self._recent.get(key)
            if recent is None:
                continue
            entries, changed_at = recent.entries, seen[1]
            while entries and self._expired(entries[0][0], changed_at, now):
                recent.take(entries.popleft()[1])
            if not entries:
                del self._recent[key]
                continue
            found[quota.name] = dict(recent.total)
        return found

    def _expired(self, admitted: float, changed_at: float, now: float) -> bool:
        """Whether an entry of a Pod admitted at `admitted` is shown by a status seen at `changed_at`
        (a new version at least `settle` later), or older than `ttl`."""
        return admitted + self.settle <= changed_at or admitted + self.ttl <= now

    def record(self, namespace: str, charges: Charges) -> None:
        """Remember what a just-admitted Pod charges each quota that counts it."""
        now = self._clock()
        for name, amounts in charges.items():
            recent = self._recent.get((namespace, name))
            if recent is None:
                recent = self._recent[(namespace, name)] = _Recent()
            recent.entries.append((now, amounts))
            recent.add(amounts)
            if len(recent.entries) > self.max_entries:  # the oldest Pod's charge no longer counted
                recent.take(recent.entries.popleft()[1])

    def reuse(
        self, namespace: str, quotas: Sequence[Quota], reading: RoomReading | None, charges: Charges | None
    ) -> bool:
        """For a replica of a cached verdict decided against `quotas`: whether `reading` (None: the
        verdict read no room) holds for what they have left after the pending charges, recording
        `charges` (None: the replica charges nothing) when it does."""
        pending = self.pending(namespace, quotas)
        if reading is not None and not reading.holds(quotas, pending):
            return False
        if charges:
            self.record(namespace, charges)
        return True
