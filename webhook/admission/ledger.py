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
(`hard - used - pending`) up to date charge by charge instead of summing the recent Pods again, and
works it out afresh when the quotas seen change (a new snapshot) or an entry may have expired.
`reuse` asks and records for such a replica in one call (one clock reading, one look-up of what is
kept), since every cached replica in a quota namespace asks both. The replicas of a burst come one
after another with the same verdict: from the one after its decision (or after a replica of another
verdict) on, `reuse` works out once how many more of them the verdict's bands accept, each taking
the same charge off the same room (`_fitting`), and charges each of them by appending its entry and
counting it; the count is added to the totals and to what is left (times the charge, the same sum)
before anything else reads or changes them.

The admission path runs on one event loop, so deciding and recording happen without a lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal, InvalidOperation

from webhook.core.quota import Quota, RoomReading, leftover

__all__ = ["QuotaLedger"]

_Charges = Mapping[str, Decimal]
_NEVER = float("inf")
_ANY = 1 << 62  # a verdict that reads no room accepts any number of replicas


class _Kept:
    """What `left` keeps for one namespace, and the run of replicas of one verdict it is charging.

    The run: the verdict last accepted (`charges` and `reading`, by identity); `remaining`, how many
    more replicas in a row its bands accept (None: not worked out yet); `count`, how many of them are
    charged in `entries` but not yet in the totals and `lefts` (`QuotaLedger._fold`).
    """

    __slots__ = ("amounts", "charges", "count", "entries", "expiry", "lefts", "lows_only", "name", "quotas",
                 "reading", "remaining", "total")

    def __init__(self, quotas: Sequence[Quota], expiry: float, lefts: dict[str, dict[str, Decimal]]) -> None:
        self.quotas, self.expiry, self.lefts = quotas, expiry, lefts
        self.charges: Mapping[str, _Charges] | None = None
        self.reading: RoomReading | None = None
        self.remaining: int | None = None
        self.lows_only = False  # no band of the reading bounds the room from above: a charge given back holds
        self.count = 0
        self.name = ""
        self.amounts: _Charges = {}
        self.entries: deque[tuple[float, _Charges]] = deque()
        self.total: dict[str, Decimal] = {}


class QuotaLedger:
    """Per namespace and quota: the recent Pods' charges (and their running sum), and when each quota's
    status last changed."""

    def __init__(
        self,
        *,
        settle: float = 5.0,
        ttl: float = 120.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settle, self.ttl, self.max_entries, self._clock = settle, ttl, max_entries, clock
        self._entries: dict[tuple[str, str], deque[tuple[float, _Charges]]] = {}
        self._totals: dict[tuple[str, str], dict[str, Decimal]] = {}
        self._versions: dict[tuple[str, str], tuple[str, float]] = {}  # version, when first seen
        # namespace -> the quotas it was worked out for, when an entry may expire next, quota -> left
        self._left: dict[str, _Kept] = {}

    def __len__(self) -> int:
        return sum(len(entries) for entries in self._entries.values())

    def pending(self, namespace: str, quotas: Sequence[Quota]) -> dict[str, dict[str, Decimal]]:
        """Quota name -> key -> what recent Pods charge it that `quotas` (as last seen) do not show."""
        now = self._clock()
        kept = self._left.get(namespace)
        if kept is not None:
            self._fold(kept)
        found: dict[str, dict[str, Decimal]] = {}
        for quota in quotas:
            key = (namespace, quota.name)
            seen = self._versions.get(key)
            if seen is None or seen[0] != quota.version:
                seen = self._versions[key] = (quota.version, now)
                self._left.pop(namespace, None)  # what `left` kept may count entries now expired
            entries = self._entries.get(key)
            if not entries:
                continue
            changed_at, total = seen[1], self._totals[key]
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
            self._fold(kept)
            return kept.lefts  # the same quotas (so the same versions), and no entry expired since
        return self._work_out_left(namespace, quotas)

    def _work_out_left(self, namespace: str, quotas: Sequence[Quota]) -> dict[str, dict[str, Decimal]]:
        found = leftover(quotas, self.pending(namespace, quotas))
        self._left[namespace] = _Kept(quotas, self._next_expiry(namespace, quotas), found)
        return found

    def reuse(
        self, namespace: str, quotas: Sequence[Quota], reading: RoomReading | None,
        charges: Mapping[str, _Charges] | None,
    ) -> bool:
        """For a replica of a cached verdict: whether what `quotas` have left (`left`) is within
        `reading`'s bands (None: the verdict does not depend on it), recording `charges` (None: the
        replica charges nothing) when it is. `left` then `record`, with one clock reading; for the next
        replicas of the verdict accepted last, a count (see the module docstring)."""
        now = self._clock()
        kept = self._left.get(namespace)
        if kept is not None and kept.quotas is quotas and now < kept.expiry:
            # The same quotas (so the same versions), and no entry expired since.
            if charges is not None and kept.charges is charges and kept.reading is reading:
                remaining = kept.remaining
                if remaining is None:
                    remaining = kept.remaining = self._fitting(namespace, kept)
                entries = kept.entries
                if remaining > 0 and (len(entries) < self.max_entries or kept.lows_only):
                    kept.remaining = remaining - 1
                    kept.count += 1
                    entries.append((now, kept.amounts))
                    if len(entries) > self.max_entries:  # at the bound: the oldest charge given back
                        self._give_back(kept.total, kept.lefts.get(kept.name), entries.popleft()[1])
                    return True
            self._fold(kept)
            lefts = kept.lefts
        else:
            lefts = self._work_out_left(namespace, quotas)
        if reading is not None and not reading.within(lefts):
            return False
        if charges:
            self._record(namespace, charges, reading, now)
        return True

    def _fitting(self, namespace: str, kept: _Kept) -> int:
        """How many replicas in a row of the verdict `kept` last accepted its reading accepts from
        what is left now, each taking the same charge off it; 0 where that is not simply worked out
        (more than one quota). Never more than `reading.within` would accept one by one: left only
        shrinks by the run's charges (they are not negative), so a band's upper bound that holds now keeps
        holding; it grows only by a charge given back at the ledger's bound, which the run takes only
        where no band has an upper bound (`lows_only`)."""
        charges, reading = kept.charges, kept.reading
        if charges is None or len(charges) != 1:
            return 0
        name, amounts = next(iter(charges.items()))
        left = kept.lefts.get(name)
        if left is None:
            return 0
        if reading is not None and (reading.counted != (name,) or not reading.within(kept.lefts)):
            return 0
        kept.name, kept.amounts = name, amounts
        kept.entries, kept.total = self._entries[(namespace, name)], self._totals[(namespace, name)]
        # More room (a charge given back at the ledger's bound) keeps every lower bound held.
        kept.lows_only = reading is None or all(high is None for _key, _low, high, _name in reading.flat)
        fitting = _ANY
        for key, low, _high, _name in reading.flat if reading is not None else ():
            amount = amounts.get(key)
            if amount is None or amount == 0 or key not in left:
                continue
            if amount < 0:
                return 1
            if low is not None:
                try:
                    fitting = min(fitting, int((left[key] - low) // amount) + 1)
                except InvalidOperation:  # a quotient past the precision: this replica alone
                    return 1
        return fitting

    def _fold(self, kept: _Kept) -> None:
        """The replicas the run counted, added to the totals and taken off what is left (`count` times
        the charge: the sum `_record` would have made). The run goes on: what is left is the same."""
        count = kept.count
        if count:
            kept.count = 0
            total, left = kept.total, kept.lefts.get(kept.name)
            for resource, amount in kept.amounts.items():
                taken = amount * count
                total[resource] = total[resource] + taken if resource in total else taken
                if left is not None and resource in left:
                    left[resource] -= taken

    def _next_expiry(self, namespace: str, quotas: Sequence[Quota]) -> float:
        """The earliest time an entry of these quotas' may expire while their versions stay the same
        (by `ttl`: by `settle` only once a new version is seen, which comes with new quotas)."""
        queues = (self._entries.get((namespace, quota.name)) for quota in quotas)
        oldest = [entries[0][0] for entries in queues if entries]
        return min(oldest) + self.ttl if oldest else _NEVER

    def record(
        self, namespace: str, charges: Mapping[str, _Charges], *, reading: RoomReading | None = None
    ) -> None:
        """Remember what a just-admitted Pod charges each quota that counts it. A cached verdict's next
        replica that hands `reuse` these very `charges` and `reading` (the verdict's) is the run's."""
        self._record(namespace, charges, reading, self._clock())

    def _record(
        self, namespace: str, charges: Mapping[str, _Charges], reading: RoomReading | None, now: float
    ) -> None:
        """`charges` recorded; the next replica of the verdict with these `charges` and `reading` (the
        objects) may be counted as a run's (`reuse`)."""
        kept = self._left.get(namespace)
        if kept is not None:
            self._fold(kept)
            kept.charges, kept.reading, kept.remaining = charges, reading, None  # a run of its own from here
        lefts = kept.lefts if kept is not None else None
        for name, amounts in charges.items():
            key = (namespace, name)
            entries = self._entries.get(key)
            if entries is None:
                entries, total = self._entries[key], self._totals[key] = deque(), {}
            else:
                total = self._totals[key]
            entries.append((now, amounts))
            left = lefts.get(name) if lefts is not None else None
            if lefts is not None and left is None:  # a quota `left` was not worked out for: afresh
                del self._left[namespace]
                lefts = None
            for resource, amount in amounts.items():
                total[resource] = total[resource] + amount if resource in total else amount
                if left is not None and resource in left:
                    left[resource] -= amount
            if len(entries) > self.max_entries:  # the oldest Pod's charge no longer pending: room back
                self._give_back(total, left, entries.popleft()[1])
        if kept is not None and lefts is not None and now + self.ttl < kept.expiry:
            kept.expiry = now + self.ttl  # the first entry: it expires first

    @staticmethod
    def _give_back(total: dict[str, Decimal], left: dict[str, Decimal] | None, charges: _Charges) -> None:
        """A charge no longer pending (past the ledger's bound): off the totals, back to what is left."""
        for resource, amount in charges.items():
            total[resource] = total[resource] - amount if resource in total else -amount
            if left is not None and resource in left:
                left[resource] += amount

    @staticmethod
    def _take(total: dict[str, Decimal], charges: _Charges) -> None:
        for resource, amount in charges.items():
            total[resource] -= amount
