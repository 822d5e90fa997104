"""The recommender's build loop: builds only while leading, when due; never writes after losing the Lease."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from webhook.controllers.recommender import BuildLoop, LeaderOnlyStore
from webhook.profiles.build import BuildResult
from webhook.profiles.store import ProfileDocument, StoreError

DOCUMENT = ProfileDocument({}, 1000.0, "test")


class MemoryStore:
    def __init__(self, built_at: float = 0.0) -> None:
        self.document = ProfileDocument({}, built_at, "test")
        self.writes = 0

    def read(self) -> ProfileDocument:
        return self.document

    def fingerprint(self) -> object:
        return self.writes

    def describe(self) -> str:
        return "memory"

    def write(self, document: ProfileDocument, *, scope: Any = None) -> None:
        self.document, self.writes = document, self.writes + 1


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def loop(*, store: MemoryStore, clock: Clock, leading: bool = True, fail: bool = False,
         max_builds: int = 1) -> tuple[BuildLoop, list[str]]:
    calls: list[str] = []
    is_leading = threading.Event()
    if leading:
        is_leading.set()

    def build() -> BuildResult:
        calls.append("build")
        if fail:
            raise StoreError("Prometheus is down")
        clock.now += 5
        return BuildResult(document=DOCUMENT, queries=1, seconds=5.0, warnings=(), series=0)

    found = BuildLoop(
        build, interval=3600, leading=is_leading, stop=threading.Event(),
        last_built=lambda: store.read().generated_at, on_success=lambda _r: calls.append("ok"),
        on_failure=lambda _s, exc: calls.append(f"failed: {exc}"), retry=300, max_builds=max_builds,
        clock=clock,
    )  # fmt: skip
    return found, calls


class TestWhenABuildIsDue:
    def test_an_empty_store_is_built_at_once(self) -> None:
        found, calls = loop(store=MemoryStore(built_at=0.0), clock=Clock(10_000.0))
        assert found.run() == 0
        assert calls == ["build", "ok"]

    @pytest.mark.parametrize(("age", "due"), [(100.0, False), (3599.0, False), (3601.0, True)])
    def test_a_new_leader_waits_an_interval_after_the_stores_own_build(self, age: float, due: bool) -> None:
        found, _ = loop(store=MemoryStore(built_at=10_000.0), clock=Clock(10_000.0 + age))
        assert (found._due() <= found.clock()) is due

    def test_a_failed_build_is_tried_again_after_the_retry_not_a_whole_interval(self) -> None:
        clock = Clock(10_000.0)
        found, calls = loop(store=MemoryStore(built_at=1.0), clock=clock, fail=True)
        found.run()
        assert calls == ["build", "failed: Prometheus is down"]
        assert found._due() == pytest.approx(clock.now + 300)

    def test_a_replica_that_does_not_lead_never_builds(self) -> None:
        found, calls = loop(store=MemoryStore(), clock=Clock(10_000.0), leading=False)
        thread = threading.Thread(target=found.run, daemon=True)
        thread.start()
        thread.join(1.5)
        found.stop.set()
        thread.join(2)
        assert calls == []


class TestWritesAfterTheLeaseIsLost:
    def test_a_replica_that_lost_the_lease_writes_nothing(self) -> None:
        store, leading = MemoryStore(), threading.Event()
        guarded = LeaderOnlyStore(store, leading)
        with pytest.raises(StoreError, match="no longer holds the Lease"):
            guarded.write(DOCUMENT)
        leading.set()
        guarded.write(DOCUMENT)
        assert store.writes == 1
