"""The cluster refresher against a fake API server speaking the real wire format (tests/kubefake.py)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

import pytest
from kubefake import FakeKube
from prometheus_client import REGISTRY

from tests.fit.kit import daemonset, node
from webhook.cluster.resources import watch_specs
from webhook.config.settings import Settings
from webhook.core.fit.daemonsets import members
from webhook.core.fit.placement import NodeIndex
from webhook.core.model.namespace import Mode
from webhook.refreshers.cluster import ClusterRefresher
from webhook.refreshers.state import State

from .helpers import wait_until

GOOD_POLICY = "policies:\n  batch:\n    features: {probes: false}\n"
BAD_POLICY = "policies:\n  batch:\n    resources: {cpu: {request: lots}}\n"


def namespace(name: str, **labels: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def limit_range(ns: str, name: str, cpu_max: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "limits": [{"type": "Container", "max": {"cpu": cpu_max}, "defaultRequest": {"cpu": "50m"}}]
        },
    }


def policy_configmap(text: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pod-tailor-policy", "namespace": "pod-tailor"},
        "data": {"policy.yaml": text},
    }


def query(path: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(path).query).items()}


def lists(kube: FakeKube, fragment: str) -> list[str]:
    return [p for p in kube.requests_to(fragment) if "watch=" not in p]


def watches(kube: FakeKube, fragment: str) -> list[str]:
    return [p for p in kube.requests_to(fragment) if "watch=true" in p]


class Start(Protocol):
    """The `start` fixture: starts a refresher on the fixture's state; `overrides` are Settings fields."""

    def __call__(self, **overrides: object) -> ClusterRefresher: ...


@pytest.fixture
def state() -> State:
    return State()


@pytest.fixture
def start(kubeconfig: Path, state: State) -> Iterator[Start]:
    refreshers: list[ClusterRefresher] = []

    def _start(**overrides: object) -> ClusterRefresher:
        settings = Settings(kubeconfig=str(kubeconfig), **overrides)  # type: ignore[arg-type]
        refresher = ClusterRefresher(settings, env={})
        refresher.start(state)
        refreshers.append(refresher)
        return refresher

    yield _start
    for refresher in refreshers:
        refresher.stop()


def every_watch_open(kube: FakeKube) -> None:
    """Wait for the watch of every collection the refresher lists (one without its CRD has none)."""
    for spec in watch_specs(Settings()):
        if not spec.optional:
            kube.wait_for_watches(1, plural=spec.resource)


def synced(state: State) -> bool:
    return not state.pending and state.cluster.namespaces is not None


class TestFirstSync:
    def test_the_first_full_sync_fills_the_snapshot_with_labels_limit_ranges_and_version(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        kube.put(namespace("shop", **{"pod-tailor.io/mode": "dry-run", "pod-tailor.io/policy": "batch"}))
        kube.put(namespace("plain"))
        kube.put(limit_range("shop", "a", "2"))
        kube.put(limit_range("shop", "b", "500m"))
        kube.put(policy_configmap(GOOD_POLICY))
        start()
        wait_until(lambda: synced(state), what="first sync")
        snapshot = state.cluster
        assert snapshot.settings_for("shop").mode is Mode.DRY_RUN
        assert snapshot.settings_for("shop").policy == "batch"
        assert snapshot.settings_for("plain").mode is Mode.OFF  # known namespace without the label: opt-in
        assert [item.max["cpu"] for item in snapshot.facts_for("shop").limit_ranges] == [
            Decimal("2"),
            Decimal("0.5"),
        ]
        assert snapshot.server_version == (1, 30)
        assert snapshot.policies.get("batch") is not None
        assert kube.url in snapshot.source
        assert "watching kubeconfig" in state.notes["cluster"]

    def test_readiness_stays_pending_until_every_resource_has_listed_once(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        kube.fail_next("/api/v1/limitranges", 503, times=2)
        start()
        assert "cluster" in state.pending  # the failed list backs off for at least a quarter second
        wait_until(lambda: synced(state), what="sync after the failed lists")
        assert len(lists(kube, "/api/v1/limitranges")) == 3

    def test_the_policy_configmap_is_listed_by_name_in_pod_tailors_namespace(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        start(namespace="tailor-system", policy_configmap="my-policy")
        wait_until(lambda: synced(state), what="first sync")
        (path,) = lists(kube, "/configmaps")
        assert urlsplit(path).path == "/api/v1/namespaces/tailor-system/configmaps"
        assert query(path)["fieldSelector"] == "metadata.name=my-policy"

    def test_lists_are_paged(self, kube: FakeKube, start: Start, state: State) -> None:
        for index in range(1203):
            kube.put(namespace(f"ns-{index}"))
        start()
        wait_until(lambda: synced(state), what="first sync")
        assert len(state.cluster.namespaces or {}) == 1203
        assert len(lists(kube, "/api/v1/namespaces?")) == 3


class TestWatchEvents:
    @pytest.fixture(autouse=True)
    def _running(self, kube: FakeKube, start: Start, state: State) -> None:
        kube.put(namespace("shop"))
        kube.put(limit_range("shop", "a", "2"))
        start()
        wait_until(lambda: synced(state), what="first sync")
        every_watch_open(kube)

    def test_a_label_change_reaches_the_snapshot(self, kube: FakeKube, state: State) -> None:
        kube.put(namespace("shop", **{"pod-tailor.io/mode": "enforce"}))
        wait_until(lambda: state.cluster.settings_for("shop").mode is Mode.ENFORCE, what="label change")

    def test_a_deleted_namespace_disappears(self, kube: FakeKube, state: State) -> None:
        kube.delete("namespaces", "shop")
        wait_until(lambda: "shop" not in (state.cluster.namespaces or {}), what="deletion")

    def test_a_changed_limit_range_replaces_the_old_items(self, kube: FakeKube, state: State) -> None:
        kube.put(limit_range("shop", "a", "3"))
        wait_until(
            lambda: [i.max["cpu"] for i in state.cluster.facts_for("shop").limit_ranges] == [Decimal(3)],
            what="limit range update",
        )

    def test_every_change_swaps_a_new_snapshot_object(self, kube: FakeKube, state: State) -> None:
        before = state.cluster
        kube.put(namespace("other"))
        wait_until(lambda: state.cluster is not before, what="swap")
        assert "other" not in (before.namespaces or {})  # the old snapshot was never mutated


class TestResuming:
    @pytest.fixture(autouse=True)
    def _running(self, kube: FakeKube, start: Start, state: State) -> None:
        kube.put(namespace("shop"))
        start()
        wait_until(lambda: synced(state), what="first sync")
        every_watch_open(kube)

    def test_a_dropped_connection_resumes_from_the_last_resource_version_without_a_list(
        self, kube: FakeKube, state: State
    ) -> None:
        kube.put(namespace("seen-before-the-drop"))
        wait_until(lambda: "seen-before-the-drop" in (state.cluster.namespaces or {}), what="event")
        last = kube.resource_version
        kube.drop_watches()
        kube.put(namespace("made-during-the-outage"))
        wait_until(lambda: "made-during-the-outage" in (state.cluster.namespaces or {}), what="resume")
        resumed = watches(kube, "/api/v1/namespaces?")[-1]
        assert query(resumed)["resourceVersion"] == str(last)
        assert len(lists(kube, "/api/v1/namespaces?")) == 1

    def test_a_bookmark_moves_the_resume_point_forward(self, kube: FakeKube, state: State) -> None:
        kube.put(limit_range("elsewhere", "x", "1"))  # moves the global resourceVersion past the namespaces'
        wait_until(lambda: state.cluster.facts_for("elsewhere").limit_ranges, what="limit range")
        kube.bookmark()
        bookmarked = kube.resource_version
        wait_until(lambda: True)
        before = state.cluster.namespaces
        kube.drop_watches()
        every_watch_open(kube)
        resumed = watches(kube, "/api/v1/namespaces?")[-1]
        assert query(resumed)["resourceVersion"] == str(bookmarked)
        assert query(resumed)["allowWatchBookmarks"] == "true"
        assert state.cluster.namespaces == before

    def test_410_gone_after_compaction_relists_and_catches_up_on_missed_deletions(
        self, kube: FakeKube, state: State
    ) -> None:
        kube.drop_watches()
        kube.delete("namespaces", "shop")  # the DELETED event is compacted away below
        kube.put(namespace("new"))
        kube.compact()
        wait_until(lambda: "shop" not in (state.cluster.namespaces or {}), what="re-list")
        assert set(state.cluster.namespaces or {}) == {"new"}
        assert len(lists(kube, "/api/v1/namespaces?")) == 2
        assert metric_value("pod_tailor_watch_lists_total", resource="namespaces", reason="gone") >= 1

    def test_another_error_inside_a_watch_relists_after_a_backoff(self, kube: FakeKube, state: State) -> None:
        kube.error_watches(500)
        wait_until(lambda: len(lists(kube, "/api/v1/namespaces?")) == 2, what="re-list")
        kube.put(namespace("after-error"))
        wait_until(lambda: "after-error" in (state.cluster.namespaces or {}), what="watch after re-list")
        assert metric_value("pod_tailor_watch_lists_total", resource="namespaces", reason="error") >= 1

    def test_an_error_410_inside_an_open_watch_relists(self, kube: FakeKube, state: State) -> None:
        kube.expire_watches()
        wait_until(lambda: len(lists(kube, "/api/v1/namespaces?")) == 2, what="re-list")
        kube.put(namespace("after"))
        wait_until(lambda: "after" in (state.cluster.namespaces or {}), what="watch after re-list")


def test_a_watch_ended_by_the_servers_timeout_resumes_without_listing(
    kube: FakeKube, start: Start, state: State
) -> None:
    start(resync_seconds=1)
    wait_until(lambda: synced(state), what="first sync")
    wait_until(lambda: len(watches(kube, "/api/v1/namespaces?")) >= 3, what="two timeouts")
    assert len(lists(kube, "/api/v1/namespaces?")) == 1
    assert all(query(path)["timeoutSeconds"] == "1" for path in watches(kube, "/api/v1/namespaces?"))


class TestServerVersion:
    @pytest.mark.parametrize(("minor", "expected"), [("30", (1, 30)), ("29+", (1, 29)), ("34", (1, 34))])
    def test_the_version_is_read_at_start(
        self, kube: FakeKube, start: Start, state: State, minor: str, expected: tuple[int, int]
    ) -> None:
        kube.version["minor"] = minor
        start()
        wait_until(lambda: synced(state), what="first sync")
        assert state.cluster.server_version == expected
        assert state.cluster.facts_for("x").server_version == expected

    def test_the_version_is_refreshed_periodically(self, kube: FakeKube, start: Start, state: State) -> None:
        kube.version["minor"] = "29"
        start(resync_seconds=1)
        wait_until(lambda: synced(state), what="first sync")
        kube.version["minor"] = "31"
        wait_until(lambda: state.cluster.server_version == (1, 31), what="version refresh")

    def test_an_unreadable_version_leaves_it_unknown_but_the_watches_run(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        kube.fail_next("/version", 500)
        start()
        wait_until(lambda: synced(state), what="first sync")
        assert state.cluster.server_version is None


def metric(name: str) -> float | None:
    return REGISTRY.get_sample_value(name)


def metric_value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class TestPolicyConfigMap:
    def test_a_valid_configmap_replaces_the_base_policy(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        start()
        wait_until(lambda: synced(state), what="first sync")
        assert state.cluster.policies.get("batch") is None
        kube.put(policy_configmap(GOOD_POLICY))
        wait_until(lambda: state.cluster.policies.get("batch") is not None, what="policy")
        assert "pod-tailor/pod-tailor-policy" in state.cluster.source

    def test_an_invalid_edit_keeps_the_last_valid_policy_and_says_so(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        kube.put(policy_configmap(GOOD_POLICY))
        start()
        wait_until(lambda: synced(state) and state.cluster.policies.get("batch"), what="first sync")
        errors_before = metric("pod_tailor_policy_configmap_errors_total") or 0.0
        kube.put(policy_configmap(BAD_POLICY))
        wait_until(lambda: "policy" in state.notes, what="invalid policy note")
        assert "policies.batch.resources.cpu.request" in state.notes["policy"]
        assert state.cluster.policies.get("batch") is not None
        assert "probes" not in state.cluster.policies.policies["batch"].features  # still the old one
        assert not state.pending  # readiness stays true: the old policy still serves
        assert metric("pod_tailor_policy_configmap_valid") == 0
        assert metric("pod_tailor_policy_configmap_errors_total") == errors_before + 1
        kube.put(policy_configmap("policies:\n  batch:\n    features: {preStop: false}\n"))
        wait_until(lambda: "policy" not in state.notes, what="recovery")
        assert "preStop" not in state.cluster.policies.policies["batch"].features
        assert metric("pod_tailor_policy_configmap_valid") == 1

    def test_an_invalid_configmap_at_start_falls_back_to_the_base_policy(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        kube.put(policy_configmap(BAD_POLICY))
        start()
        wait_until(lambda: synced(state), what="first sync")
        assert set(state.cluster.policies.policies) == {"default"}
        assert "still using base policy" in state.notes["policy"]

    def test_deleting_the_configmap_returns_to_the_base_policy(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        kube.put(policy_configmap(GOOD_POLICY))
        start()
        wait_until(lambda: synced(state) and state.cluster.policies.get("batch"), what="first sync")
        kube.delete("configmaps", "pod-tailor-policy", namespace="pod-tailor")
        wait_until(lambda: state.cluster.policies.get("batch") is None, what="base policy")


def test_the_refresher_runs_as_an_asyncio_task_and_stops_when_cancelled(
    kube: FakeKube, kubeconfig: Path
) -> None:
    state = State()
    refresher = ClusterRefresher(Settings(kubeconfig=str(kubeconfig)), env={})

    async def scenario() -> None:
        task = asyncio.create_task(refresher.run(state))
        while state.pending or state.cluster.namespaces is None:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    # A guard against a hang, not a timing: run alone, the first sync pays the kubernetes client's lazy
    # import of CoreV1Api (300 pydantic models), 12-16 s with both cores oversubscribed eightfold.
    asyncio.run(asyncio.wait_for(scenario(), 90))
    wait_until(lambda: kube.open_watches() == 0, what="watches closed")
    assert not [t for t in threading.enumerate() if t.name.startswith("watch-") and t.is_alive()]


class TestSnapshotAge:
    def test_the_snapshot_is_confirmed_fresh_while_the_watches_are_connected(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        start(resync_seconds=1)
        wait_until(lambda: synced(state), what="first sync")
        first = state.cluster.taken_at
        wait_until(lambda: state.cluster.taken_at > first, what="heartbeat", timeout=15)
        assert state.ages()["cluster"] < 2

    def test_the_snapshot_ages_while_the_api_server_is_unreachable(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        start(resync_seconds=1)
        wait_until(lambda: synced(state), what="first sync")
        kube.fail_next("/api/v1", 503, times=1000)
        kube.drop_watches()
        taken = state.cluster.taken_at
        wait_until(lambda: state.ages()["cluster"] > 2.5, what="age growing", timeout=6)
        assert state.cluster.taken_at == taken
        assert not state.pending  # the last snapshot keeps serving


class TestDaemonSetsNotReadable:
    def test_daemonsets_that_may_not_be_listed_leave_nodes_whole_say_so_and_count_once_granted(
        self, kube: FakeKube, start: Start, state: State
    ) -> None:
        kube.put(namespace("shop"))
        kube.put(node("small-1", cpu="1930m"))
        kube.put(daemonset("agent", cpu="400m"))
        kube.forbid("daemonsets")
        start(resync_seconds=1)
        wait_until(lambda: synced(state) and "daemonsets" in state.notes, what="first sync, forbidden")
        assert state.notes["daemonsets"] == (
            "daemonsets may not be listed (403): node fit counts whole nodes, DaemonSets not subtracted"
        )
        assert REGISTRY.get_sample_value("pod_tailor_cluster_facts_known", {"resource": "daemonsets"}) == 0
        nodes = state.cluster.nodes
        assert nodes is not None
        assert nodes.daemonsets is None
        assert [(m.name, m.cpu) for m in members(nodes)] == [("small-1", Decimal("1.93"))]
        kube.forbid("daemonsets", allowed=True)  # a ClusterRole granting it, applied later
        wait_until(lambda: "daemonsets" not in state.notes, what="DaemonSets listed once granted")
        wait_until(lambda: [m.cpu for m in members(state.cluster.nodes or NodeIndex())] == [Decimal("1.53")],
                   what="the DaemonSet subtracted")  # fmt: skip
        assert REGISTRY.get_sample_value("pod_tailor_cluster_facts_known", {"resource": "daemonsets"}) == 1


def room(state: State) -> list[tuple[str, Decimal]]:
    """Each node's cpu room after the DaemonSets subtracted, by name."""
    return sorted((m.name, m.cpu) for m in members(state.cluster.nodes or NodeIndex()))


class TestTheDaemonSetWatch:
    """Its own resume, BOOKMARK and 410 Gone paths (the generic loop is tested on namespaces above)."""

    @pytest.fixture(autouse=True)
    def _running(self, kube: FakeKube, start: Start, state: State) -> None:
        kube.put(namespace("shop"))
        kube.put(node("small-1", cpu="1930m"))
        kube.put(daemonset("agent", cpu="400m"))
        start()
        wait_until(lambda: synced(state) and room(state) == [("small-1", Decimal("1.53"))], what="first sync")
        every_watch_open(kube)

    def test_a_bookmark_moves_the_daemonset_watch_resume_point_forward(
        self, kube: FakeKube, state: State
    ) -> None:
        kube.put(limit_range("elsewhere", "x", "1"))  # moves the global resourceVersion past the DaemonSets'
        wait_until(lambda: state.cluster.facts_for("elsewhere").limit_ranges, what="limit range")
        kube.bookmark()
        bookmarked = kube.resource_version
        wait_until(lambda: True)
        before = state.cluster.nodes
        kube.drop_watches()
        every_watch_open(kube)
        resumed = watches(kube, "/apis/apps/v1/daemonsets?")[-1]
        assert query(resumed)["resourceVersion"] == str(bookmarked)
        assert query(resumed)["allowWatchBookmarks"] == "true"
        assert len(lists(kube, "/apis/apps/v1/daemonsets?")) == 1
        assert state.cluster.nodes is before  # a bookmark changes no DaemonSet: the index is not rebuilt

    def test_410_gone_after_compaction_relists_and_catches_up_on_a_missed_deletion(
        self, kube: FakeKube, state: State
    ) -> None:
        kube.drop_watches()
        kube.delete("daemonsets", "agent", namespace="kube-system")  # the DELETED event is compacted away
        kube.put(daemonset("log-shipper", cpu="100m"))
        kube.compact()
        wait_until(lambda: room(state) == [("small-1", Decimal("1.83"))], what="the re-list after 410")
        assert sorted((state.cluster.nodes or NodeIndex()).daemonsets or {}) == ["kube-system/log-shipper"]
        assert len(lists(kube, "/apis/apps/v1/daemonsets?")) == 2
        assert metric_value("pod_tailor_watch_lists_total", resource="daemonsets", reason="gone") >= 1

    def test_an_error_410_inside_the_open_daemonset_watch_relists_and_watches_on(
        self, kube: FakeKube, state: State
    ) -> None:
        kube.expire_watches()
        wait_until(lambda: len(lists(kube, "/apis/apps/v1/daemonsets?")) == 2, what="re-list")
        kube.put(daemonset("agent", cpu="600m"))  # a new version of the DaemonSet, after the re-list
        wait_until(lambda: room(state) == [("small-1", Decimal("1.33"))], what="the watch after the re-list")
