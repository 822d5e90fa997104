"""What the quota ledger keeps for one namespace: what each quota has left, and the charges not yet in it.

The cached replicas of many verdicts come interleaved (a burst across many workloads, often in one
namespace). Each replica's charge is appended to its quotas' entries at once (expiry and the bound
read them), but added to the totals and taken off what is left only when something reads them
(`Kept.fold`): until then it is counted per charge object (`count x amounts`, the same sum), as is
each charge given back at the ledger's bound. So a replica costs a count, not Decimal sums.

A replica is still accepted only where deciding again would give the same decision. Its verdict's
reading is checked exactly (`RoomReading.within`) against what is left after a fold; where the
reading counts the Pod in one quota, that check also works out how many replicas (of any verdict)
may be charged from then on with its bands held for sure (`Kept.allowance`): each takes at most
`largest` per key off the room, so a lower bound holds for as many as fit between the room and it;
an upper bound holds while the room only shrinks, until a charge is given back at the ledger's
bound (the ledger works out no allowance once it has seen a negative charge). Until that many are
charged, the verdict's replicas are accepted with no sum and no check; a larger charge than
`largest` forgets every allowance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation

from webhook.core.quota import Quota, RoomReading

__all__ = ["Charges", "Kept", "move"]

Amounts = Mapping[str, Decimal]
Charges = Mapping[str, Amounts]  # quota name -> key -> what one Pod charges it
ANY = 1 << 62  # a reading no charge can move out of its bands


class Kept:
    """For one namespace, worked out for `quotas` (by identity) and valid until `expiry`: what each
    quota has left as of the last fold (`lefts`), and what was charged or given back since.

    `counts`: id of a charge object -> the object and the replicas it charged since the fold; `backs`:
    (quota, id of amounts) -> the amounts and how many such charges were given back since the fold;
    `since`: replicas charged since the fold, `charged` in all; `largest`: per key, the largest amount
    any charge object counted here takes (`counts` keeps each object alive, so its id stays its own);
    `allowed`: id of a reading -> (the reading, up to which `charged` it accepts with no sum).
    """

    __slots__ = ("allowed", "backs", "bounded", "charged", "counts", "dirty", "expiry", "largest", "lefts",
                 "quotas", "since", "totals")

    def __init__(
        self, quotas: Sequence[Quota], expiry: float, lefts: dict[str, dict[str, Decimal]],
        totals: dict[str, dict[str, Decimal]],  # the ledger's, for the namespace: quota -> key -> total
    ) -> None:
        self.quotas, self.expiry, self.lefts, self.totals = quotas, expiry, lefts, totals
        self.counts: dict[int, _Count] = {}
        self.backs: dict[tuple[str, int], _Back] = {}
        self.since = 0
        self.charged = 0
        self.largest: dict[str, Decimal] = {}
        self.allowed: dict[int, tuple[RoomReading, int]] = {}
        self.bounded: list[int] = []  # the readings in `allowed` with an upper bound
        self.dirty: list[_Count] = []  # the slots of `counts` with a count since the fold

    def takes(self, charges: Charges) -> bool:
        """Whether `charges` may be counted here (every quota it charges has a `lefts`, and a total
        the ledger made): then counted; False where it charges a negative amount (a charge given back
        would then take room) or a quota not worked out here."""
        slot = self.counts.get(id(charges))
        if slot is None:
            lefts, largest = self.lefts, self.largest
            grew = False
            for name, amounts in charges.items():
                if name not in lefts:
                    return False
                for key, amount in amounts.items():
                    if amount < 0:
                        return False
                    if amount > largest.get(key, 0):
                        largest[key], grew = amount, True
            if grew:
                self.forget()  # worked out with a smaller largest charge
            slot = self.counts[id(charges)] = _Count(charges)
        if not slot.count:  # its first since the fold: the fold visits only these
            self.dirty.append(slot)
        slot.count += 1
        self.since += 1
        self.charged += 1
        return True

    def forget(self) -> None:
        """Every allowance gone (what is left changed in a way they do not bound)."""
        self.allowed.clear()
        self.bounded.clear()

    def give_back(self, name: str, amounts: Amounts) -> None:
        """A charge of quota `name` no longer pending (past the ledger's bound): counted, to come off
        the total and back to what is left at the next fold."""
        slot = self.backs.get((name, id(amounts)))
        if slot is None:
            slot = self.backs[(name, id(amounts))] = _Back(name, amounts)
        slot.count += 1
        if self.bounded:  # more room: an upper bound may no longer hold
            allowed = self.allowed
            for reading in self.bounded:
                allowed.pop(reading, None)
            self.bounded.clear()

    def fold(self) -> None:
        """The counted charges and give-backs, into the totals and what is left (`count x amounts`:
        the sums one by one would have made). An allowance holds on: it bounds what any charge since
        it takes, folded or not."""
        if not self.since and not self.backs:
            return
        totals, lefts = self.totals, self.lefts
        for slot in self.dirty:  # not every charge object counted here: a fold costs what it folds
            count, slot.count = slot.count, 0
            for name, amounts in slot.charges.items():
                move(totals[name], lefts[name], amounts, count)
        self.dirty.clear()
        for back in self.backs.values():
            move(totals[back.name], lefts[back.name], back.amounts, -back.count)
        self.backs.clear()
        self.since = 0

    def allowance(self, reading: RoomReading) -> int:
        """After a fold, where `reading.within(lefts)` holds: up to how many replicas charged here in
        all (`charged`) it holds for sure, kept for the reading; -1 where that is not simply worked
        out (several quotas counted: which is the tightest may change). A band's upper bound holds
        while the room only shrinks: until a charge is given back (`give_back` forgets it); the
        quota a band names is the one quota counted (`within` held)."""
        if len(reading.counted) != 1:
            return -1
        left, largest, allowed, bounded = self.lefts[reading.counted[0]], self.largest, ANY, False
        for key, low, high, _named in reading.flat:
            bounded = bounded or high is not None
            most = largest.get(key)
            if low is None or most is None or most <= 0:
                continue
            try:
                allowed = min(allowed, int((left[key] - low) // most))
            except InvalidOperation:  # a quotient past the precision
                return -1
        allowed = self.charged + allowed if allowed < ANY else ANY
        self.allowed[id(reading)] = (reading, allowed)
        if bounded:
            self.bounded.append(id(reading))
        return allowed


class _Count:
    """A charge object, and how many replicas it charged since the fold."""

    __slots__ = ("charges", "count")

    def __init__(self, charges: Charges) -> None:
        self.charges, self.count = charges, 0


class _Back:
    """What one charge takes of quota `name`, and how many such were given back since the fold."""

    __slots__ = ("amounts", "count", "name")

    def __init__(self, name: str, amounts: Amounts) -> None:
        self.name, self.amounts, self.count = name, amounts, 0


def move(total: dict[str, Decimal], left: dict[str, Decimal] | None, amounts: Amounts, count: int) -> None:
    """`count` charges of `amounts` onto a quota's total and off what it has left (`left`, if worked
    out); a negative `count` gives charges back."""
    for key, amount in amounts.items():
        taken = amount * count
        total[key] = total[key] + taken if key in total else taken
        if left is not None and key in left:
            left[key] -= taken
