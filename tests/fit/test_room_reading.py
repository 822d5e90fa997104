"""A decision says which rooms its quotas may leave for it to come out the same (`RoomReading`), so the
verdict cache reuses it for the next replica of a burst instead of deciding again: the reading must
never let through a room that decides differently."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.engine.podkit import container, pod, policy, run
from tests.fit.kit import facts, quota
from webhook.admission import VerdictCache, admit, default_engine
from webhook.admission.ledger import QuotaLedger
from webhook.cluster.resources import quota_essentials
from webhook.cluster.snapshot import build_snapshot
from webhook.config.policies import load_policy_text
from webhook.config.settings import Settings
from webhook.core.model.decision import Decision
from webhook.core.model.resourcequota import parse_quota
from webhook.core.snapshot import ProfileSnapshot

BIG = policy("resources:\n  cpu: {request: '3'}\n  memory: {request: 1Gi}", name="big")
LIMITED = policy(
    "resources:\n  cpu: {request: '2', limitWithoutHistory: true}\n"
    "  memory: {request: 1Gi, limitWithoutHistory: true}",
    name="limited",
)
BOOSTED = policy(
    "resources:\n  cpu: {request: '1'}\nstartupBoost: {enabled: true, source: factor}", name="boost"
)
Pending = dict[str, dict[str, Decimal]]


def decided(
    subject: dict[str, Any], quotas: list[dict[str, Any]], pending: Pending, using: Any = BIG
) -> Decision:
    return run(subject, using=using, facts=facts(quotas=quotas, pending=pending, server_version=(1, 33)))[0]


def same(one: Decision, other: Decision) -> bool:
    return (one.ops, one.injections, one.warnings, one.caps, one.charges) == (
        other.ops, other.injections, other.warnings, other.caps, other.charges
    )


def holds(decision: Decision, quotas: list[dict[str, Any]], pending: Pending) -> bool:
    reading = decision.room_reading
    return reading is None or reading.holds([parse_quota(q) for q in quotas], pending)


def cpu(amount: str) -> Pending:
    return {"compute": {"requests.cpu": Decimal(amount)}}


class TestWhichRoomsKeepADecision:
    QUOTA = [quota(hard={"requests.cpu": "10"}, used={"requests.cpu": "4"})]

    @pytest.mark.parametrize(
        ("then", "now", "kept"),
        [
            ("0", "3", True),  # 3 left of 6 still holds the 3 cores asked
            ("0", "4", False),  # 2 left: lowered
            ("4", "4", True),  # lowered to the same 2 cores
            ("4", "5", False),  # lowered to 1 core
            ("6", "9", True),  # full, the author's Pod: any smaller room ends the same
            ("6", "5", False),  # 1 core left: lowered instead
        ],
    )
    def test_a_room_in_the_band_decides_the_same_and_one_outside_does_not(
        self, then: str, now: str, kept: bool
    ) -> None:
        first = decided(pod(), self.QUOTA, cpu(then))
        again = decided(pod(), self.QUOTA, cpu(now))
        assert holds(first, self.QUOTA, cpu(now)) is kept
        assert same(first, again) is kept

    def test_a_full_quota_with_the_authors_own_requests_keeps_its_answer_as_the_burst_goes_on(self) -> None:
        own = pod(container(requests={"cpu": "500m"}), container("side", ports=()))
        first = decided(own, self.QUOTA, cpu("6"))
        assert "0 left" in first.warnings[-1]
        for charged in ("6.5", "7", "30"):
            assert holds(first, self.QUOTA, cpu(charged))
            assert same(first, decided(own, self.QUOTA, cpu(charged)))

    def test_a_decision_no_quota_counts_reads_no_room(self) -> None:
        scoped = [quota(hard={"cpu": "1"}, used={}, scopes=["Terminating"])]
        assert decided(pod(), scoped, {}).room_reading is None

    def test_where_the_boost_reads_the_cpu_room_only_that_room_keeps_it(self) -> None:
        roomy = [quota(hard={"requests.cpu": "10"}, used={})]
        first = decided(pod(), roomy, cpu("7"), using=BOOSTED)  # 2 cores boosted within 3 left
        assert holds(first, roomy, cpu("7"))
        assert not holds(first, roomy, cpu("6"))
        assert not same(first, decided(pod(), roomy, cpu("8.5"), using=BOOSTED))


KEYS = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
amounts = st.integers(min_value=0, max_value=12)
requests = st.dictionaries(
    st.sampled_from(("cpu", "memory")), st.integers(min_value=1, max_value=3000), max_size=2
)


def _quantity(resource: str, milli: int) -> str:
    return f"{milli}m" if resource == "cpu" else f"{milli}Mi"


def _pending(values: dict[str, int], other: dict[str, int] | None = None) -> Pending:
    def amounts(given: dict[str, int]) -> dict[str, Decimal]:
        return {key: Decimal(v) if "cpu" in key else Decimal(v * 2**30) for key, v in given.items()}

    return {"compute": amounts(values), **({"team": amounts(other)} if other else {})}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    hard=st.dictionaries(st.sampled_from(KEYS), st.integers(min_value=1, max_value=12), min_size=1),
    used=st.dictionaries(st.sampled_from(KEYS), amounts),
    then=st.dictionaries(st.sampled_from(KEYS), amounts),
    now=st.dictionaries(st.sampled_from(KEYS), amounts),
    own=st.lists(requests, min_size=1, max_size=3),
    init=st.booleans(),
    using=st.sampled_from((BIG, LIMITED, BOOSTED)),
    second=st.none() | st.tuples(*(st.dictionaries(st.sampled_from(KEYS), amounts) for _ in range(4))),
)
def test_a_room_the_reading_accepts_decides_exactly_the_same(
    hard: dict[str, int], used: dict[str, int], then: dict[str, int], now: dict[str, int],
    own: list[dict[str, int]], init: bool, using: Any,
    second: tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int]] | None,
) -> None:
    """Also with a second quota, so the tightest of them (named in the texts) may change."""

    def text(key: str, value: int) -> str:
        return str(value) if "cpu" in key else f"{value}Gi"

    def made(name: str, hard: dict[str, int], used: dict[str, int]) -> dict[str, Any]:
        return quota(
            name, hard={k: text(k, v) for k, v in hard.items()}, used={k: text(k, v) for k, v in used.items()}
        )

    quotas = [made("compute", hard, used)]
    other_then = other_now = None
    if second is not None and second[0]:
        quotas.append(made("team", second[0], second[1]))
        other_then, other_now = second[2], second[3]
    bodies = [
        container(f"c{i}", ports=(8080,) if i == 0 else (),
                  requests={r: _quantity(r, v) for r, v in values.items()} or None)
        for i, values in enumerate(own)
    ]
    subject = pod(*bodies, init=[container("setup", ports=())] if init else ())
    first = decided(subject, quotas, _pending(then, other_then), using)
    kept = holds(first, quotas, _pending(now, other_now))
    event(f"{'capped' if first.caps else 'not capped'}, {'kept' if kept else 'decided again'}")
    if kept:
        assert same(first, decided(subject, quotas, _pending(now, other_now), using))


class TestTheVerdictCacheInAQuotaNamespace:
    """Through `admit` with the server's ledger: a burst of replicas filling a quota gets the same
    answers with the verdict cache as without it, and the cache decides far fewer of them."""

    SAMPLE = Path(__file__).resolve().parents[2] / "webhook/data/sample-review.json"

    def bodies(self, count: int, *, own_cpu: str | None) -> list[bytes]:
        review: dict[str, Any] = json.loads(self.SAMPLE.read_text())
        if own_cpu is not None:
            review["request"]["object"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": own_cpu}}
        found = []
        for index in range(count):
            review["request"]["uid"] = f"u-{index}"
            found.append(json.dumps(review).encode())
        return found

    @pytest.mark.parametrize("own_cpu", [None, "500m"])
    @pytest.mark.parametrize("respect", [True, False])
    def test_a_burst_gets_the_same_answers_cached_or_not(self, own_cpu: str | None, respect: bool) -> None:
        text = "policies:\n  default:\n    resources:\n      cpu: {request: 700m}\n"
        if not respect:
            text += "    quota: {respect: false}\n"
        filling = quota(hard={"requests.cpu": "5"}, used={"requests.cpu": "1"}, namespace="default")
        objects = {"resourcequotas": [quota_essentials(filling)]}
        cluster = build_snapshot(policies=load_policy_text(text), settings=Settings(), objects=objects,
                                 server_version=(1, 33), taken_at=0.0, source="test")  # fmt: skip
        calls = [0]

        def engine(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            return default_engine()(*args, **kwargs)

        profiles, answers = ProfileSnapshot(), {}
        for cached in (True, False):
            ledger, cache, calls[0] = QuotaLedger(clock=lambda: 0.0), VerdictCache(512) if cached else None, 0
            answers[cached] = [
                orjson.loads(admit(
                    body, cluster=cluster, profiles=profiles, engine=engine, cache=cache, ledger=ledger
                ).body)["response"]
                for body in self.bodies(12, own_cpu=own_cpu)
            ]
            if cached:
                decided = calls[0]
        assert answers[True] == answers[False]
        kinds = {json.dumps({k: v for k, v in a.items() if k != "uid"}) for a in answers[False]}
        assert len(kinds) > 1 if respect else len(kinds) == 1  # the quota fills up: values come down
        assert decided < 12 / 2 if respect else decided == 1
