"""The Lease rules (pure): who may write, what is written, and when a holder's claim runs out."""

from __future__ import annotations

import re
from typing import Any

import pytest

from webhook.controllers.lease import Observed, micro_time, plan, released

NOW = 1_800_000_000.0


def lease(holder: str, *, transitions: int = 3, duration: int = 15, version: str = "7") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lock", "namespace": "pod-tailor", "resourceVersion": version},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                 "acquireTime": "2026-11-24T00:00:00.000000Z", "renewTime": "2026-11-24T00:00:10.000000Z",
                 "leaseTransitions": transitions},
    }  # fmt: skip


def step(current: dict[str, Any] | None, *, me: str = "b", seen: float = 100.0, now: float = 100.0) -> Any:
    observed = Observed.of(current, now=seen, before=None)
    return plan(current, namespace="pod-tailor", name="lock", identity=me, lease_seconds=15,
                observed=observed, now=now, wall=NOW)  # fmt: skip


class TestWhoMayWrite:
    def test_a_missing_lease_is_created_held_by_the_candidate(self) -> None:
        found = step(None)
        assert found.action == "create"
        assert found.body["spec"]["holderIdentity"] == "b"
        assert found.body["spec"]["leaseTransitions"] == 0
        assert found.body["spec"]["acquireTime"] == found.body["spec"]["renewTime"] == micro_time(NOW)

    @pytest.mark.parametrize(
        ("seen", "now", "action"),
        [(100.0, 100.0, "wait"), (100.0, 114.9, "wait"), (100.0, 115.1, "replace")],
        ids=["just-seen", "within-the-duration", "expired"],
    )
    def test_another_holders_lease_is_theirs_for_its_duration_on_our_own_clock(
        self, seen: float, now: float, action: str
    ) -> None:
        found = step(lease("a"), seen=seen, now=now)
        assert found.action == action
        if action == "wait":
            assert found.holder == "a"

    def test_an_empty_holder_is_taken_at_once(self) -> None:
        assert step(lease(""), seen=100.0, now=100.0).action == "replace"


class TestWhatIsWritten:
    def test_taking_over_moves_the_acquire_time_and_counts_a_transition(self) -> None:
        found = step(lease("a", transitions=3), seen=0.0, now=100.0)
        assert found.body["spec"]["holderIdentity"] == "b"
        assert found.body["spec"]["leaseTransitions"] == 4
        assert found.body["spec"]["acquireTime"] == micro_time(NOW)

    def test_renewing_keeps_the_acquire_time_and_the_transitions(self) -> None:
        found = step(lease("b", transitions=3))
        assert found.action == "replace"
        assert found.body["spec"]["leaseTransitions"] == 3
        assert found.body["spec"]["acquireTime"] == "2026-11-24T00:00:00.000000Z"
        assert found.body["spec"]["renewTime"] == micro_time(NOW)

    def test_every_write_is_conditional_on_the_version_it_read(self) -> None:
        assert step(lease("b", version="42")).body["metadata"]["resourceVersion"] == "42"

    def test_a_release_clears_the_holder_and_keeps_the_count(self) -> None:
        given_up = released(lease("b", transitions=5), wall=NOW)
        assert given_up["spec"]["holderIdentity"] == ""
        assert given_up["spec"]["leaseTransitions"] == 5
        assert given_up["metadata"]["resourceVersion"] == "7"


class TestWhenAClaimRunsOut:
    def test_an_unchanged_record_keeps_the_time_it_was_first_seen(self) -> None:
        first = Observed.of(lease("a"), now=1.0, before=None)
        assert Observed.of(lease("a", version="8"), now=9.0, before=first) is first  # only the version moved

    def test_a_renewal_restarts_the_holders_duration(self) -> None:
        first = Observed.of(lease("a"), now=1.0, before=None)
        renewed = lease("a")
        renewed["spec"]["renewTime"] = "2026-11-24T00:00:12.000000Z"
        assert Observed.of(renewed, now=9.0, before=first).at == 9.0


def test_micro_time_is_rfc3339_with_microseconds_in_utc() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", micro_time(NOW))
    assert micro_time(0.5) == "1970-01-01T00:00:00.500000Z"
