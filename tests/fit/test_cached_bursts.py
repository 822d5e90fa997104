"""Bursts of replicas through `admit` with the verdict cache and the server's quota ledger, filling a
quota: a cached verdict is reused only where deciding again would give the same answer (its room
reading holds for what the ledger says is left), else the Pod is decided whole, so every answer is
the one the server gives without the cache."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.engine.podkit import container, pod
from tests.fit.kit import node, quota
from tests.reviews import admission_review
from webhook.admission import VerdictCache, admit, default_engine
from webhook.admission.ledger import QuotaLedger
from webhook.cluster.resources import node_essentials, quota_essentials
from webhook.cluster.snapshot import build_snapshot
from webhook.config.policies import load_policy_text
from webhook.config.settings import Settings
from webhook.core.model.profile import Evidence, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot

KEYS = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
POLICIES = {
    "plain": "{}",
    "limited": "{resources: {cpu: {limitWithoutHistory: true}, memory: {limitWithoutHistory: true}}}",
    "boosted": "{startupBoost: {enabled: true, source: factor}}",
    "no supply": "{quota: {supplyRequired: false}}",
    "max node": "{fit: {maxNode: {cpu: '6', memory: 24Gi}}}",
}
EVIDENCE = Evidence("14d", 20_160, 336.0, 95.0, 0.15, 0.93)
WORKLOAD = WorkloadKey("shop", "Deployment", "web")
histories = st.none() | st.tuples(st.integers(10, 6000), st.integers(64, 20_000))  # cpu m, memory Mi
requests = st.dictionaries(st.sampled_from(("cpu", "memory")), st.integers(1, 3000), max_size=2)


def _text(key: str, value: int) -> str:
    return str(value) if "cpu" in key else f"{value}Gi"


def _cluster(kind: str, hard: dict[str, int], used: dict[str, int]) -> ClusterSnapshot:
    nodes = [node("a", cpu="1930m", memory="6Gi"), node("b", cpu="3920m", memory="14Gi"),
             node("c", cpu="7910m", memory="30Gi")]  # fmt: skip
    compute = quota(hard={k: _text(k, v) for k, v in hard.items()},
                    used={k: _text(k, v) for k, v in used.items()})  # fmt: skip
    return build_snapshot(
        policies=load_policy_text(f"policies:\n  default: {POLICIES[kind]}\n"), settings=Settings(),
        objects={"nodes": [node_essentials(n) for n in nodes], "resourcequotas": [quota_essentials(compute)]},
        server_version=(1, 33), taken_at=0.0, source="test",
    )  # fmt: skip


def _subject(own: list[dict[str, int]], init: bool) -> dict[str, Any]:
    bodies = [
        container(f"c{i}", ports=(8080,) if i == 0 else (),
                  requests={r: f"{v}m" if r == "cpu" else f"{v}Mi" for r, v in values.items()} or None)
        for i, values in enumerate(own)
    ]  # fmt: skip
    return pod(*bodies, init=[container("setup", ports=())] if init else ())


def _profiles(history: list[tuple[int, int] | None]) -> ProfileSnapshot:
    found = {
        f"c{i}": Recommendation(Decimal(cpu) / 1000, Decimal(memory * 2**20), EVIDENCE)
        for i, entry in enumerate(history) if entry is not None for cpu, memory in (entry,)
    }  # fmt: skip
    return ProfileSnapshot({WORKLOAD: found})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(sorted(POLICIES)),
    hard=st.dictionaries(st.sampled_from(KEYS), st.integers(min_value=1, max_value=4), min_size=1),
    used=st.dictionaries(st.sampled_from(KEYS), st.integers(0, 3)),
    bursts=st.lists(st.tuples(st.sampled_from(("a", "b")), st.integers(1, 40), st.booleans()), min_size=1,
                    max_size=4),  # template, replicas, dry run
    history=st.lists(histories, min_size=3, max_size=3),
)
def test_a_burst_through_admit_gets_the_same_answers_cached_as_decided_whole(
    kind: str, hard: dict[str, int], used: dict[str, int], bursts: list[tuple[str, int, bool]],
    history: list[tuple[int, int] | None],
) -> None:
    """Bursts of two templates (one stating its requests) fill the quota through the server's ledger,
    some of them dry runs: with the verdict cache (reused, or decided again as the quota fills) every
    answer is the uncached one."""
    cluster, profiles = _cluster(kind, hard, used), _profiles(history)
    templates = {"a": _subject([{}], False), "b": _subject([{"cpu": 500, "memory": 300}, {}], True)}
    calls = [0]

    def engine(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return default_engine()(*args, **kwargs)

    answers: dict[bool, list[Any]] = {}
    for cached in (True, False):
        ledger, cache, calls[0], answers[cached], uid = QuotaLedger(clock=lambda: 0.0), None, 0, [], 0
        cache = VerdictCache(512) if cached else None
        for name, count, dry_run in bursts:
            for _ in range(count):
                uid += 1
                review = admission_review(templates[name], uid=f"u-{uid}", dry_run=dry_run)
                answer = admit(orjson.dumps(review), cluster=cluster, profiles=profiles, engine=engine,
                               cache=cache, ledger=ledger)  # fmt: skip
                answers[cached].append(orjson.loads(answer.body)["response"])
        if cached:
            assert cache is not None
            assert calls[0] == len({name for name, _, _ in bursts}) + cache.decided_again
            event(f"decided again: {'some' if cache.decided_again else 'none'}")
    kinds = {orjson.dumps({k: v for k, v in answer.items() if k != "uid"}) for answer in answers[False]}
    event(f"{min(len(kinds), 4)}{'+' if len(kinds) >= 4 else ''} different answers")
    assert answers[True] == answers[False]


def test_a_burst_that_fills_its_quota_is_decided_again_and_answered_as_without_the_cache() -> None:
    """Replicas sized at 1 cpu from history against `requests.cpu: 4`: the fifth finds no room for its
    cached values, so the burst decides it again (the property above may not), and every answer is
    still the uncached one."""
    cluster = _cluster("plain", {"requests.cpu": 4}, {})
    profiles, template = _profiles([(1000, 512), None, None]), _subject([{}], False)
    answers: dict[bool, list[Any]] = {}
    caches: dict[bool, VerdictCache | None] = {}
    for cached in (True, False):
        ledger, found = QuotaLedger(clock=lambda: 0.0), []
        caches[cached] = cache = VerdictCache(512) if cached else None
        for uid in range(8):
            review = admission_review(template, uid=f"u-{uid}")
            answer = admit(orjson.dumps(review), cluster=cluster, profiles=profiles, engine=default_engine(),
                           cache=cache, ledger=ledger)
            found.append(orjson.loads(answer.body)["response"])
        answers[cached] = found
    cache = caches[True]
    assert cache is not None
    assert cache.decided_again >= 1
    assert answers[True] == answers[False]
    assert len({orjson.dumps({k: v for k, v in a.items() if k != "uid"}) for a in answers[False]}) >= 2
