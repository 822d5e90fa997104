"""The server's quota ledger: what Pods admitted in the last seconds charge their namespace's quotas,
and what each quota has left (`left`, kept up to date charge by charge for the verdict cache's room
check) always equal to working it out afresh from the quotas and the pending charges."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fit.kit import quota
from webhook.admission.ledger import QuotaLedger
from webhook.core.quota import Band, Quota, RoomReading, leftover, parse_quota

KEYS = ("requests.cpu", "requests.memory", "limits.memory")


HARD = (("compute", {"requests.cpu": "8", "requests.memory": "16Gi"}),
        ("limits", {"limits.memory": "32Gi", "requests.cpu": "6"}))  # fmt: skip


# As small in every key as the bands and charges below, so that any of them can be reached.
SMALL = (("compute", {"requests.cpu": "8", "requests.memory": "16"}),
         ("limits", {"limits.memory": "32", "requests.cpu": "6"}))  # fmt: skip


def quotas(
    version: int, *, two: bool, hards: tuple[tuple[str, dict[str, str]], ...] = HARD
) -> tuple[Quota, ...]:
    made = []
    for name, hard in hards[: 2 if two else 1]:
        body = quota(name, hard=hard, used=dict.fromkeys(hard, "1"))
        body["metadata"]["resourceVersion"] = str(version)
        made.append(parse_quota(body))
    return tuple(made)


charge = st.fixed_dictionaries({}, optional={key: st.integers(0, 3).map(Decimal) for key in KEYS})
steps = st.lists(
    st.one_of(
        st.tuples(st.just("record"), st.sampled_from(["compute", "limits", "both"]), charge),
        st.tuples(st.just("reuse"), st.sampled_from(["compute", "limits", "both"]), charge, st.booleans()),
        # A replica of a verdict seen before (the same objects), as the replicas of a burst come in a row.
        st.tuples(st.just("again"), st.integers(0, 2)),
        st.tuples(st.just("again"), st.just(0)),
        st.tuples(st.just("decided"), st.integers(0, 2)),  # a verdict decided afresh, then cached
        st.tuples(st.just("wait"), st.sampled_from([0.5, 3.0, 6.0, 50.0, 130.0])),
        st.tuples(st.just("status")),  # the quota controller wrote a new status: a new snapshot
        st.tuples(st.just("left")),
    ),
    max_size=60,
)


def reading(seen: tuple[Quota, ...], cpu: Band) -> RoomReading:
    """A decision that read the cpu room of `seen` through `cpu`, and no other room."""
    others = {key: Band() for q in seen for key in q.hard if key != "requests.cpu"}
    return RoomReading(tuple(q.name for q in seen), {"requests.cpu": cpu, **others})


def wide_band(seen: tuple[Quota, ...]) -> RoomReading:
    """Any cpu room from 5 up: a Pod asking 5 cpu that fits."""
    return reading(seen, Band(low=Decimal(5)))


def narrow_band(seen: tuple[Quota, ...]) -> RoomReading:
    """A cpu room of exactly 7 in `compute` (the room before any charge): a Pod lowered to it."""
    return reading(seen, Band(Decimal(7), Decimal(7), "compute"))


# A cached verdict: which quotas it charges, how much, and the cpu room from which it holds (None: any).
verdict = st.tuples(
    st.sampled_from(["compute", "limits", "both"]),
    st.fixed_dictionaries({"requests.cpu": st.integers(0, 3).map(Decimal)},
                          optional={key: st.integers(0, 3).map(Decimal) for key in KEYS[1:]}),
    st.one_of(st.none(), st.integers(0, 9).map(Decimal), st.integers(0, 9).map(Decimal)),
)  # fmt: skip


def made(
    seen: tuple[Quota, ...], names: str, amounts: dict[str, Decimal], low: Decimal | None, *, two: bool
) -> tuple[RoomReading | None, dict[str, dict[str, Decimal]]]:
    """The objects a cached verdict hands the ledger for each of its replicas."""
    charges = {name: amounts for name in (("compute", "limits") if names == "both" else (names,))
               if two or name == "compute"}  # fmt: skip
    return (reading(seen, Band(low=low)) if low is not None else None), charges



def twin_ledgers(bound: int) -> tuple[list[float], QuotaLedger, QuotaLedger]:
    """A ledger and its twin on one settable clock (`clock[0]`), both bounded at `bound` charges."""
    clock = [0.0]
    ledger, twin = (QuotaLedger(clock=lambda: clock[0], max_entries=bound) for _ in range(2))
    return clock, ledger, twin

class TestWhatEachQuotaHasLeft:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(steps, st.booleans(), st.lists(verdict, min_size=3, max_size=3), st.integers(3, 12))
    def test_kept_up_to_date_it_equals_working_it_out_afresh(
        self, plan: list[Any], two: bool, pool: list[Any], bound: int
    ) -> None:
        """Against a twin ledger that is only ever asked its pending charges, step by step; replicas of
        the same verdict in a row (`again`) are counted by the ledger rather than summed one by one."""
        clock, ledger, twin = twin_ledgers(bound)
        version, seen = 1, quotas(1, two=two)
        verdicts = [made(seen, *drawn, two=two) for drawn in pool]
        for step in plan:
            if step[0] == "decided":
                for each in (ledger, twin):
                    each.record("shop", verdicts[step[1]][1])
            elif step[0] == "again":
                read, charges = verdicts[step[1]]
                accepted = read is None or read.within(leftover(seen, twin.pending("shop", seen)))
                assert ledger.reuse("shop", seen, read, charges) is accepted
                if accepted and charges:
                    twin.record("shop", charges)
            elif step[0] in ("record", "reuse"):
                names = ("compute", "limits") if step[1] == "both" else (step[1],)
                charges = {name: step[2] for name in names if two or name == "compute"}
                if step[0] == "record":
                    ledger.record("shop", charges)
                    twin.record("shop", charges)
                else:  # a cached replica: charged only where its reading accepts what is left
                    read = wide_band(seen) if step[3] else narrow_band(seen)
                    accepted = read.within(leftover(seen, twin.pending("shop", seen)))
                    assert ledger.reuse("shop", seen, read, charges) is accepted
                    if accepted:
                        twin.record("shop", charges)
            elif step[0] == "wait":
                clock[0] += step[1]
            elif step[0] == "status":  # a new snapshot: the verdict cache starts afresh
                version += 1
                seen = quotas(version, two=two)
                verdicts = [made(seen, *drawn, two=two) for drawn in pool]
            assert ledger.left("shop", seen) == leftover(seen, twin.pending("shop", seen))

    def test_a_pod_admitted_is_taken_off_what_its_quota_has_left(self) -> None:
        clock = [0.0]
        ledger, seen = QuotaLedger(clock=lambda: clock[0]), quotas(1, two=False)
        expected = {"compute": {"requests.cpu": 7, "requests.memory": 16 * 2**30 - 1}}
        assert ledger.left("shop", seen) == expected
        ledger.record("shop", {"compute": {"requests.cpu": Decimal("0.5")}})
        assert ledger.left("shop", seen)["compute"]["requests.cpu"] == Decimal("6.5")

    def test_a_pod_past_the_ledgers_bound_gives_its_charge_back_to_what_the_quota_has_left(self) -> None:
        clock = [0.0]
        ledger, seen = QuotaLedger(clock=lambda: clock[0], max_entries=3), quotas(1, two=False)
        for _ in range(5):
            ledger.left("shop", seen)  # kept, then updated charge by charge
            ledger.record("shop", {"compute": {"requests.cpu": Decimal(1)}})
        assert len(ledger) == 3
        assert ledger.left("shop", seen)["compute"]["requests.cpu"] == 7 - 3
        assert ledger.left("shop", seen) == leftover(seen, ledger.pending("shop", seen))

    def test_a_charge_comes_back_when_the_status_has_caught_up_or_after_the_ttl(self) -> None:
        clock = [0.0]
        ledger, seen = QuotaLedger(clock=lambda: clock[0]), quotas(1, two=False)
        assert ledger.left("shop", seen)["compute"]["requests.cpu"] == 7  # this status seen at 0 s
        ledger.record("shop", {"compute": {"requests.cpu": Decimal(2)}})
        clock[0] = 6.0
        assert ledger.left("shop", seen)["compute"]["requests.cpu"] == 5  # same status: still pending
        assert ledger.left("shop", quotas(2, two=False))["compute"]["requests.cpu"] == 7  # caught up
        ledger.record("shop", {"compute": {"requests.cpu": Decimal(2)}})
        newer = quotas(3, two=False)
        assert ledger.left("shop", newer)["compute"]["requests.cpu"] == 5
        clock[0] += 121.0
        assert ledger.left("shop", newer)["compute"]["requests.cpu"] == 7  # the ttl passed


fraction = st.tuples(st.integers(0, 3), st.sampled_from([1, 2, 4])).map(lambda q: Decimal(q[0]) / q[1])
amount = st.one_of(*[fraction] * 9, st.just(Decimal("-0.5")))  # seldom negative: room given, not taken
band = st.tuples(
    st.one_of(st.none(), st.integers(-2, 9).map(Decimal)),  # low
    st.one_of(st.none(), st.none(), st.none(), st.integers(0, 9).map(Decimal)),  # high: mostly none
    # The tightest quota it named: of those counted, by index; mostly none.
    st.one_of(st.none(), st.none(), st.none(), st.none(), st.integers(0, 1)),
)
# Any cached verdict: the quotas that counted it (the first or all), what it charges each, and its
# reading (None: one that read no room), a band per key with lower, upper and named bounds.
any_verdict = st.tuples(
    st.booleans(),
    st.fixed_dictionaries({}, optional=dict.fromkeys(KEYS, amount)),
    st.one_of(st.none(), st.fixed_dictionaries(dict.fromkeys(KEYS, band))),
)
moves = st.lists(
    st.one_of(
        st.tuples(st.just("decided"), st.integers(0, 2)),
        st.tuples(st.just("replica"), st.integers(0, 2), st.booleans()),  # True: a dry run
        *[st.tuples(st.just("replica"), st.integers(0, 2), st.just(False))] * 3,  # interleaved
        *[st.tuples(st.just("replica"), st.just(0), st.just(False))] * 4,  # in a row
        st.tuples(st.just("wait"), st.sampled_from([0.5, 3.0, 6.0, 50.0, 130.0])),
        st.tuples(st.just("status"), st.lists(any_verdict, min_size=3, max_size=3)),
        st.tuples(st.just("read")),
    ),
    min_size=40,
    max_size=100,
)


def any_made(seen: tuple[Quota, ...], spec: Any) -> tuple[RoomReading | None, dict[str, dict[str, Decimal]]]:
    """The objects a cached verdict drawn by `any_verdict` hands the ledger for each replica."""
    first_only, amounts, bands = spec
    counted = tuple(q.name for q in seen[: 1 if first_only else None])
    charges = dict.fromkeys(counted, amounts)
    if bands is None:
        return None, charges
    keys = {key for q in seen if q.name in counted for key in q.hard}
    made_bands = {key: Band(low, high, None if named is None else counted[named % len(counted)])
                  for key, (low, high, named) in bands.items() if key in keys}  # fmt: skip
    return RoomReading(counted, made_bands), charges


def charged(pending: dict[str, dict[str, Decimal]]) -> dict[str, dict[str, Decimal]]:
    """What `pending` charges, without the zeros (a key charged nothing is as good as absent)."""
    found = {name: {key: amount for key, amount in amounts.items() if amount}
             for name, amounts in pending.items()}  # fmt: skip
    return {name: amounts for name, amounts in found.items() if amounts}


class TestACachedReplicaIsReusedExactlyWhenDecidingAgainWouldAgree:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(moves, st.booleans(), st.lists(any_verdict, min_size=3, max_size=3), st.integers(2, 8))
    def test_whatever_the_bands_quotas_dry_runs_clock_and_bound_it_agrees_with_the_long_way(
        self, plan: list[Any], two: bool, pool: list[Any], bound: int
    ) -> None:
        """Every replica accepted exactly when its reading holds for what a twin ledger's pending
        charges leave (upper and named bands, one or two quotas, dry runs, expiry, new statuses, a small
        bound), and what is left and pending always the twin's."""
        clock, ledger, twin = twin_ledgers(bound)
        version, seen = 1, quotas(1, two=two, hards=SMALL)
        verdicts = [any_made(seen, spec) for spec in pool]
        for step in plan:
            if step[0] == "decided":
                for each in (ledger, twin):
                    each.record("shop", verdicts[step[1]][1])
            elif step[0] == "replica":
                read, charges = verdicts[step[1]]
                # The twin asked as the ledger is (both see the status at the same time).
                dry, long_way = step[2], leftover(seen, twin.pending("shop", seen))
                accepted = read is None or read.within(long_way)
                assert ledger.reuse("shop", seen, read, None if dry else charges) is accepted
                if accepted and not dry and charges:
                    twin.record("shop", charges)
            elif step[0] == "wait":
                clock[0] += step[1]
            elif step[0] == "status":
                version += 1
                seen = quotas(version, two=two, hards=SMALL)
                verdicts = [any_made(seen, spec) for spec in step[1]]
            else:
                assert ledger.left("shop", seen) == leftover(seen, twin.pending("shop", seen))
                assert charged(ledger.pending("shop", seen)) == charged(twin.pending("shop", seen))
        assert ledger.left("shop", seen) == leftover(seen, twin.pending("shop", seen))
        assert charged(ledger.pending("shop", seen)) == charged(twin.pending("shop", seen))
        assert len(ledger) == len(twin)

    # Verdicts' replicas go unchecked while few enough are charged and no charge is given back: every
    # sequence here crosses a band exactly where the long way does.
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

        def cpu(band: Band | None, charge: str) -> tuple[RoomReading | None, dict[str, Any]]:
            return (reading(seen, band) if band else None), {"compute": {"requests.cpu": Decimal(charge)}}

        verdicts = {"A": cpu(Band(low=Decimal(4)), "0.5"), "B": cpu(None, "3"),
                    "C": cpu(Band(low=Decimal(1)), "1"), "D": cpu(Band(high=Decimal(4)), "0.5")}  # fmt: skip
        answers = "".join("YN"[not ledger.reuse("shop", seen, *verdicts[name])] for name in sequence)
        assert answers == expected
