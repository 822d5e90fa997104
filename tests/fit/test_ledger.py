"""The server's quota ledger: what Pods admitted in the last seconds charge their namespace's quotas,
and whether a replica of a cached verdict may be reused. Held to a twin that works everything out the
long way at every question, and never letting a replica it accepts take a namespace past `hard`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fit.kit import quota
from webhook.admission.ledger import QuotaLedger
from webhook.core.model.resourcequota import Band, Quota, RoomReading, parse_quota, room

KEYS = ("requests.cpu", "requests.memory", "limits.memory")
HARD = (("compute", {"requests.cpu": "8", "requests.memory": "16Gi"}),
        ("limits", {"limits.memory": "32Gi", "requests.cpu": "6"}))  # fmt: skip
# As small in every key as the bands and charges below, so that any of them can be reached.
SMALL = (("compute", {"requests.cpu": "8", "requests.memory": "16"}),
         ("limits", {"limits.memory": "32", "requests.cpu": "6"}))  # fmt: skip
Pending = dict[str, dict[str, Decimal]]
Charges = dict[str, dict[str, Decimal]]


def quotas(
    version: int, *, two: bool, hards: tuple[tuple[str, dict[str, str]], ...] = HARD
) -> tuple[Quota, ...]:
    made = []
    for name, hard in hards[: 2 if two else 1]:
        body = quota(name, hard=hard, used=dict.fromkeys(hard, "1"))
        body["metadata"]["resourceVersion"] = str(version)
        made.append(parse_quota(body))
    return tuple(made)


class LongWay:
    """The ledger's definition, worked out afresh at every question: every charge ever recorded, and
    what is pending is the sum of those among each quota's newest `bound` that its status does not
    show yet (a new version seen `settle` after the Pod) and that are younger than `ttl`."""

    def __init__(self, clock: Callable[[], float], bound: int) -> None:
        self.clock, self.bound, self.settle, self.ttl = clock, bound, 5.0, 120.0  # the ledger's defaults
        self.charges: dict[str, list[tuple[float, Mapping[str, Decimal]]]] = {}
        self.seen: dict[str, tuple[str, float]] = {}  # quota -> its version, when first seen

    def record(self, charges: Charges) -> None:
        for name, amounts in charges.items():
            self.charges.setdefault(name, []).append((self.clock(), amounts))

    def pending(self, seen: Sequence[Quota]) -> Pending:
        now, found = self.clock(), {}
        for each in seen:
            known = self.seen.get(each.name)
            if known is None or known[0] != each.version:
                known = self.seen[each.name] = (each.version, now)
            changed_at = known[1]
            kept = [amounts for admitted, amounts in self.charges.get(each.name, [])[-self.bound:]
                    if admitted + self.settle > changed_at and admitted + self.ttl > now]  # fmt: skip
            if kept:
                total: dict[str, Decimal] = {}
                for amounts in kept:
                    for key, amount in amounts.items():
                        total[key] = total.get(key, Decimal(0)) + amount
                found[each.name] = total
        return found


def charged(pending: Pending) -> Pending:
    """What `pending` charges, without the zeros (a key charged nothing is as good as absent)."""
    found = {name: {key: amount for key, amount in amounts.items() if amount}
             for name, amounts in pending.items()}  # fmt: skip
    return {name: amounts for name, amounts in found.items() if amounts}


amount = st.tuples(st.integers(0, 3), st.sampled_from([1, 2, 4])).map(lambda q: Decimal(q[0]) / q[1])
band = st.tuples(
    st.one_of(st.none(), st.integers(-2, 9).map(Decimal)),  # low
    st.one_of(st.none(), st.none(), st.none(), st.integers(0, 9).map(Decimal)),  # high: mostly none
    # The tightest quota it named: of those counted, by index; mostly none.
    st.one_of(st.none(), st.none(), st.none(), st.none(), st.integers(0, 1)),
)
charge = st.fixed_dictionaries({}, optional=dict.fromkeys(KEYS, amount))
# A cached verdict: the quotas that counted it (the first or all), what it charges each, and how it
# read the room: "fits" (a Pod whose values fit: from its own charge up, as `quota_pod` reads it),
# any bands per key (lower, upper and named bounds), or None (it read no room).
any_verdict = st.one_of(
    st.tuples(st.booleans(), charge, st.just("fits")),
    st.tuples(st.booleans(), charge, st.one_of(st.none(), st.fixed_dictionaries(dict.fromkeys(KEYS, band)))),
)
moves = st.lists(
    st.one_of(
        st.tuples(st.just("decided"), st.integers(0, 2)),  # decided whole, then its charges recorded
        st.tuples(st.just("replica"), st.integers(0, 2), st.booleans()),  # True: a dry run
        *[st.tuples(st.just("replica"), st.integers(0, 2), st.just(False))] * 3,  # interleaved
        *[st.tuples(st.just("replica"), st.just(0), st.just(False))] * 4,  # in a row
        st.tuples(st.just("wait"), st.sampled_from([0.5, 3.0, 5.0, 6.0, 50.0, 120.0, 130.0])),
        st.tuples(st.just("status"), st.lists(any_verdict, min_size=3, max_size=3)),  # a new snapshot
        st.tuples(st.just("read")),
    ),
    min_size=40,
    max_size=100,
)


def made(seen: tuple[Quota, ...], spec: Any) -> tuple[RoomReading | None, Charges, bool]:
    """What a cached verdict drawn by `any_verdict` hands the ledger for each replica, and whether it
    is a Pod whose values fit."""
    first_only, amounts, bands = spec
    counted = tuple(q.name for q in seen[: 1 if first_only else None])
    charges = dict.fromkeys(counted, amounts)
    if bands is None:
        return None, charges, False
    keys = {key for q in seen if q.name in counted for key in q.hard}
    if bands == "fits":
        fits = {key: Band(low=amounts.get(key, Decimal(0))) for key in keys}
        return RoomReading(counted, fits), charges, True
    drawn = {key: Band(low, high, None if named is None else counted[named % len(counted)])
             for key, (low, high, named) in bands.items() if key in keys}  # fmt: skip
    return RoomReading(counted, drawn), charges, False


class TestTheLedgerAgainstItsTwinWorkedOutTheLongWay:
    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(moves, st.booleans(), st.lists(any_verdict, min_size=3, max_size=3), st.integers(2, 8))
    def test_any_sequence_gets_the_twins_answers_and_never_takes_a_namespace_past_hard(
        self, plan: list[Any], two: bool, pool: list[Any], bound: int
    ) -> None:
        """Charges, replicas (some dry runs) of verdicts with any bands over one or two quotas, waits
        past `settle` and `ttl`, new statuses and a small bound: every replica is accepted exactly when
        its reading holds for what the twin's pending charges leave, what is pending is always the
        twin's, and a Pod that fits, once accepted, leaves no quota it counts below zero."""
        clock = [0.0]
        ledger = QuotaLedger(clock=lambda: clock[0], max_entries=bound)
        twin = LongWay(lambda: clock[0], bound)
        version, seen = 1, quotas(1, two=two, hards=SMALL)
        verdicts = [made(seen, spec) for spec in pool]
        for step in plan:
            if step[0] == "decided":  # as `admit` does: the pending charges read, then the Pod's recorded
                assert charged(ledger.pending("shop", seen)) == charged(twin.pending(seen))
                ledger.record("shop", verdicts[step[1]][1])
                twin.record(verdicts[step[1]][1])
            elif step[0] == "replica":
                read, charges, fits = verdicts[step[1]]
                dry, long_way = step[2], twin.pending(seen)  # asked as the ledger is: every replica
                accepted = read is None or read.holds(seen, long_way)
                assert ledger.reuse("shop", seen, read, None if dry else charges) is accepted
                if accepted and not dry:
                    twin.record(charges)
                    if fits and read is not None:  # the room it read, less its charge: none below zero
                        counted = [q for q in seen if q.name in read.counted]
                        assert all(left >= 0 for left, _ in room(counted, twin.pending(seen)).values())
            elif step[0] == "wait":
                clock[0] += step[1]
            elif step[0] == "status":
                version += 1
                seen = quotas(version, two=two, hards=SMALL)
                verdicts = [made(seen, spec) for spec in step[1]]
            else:
                assert charged(ledger.pending("shop", seen)) == charged(twin.pending(seen))
        assert charged(ledger.pending("shop", seen)) == charged(twin.pending(seen))

    # Every sequence here crosses a band exactly where the long way does.
    @pytest.mark.parametrize(
        ("sequence", "bound", "expected"),
        [
            ("AAAAAAAA", 100, "YYYYYYYN"),  # 7 cpu left, 0.5 each, from 4 up: the 8th would see 3.5
            ("ABA", 100, "YYN"),  # a larger charge than any before: 7 - 0.5 - 3 = 3.5 under 4
            ("AC" * 4, 100, "YYYYYYNY"),  # interleaved with another lower band (from 1 up, 1 each)
            ("CCCCCCCA", 100, "YYYYYYYN"),  # the charges of another verdict count as much
            ("BDDD", 100, "YYYY"),  # up to 4: the room only shrinks (4, 3.5, 3, 2.5)
            ("BDDD", 2, "YYYN"),  # past the bound B's 3 come back: 6 over 4
        ],
    )
    def test_replicas_are_refused_where_the_room_crosses_a_band(
        self, sequence: str, bound: int, expected: str
    ) -> None:
        ledger = QuotaLedger(clock=lambda: 0.0, max_entries=bound)
        seen = quotas(1, two=False, hards=SMALL)
        others = {key: Band() for key in seen[0].hard if key != "requests.cpu"}

        def cpu(band: Band | None, charge: str) -> tuple[RoomReading | None, dict[str, Any]]:
            reading = RoomReading(("compute",), {"requests.cpu": band, **others}) if band else None
            return reading, {"compute": {"requests.cpu": Decimal(charge)}}

        verdicts = {"A": cpu(Band(low=Decimal(4)), "0.5"), "B": cpu(None, "3"),
                    "C": cpu(Band(low=Decimal(1)), "1"), "D": cpu(Band(high=Decimal(4)), "0.5")}  # fmt: skip
        answers = "".join("YN"[not ledger.reuse("shop", seen, *verdicts[name])] for name in sequence)
        assert answers == expected


class TestWhatIsPending:
    def test_a_pod_admitted_is_pending_against_the_quotas_that_count_it(self) -> None:
        ledger, seen = QuotaLedger(clock=lambda: 0.0), quotas(1, two=True)
        half = {"requests.cpu": Decimal("0.5")}
        ledger.record("shop", {"compute": half})
        ledger.record("shop", {"compute": half, "limits": {"limits.memory": Decimal(1)}})
        expected = {"compute": {"requests.cpu": 1}, "limits": {"limits.memory": 1}}
        assert ledger.pending("shop", seen) == expected
        assert ledger.pending("other", seen) == {}
        assert len(ledger) == 3

    def test_a_pod_past_the_ledgers_bound_is_no_longer_pending(self) -> None:
        ledger, seen = QuotaLedger(clock=lambda: 0.0, max_entries=3), quotas(1, two=False)
        for charge in range(1, 6):
            ledger.record("shop", {"compute": {"requests.cpu": Decimal(charge)}})
        assert len(ledger) == 3
        assert ledger.pending("shop", seen) == {"compute": {"requests.cpu": 3 + 4 + 5}}

    def test_a_charge_expires_when_the_status_has_caught_up_or_after_the_ttl(self) -> None:
        clock = [0.0]
        ledger = QuotaLedger(clock=lambda: clock[0])
        assert ledger.pending("shop", quotas(1, two=False)) == {}  # this status seen at 0 s
        ledger.record("shop", {"compute": {"requests.cpu": Decimal(2)}})
        clock[0] = 6.0
        assert ledger.pending("shop", quotas(1, two=False)) == {"compute": {"requests.cpu": 2}}  # same status
        assert ledger.pending("shop", quotas(2, two=False)) == {}  # a status seen 6 s after the Pod
        ledger.record("shop", {"compute": {"requests.cpu": Decimal(2)}})
        clock[0] += 4.0
        assert ledger.pending("shop", quotas(3, two=False)) == {"compute": {"requests.cpu": 2}}  # too soon
        clock[0] += 117.0
        assert ledger.pending("shop", quotas(3, two=False)) == {}  # the ttl passed
        assert len(ledger) == 0
