"""What Pods admitted in the last seconds charge their namespace's quotas, before the status shows it.

A ResourceQuota's `status.used` reaches pod-tailor through a watch, after the Pod it counts was
created: a ReplicaSet creating 50 Pods at once has every one of them decided against the same `used`.
The ledger remembers what each admitted Pod (not a dry run) charges each quota that counts it
(`Decision.charges`) and hands the sum to the engine as a fact (`decide(pending=...)`), so the 50th
Pod sees the 49 before it.

An entry expires when the quota's status has caught up: a new version of the quota seen at least
`settle` seconds after the Pod was admitted (quota admission writes `used` while the create is in
flight, so a status written that much later includes the Pod, or the Pod was refused), or after
`ttl` at the latest. Counting a Pod twice for a moment only makes pod-tailor more careful. Kept in
memory per process: each replica counts what it admitted (the API server spreads a burst over the
replicas, so each sees part of it; the quota status covers the rest within seconds).

A cached verdict in a quota namespace is reused while the room its quotas leave is within the
verdict's bands (`RoomReading`), asked once per replica: `left` keeps what each quota has left
(`hard - used - pending`) instead of summing the recent Pods again, and works it out afresh when the
quotas seen change (a new snapshot) or an entry may have expired. `reuse` asks and records for such
a replica in one call (one clock reading, one look-up of what is kept), since every cached replica
in a quota namespace asks both. The charges are counted rather than summed until something reads
the sums, and a verdict counting one quota accepts its replicas with no sum and no check while its
allowance holds: lower bounds while few enough have been charged, upper bounds until a charge is
given back at the bound (`webhook.admission.unfolded`).

The admission path runs on one event loop, so deciding and recording happen without a lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

from webhook.admission.unfolded import Charges, Kept, move
from webhook.core.quota import Quota, RoomReading, leftover

__all__ = ["QuotaLedger"]

_NEVER = float("inf")


class QuotaLedger:
    """Per namespace and quota: the recent Pods' charges (and their sum, brought up to date when read),
    and when each quota's status last changed."""

    def __init__(
        self,
        *,
        settle: float = 5.0,
        ttl: float = 120.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settle, self.ttl, self.max_entries, self._clock = settle, ttl, max_entries, clock
        # namespace -> quota -> the charges in time order / their sum (with what `Kept` counts since)
        self._entries: dict[str, dict[str, deque[tuple[float, Mapping[str, Decimal]]]]] = {}
        self._totals: dict[str, dict[str, dict[str, Decimal]]] = {}
        self._versions: dict[tuple[str, str], tuple[str, float]] = {}  # version, when first seen
        self._left: dict[str, Kept] = {}  # namespace -> what `left` keeps
        self._negative = False  # a negative charge seen: no replica accepted by `Kept.allowance`

    def __len__(self) -> int:
        return sum(len(entries) for queues in self._entries.values() for entries in queues.values())

    def pending(self, namespace: str, quotas: Sequence[Quota]) -> dict[str, dict[str, Decimal]]:
        """Quota name -> key -> what recent Pods charge it that `quotas` (as last seen) do not show."""
        now = self._clock()
        kept = self._left.get(namespace)
        if kept is not None:
            kept.fold()
        queues, totals = self._entries.get(namespace, {}), self._totals.get(namespace, {})
        found: dict[str, dict[str, Decimal]] = {}
        for quota in quotas:
            key = (namespace, quota.name)
            seen = self._versions.get(key)
            if seen is None or seen[0] != quota.version:
                seen = self._versions[key] = (quota.version, now)
                self._left.pop(namespace, None)  # what `left` kept may count entries now expired
            entries = queues.get(quota.name)
            if not entries:
                continue
            changed_at, total = seen[1], totals[quota.name]
            if self._expired(entries[0][0], changed_at, now):
                self._left.pop(namespace, None)
                if self._expired(entries[-1][0], changed_at, now):  # in time order: all of them
                    entries.clear()
                    total.clear()
                    continue
                while self._expired(entries[0][0], changed_at, now):
                    self._take(total, entries.popleft()[1])
            found[quota.name] = dict(total)
        return found

    def _expired(self, admitted: float, changed_at: float, now: float) -> bool:
        """Whether an entry of a Pod admitted at `admitted` is shown by a status seen at `changed_at`
        (a new version at least `settle` later), or older than `ttl`."""
        return admitted + self.settle <= changed_at or admitted + self.ttl <= now

    def left(self, namespace: str, quotas: Sequence[Quota]) -> Mapping[str, Mapping[str, Decimal]]:
        """Quota name -> key -> `hard - used - pending` (`leftover` of `quotas` and `pending`), kept
        up to date by `record`; read it, never change it."""
        kept = self._left.get(namespace)
        if kept is not None and kept.quotas is quotas and self._clock() < kept.expiry:
            kept.fold()
            return kept.lefts  # the same quotas (so the same versions), and no entry expired since
        return self._work_out_left(namespace, quotas).lefts

    def _work_out_left(self, namespace: str, quotas: Sequence[Quota]) -> Kept:
        found = leftover(quotas, self.pending(namespace, quotas))
        totals = self._totals.setdefault(namespace, {})
        kept = self._left[namespace] = Kept(quotas, self._next_expiry(namespace, quotas), found, totals)
        return kept

    def reuse(
        self, namespace: str, quotas: Sequence[Quota], reading: RoomReading | None,
        charges: Charges | None,
    ) -> bool:
        """For a replica of a cached verdict: whether what `quotas` have left (`left`) is within
        `reading`'s bands (None: the verdict does not depend on it), recording `charges` (None: the
        replica charges nothing) when it is. `left` then `record`, with one clock reading; while the
        reading's allowance holds (`Kept.allowance`), without working out what is left."""
        now = self._clock()
        kept = self._left.get(namespace)
        if kept is None or kept.quotas is not quotas or now >= kept.expiry:
            kept = self._work_out_left(namespace, quotas)
            if reading is not None and not self._within(kept, reading):
                return False
        elif reading is not None:  # the same quotas (so the same versions), and no entry expired since
            allowed = kept.allowed.get(id(reading))
            if allowed is None or allowed[0] is not reading or kept.charged > allowed[1]:
                kept.fold()
                if not self._within(kept, reading):
                    return False
        if charges:
            self._record(namespace, charges, now, kept)
        return True

    def _within(self, kept: Kept, reading: RoomReading) -> bool:
        """The exact check, against what is left as just worked out or folded; where it holds, how
        many replicas charged from here on leave it holding for sure (`Kept.allowance`)."""
        if not reading.within(kept.lefts):
            return False
        if not self._negative:
            kept.allowance(reading)
        return True

    def _next_expiry(self, namespace: str, quotas: Sequence[Quota]) -> float:
        """The earliest time an entry of these quotas' may expire while their versions stay the same
        (by `ttl`: by `settle` only once a new version is seen, which comes with new quotas)."""
        queues = self._entries.get(namespace, {})
        oldest = [entries[0][0] for entries in (queues.get(quota.name) for quota in quotas) if entries]
        return min(oldest) + self.ttl if oldest else _NEVER

    def record(self, namespace: str, charges: Charges) -> None:
        """Remember what a just-admitted Pod charges each quota that counts it."""
        self._record(namespace, charges, self._clock(), self._left.get(namespace))

    def _record(self, namespace: str, charges: Charges, now: float, kept: Kept | None) -> None:
        """`charges` appended to its quotas' entries; counted by `kept` (what `left` keeps for the
        namespace, if anything) where it takes them, else summed at once."""
        queues = self._entries.get(namespace)
        if queues is None:
            queues = self._entries[namespace] = {}
        totals = self._totals.setdefault(namespace, {})
        if kept is not None and kept.takes(charges):
            bound = self.max_entries
            for name, amounts in charges.items():
                entries = queues.get(name) or _opened(queues, totals, name)
                entries.append((now, amounts))
                if len(entries) > bound:  # the oldest Pod's charge no longer pending: room back
                    kept.give_back(name, entries.popleft()[1])
            if now + self.ttl < kept.expiry:
                kept.expiry = now + self.ttl  # the first entry: it expires first
            return
        lefts = None
        if kept is not None:
            kept.fold()
            kept.forget()  # what is left changes below, not counted
            lefts = kept.lefts
        for name, amounts in charges.items():
            entries = queues.get(name) or _opened(queues, totals, name)
            total = totals[name]
            entries.append((now, amounts))
            left = lefts.get(name) if lefts is not None else None
            if lefts is not None and left is None:  # a quota `left` was not worked out for: afresh
                del self._left[namespace]
                lefts = None
            if any(amount < 0 for amount in amounts.values()):
                self._negative = True
            move(total, left, amounts, 1)
            if len(entries) > self.max_entries:  # the oldest Pod's charge no longer pending: room back
                move(total, left, entries.popleft()[1], -1)
        if kept is not None and lefts is not None and now + self.ttl < kept.expiry:
            kept.expiry = now + self.ttl  # the first entry: it expires first

    @staticmethod
    def _take(total: dict[str, Decimal], charges: Mapping[str, Decimal]) -> None:
        for resource, amount in charges.items():
            total[resource] -= amount


def _opened(
    queues: dict[str, deque[tuple[float, Mapping[str, Decimal]]]], totals: dict[str, dict[str, Decimal]],
    name: str,
) -> deque[tuple[float, Mapping[str, Decimal]]]:
    """Quota `name`'s entries and total, kept from its first charge on (an empty queue is kept too)."""
    entries = queues.get(name)
    if entries is None:
        entries = queues[name] = deque()
        totals[name] = {}
    return entries
