"""Leader election against the fake API server: one leader at a time, renewal, take-over, release."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubefake import FakeKube
from kubernetes import client, config

from webhook.controllers.leader import LeaderElector, LeaseConfig

NAMESPACE, NAME = "pod-tailor", "pod-tailor-test"
FAST = {"lease_seconds": 2.0, "renew_deadline": 1.0, "retry_period": 0.1}  # LeaseConfig below


def wait_until(condition: Callable[[], object], *, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Candidates:
    """Electors for one Lease, each with its own API client, stopped at the end of the test."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.started: list[LeaderElector] = []
        self.events: list[tuple[str, str]] = []  # (identity, "started" | "stopped")
        self.lock = threading.Lock()

    def start(self, identity: str) -> LeaderElector:
        configuration = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(self.kubeconfig), client_configuration=configuration
        )
        lease = LeaseConfig(NAMESPACE, NAME, identity, lease_seconds=2, renew_deadline=1.0, retry_period=0.1)
        elector = LeaderElector(
            client.ApiClient(configuration), lease,
            on_started=lambda: self._event(identity, "started"),
            on_stopped=lambda: self._event(identity, "stopped"),
        )
        elector.start()
        self.started.append(elector)
        return elector

    def _event(self, identity: str, what: str) -> None:
        with self.lock:
            self.events.append((identity, what))

    def leaders(self) -> list[str]:
        return [e.config.identity for e in self.started if e.is_leader]

    def close(self) -> None:
        for elector in self.started:
            elector.stop(release=False, timeout=5)


@pytest.fixture
def candidates(kubeconfig: Path) -> Iterator[Candidates]:
    found = Candidates(kubeconfig)
    yield found
    found.close()


def spec(kube: FakeKube) -> dict[str, Any]:
    lease = kube.get("leases", NAME, namespace=NAMESPACE)
    assert lease is not None
    found: dict[str, Any] = lease["spec"]
    return found


class TestOneLeader:
    def test_a_lone_candidate_creates_the_lease_and_leads(
        self, kube: FakeKube, candidates: Candidates
    ) -> None:
        elector = candidates.start("a")
        wait_until(lambda: elector.is_leader, what="leadership")
        assert spec(kube)["holderIdentity"] == "a"
        assert spec(kube)["leaseDurationSeconds"] == 2
        assert candidates.events == [("a", "started")]

    def test_the_leader_renews_without_a_new_acquire_time(
        self, kube: FakeKube, candidates: Candidates
    ) -> None:
        elector = candidates.start("a")
        wait_until(lambda: elector.is_leader, what="leadership")
        first = spec(kube)
        wait_until(lambda: spec(kube)["renewTime"] != first["renewTime"], what="a renewal")
        assert spec(kube)["acquireTime"] == first["acquireTime"]
        assert spec(kube)["leaseTransitions"] == 0

    def test_of_two_candidates_only_one_leads(self, kube: FakeKube, candidates: Candidates) -> None:
        candidates.start("a")
        candidates.start("b")
        wait_until(lambda: len(candidates.leaders()) == 1, what="a leader")
        for _ in range(30):  # over several renewals
            assert len(candidates.leaders()) <= 1
            time.sleep(0.05)
        assert candidates.leaders() == [spec(kube)["holderIdentity"]]


class TestTakingOver:
    def test_a_released_lease_is_taken_at_once(self, kube: FakeKube, candidates: Candidates) -> None:
        first = candidates.start("a")
        wait_until(lambda: first.is_leader, what="a to lead")
        second = candidates.start("b")
        time.sleep(0.3)
        assert not second.is_leader
        first.stop(release=True)
        started = time.monotonic()
        wait_until(lambda: second.is_leader, what="b to take over")
        assert time.monotonic() - started < FAST["lease_seconds"]  # did not wait for the lease to expire
        assert spec(kube)["holderIdentity"] == "b"
        assert spec(kube)["leaseTransitions"] == 1  # created held by a (0); the release keeps the count

    def test_a_holder_that_stops_renewing_is_replaced_after_the_lease_duration(
        self, kube: FakeKube, candidates: Candidates
    ) -> None:
        first = candidates.start("a")
        wait_until(lambda: first.is_leader, what="a to lead")
        second = candidates.start("b")
        first.stop(release=False)  # a crash: the record stays "a" until it expires
        stopped = time.monotonic()
        wait_until(lambda: second.is_leader, what="b to take over")
        assert time.monotonic() - stopped >= FAST["lease_seconds"] - FAST["retry_period"]
        assert spec(kube)["holderIdentity"] == "b"
        assert spec(kube)["leaseTransitions"] == 1

    def test_a_leader_that_sees_another_holder_stops_leading_at_once(
        self, kube: FakeKube, candidates: Candidates
    ) -> None:
        elector = candidates.start("a")
        wait_until(lambda: elector.is_leader, what="a to lead")
        lease = kube.get("leases", NAME, namespace=NAMESPACE)
        assert lease is not None
        lease["spec"]["holderIdentity"] = "intruder"  # e.g. a replica that judged the Lease expired
        kube.put(lease)
        wait_until(lambda: not elector.is_leader, timeout=3, what="a to step down")
        assert candidates.events == [("a", "started"), ("a", "stopped")]

    def test_a_leader_that_cannot_renew_steps_down_after_the_renew_deadline(
        self, kube: FakeKube, candidates: Candidates
    ) -> None:
        elector = candidates.start("a")
        wait_until(lambda: elector.is_leader, what="a to lead")
        kube.fail_next(f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases", 503, times=1000)
        failing = time.monotonic()
        wait_until(lambda: not elector.is_leader, timeout=5, what="a to step down")
        assert time.monotonic() - failing >= FAST["renew_deadline"] - FAST["retry_period"]


class TestNeverTwoLeaders:
    def test_crashes_and_restarts_never_leave_two_replicas_leading(
        self, kube: FakeKube, candidates: Candidates
    ) -> None:
        """Three replicas; the leader repeatedly crashes (no release) and a new replica starts."""
        for name in ("a", "b", "c"):
            candidates.start(name)
        seen_two = threading.Event()
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                if len(candidates.leaders()) > 1:
                    seen_two.set()
                time.sleep(0.005)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        for round_ in range(3):
            wait_until(lambda: len(candidates.leaders()) == 1, what=f"a leader in round {round_}")
            (leader,) = [e for e in candidates.started if e.is_leader]
            leader.stop(release=False)
            candidates.start(f"new-{round_}")
        wait_until(lambda: len(candidates.leaders()) == 1, what="a last leader")
        done.set()
        watcher.join(2)
        assert not seen_two.is_set()
