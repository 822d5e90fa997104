"""HPAs and VPAs reach the snapshot through the cluster refresher, from a fake API server speaking 1.33 JSON.

Covers the list, watch events while serving (added, changed, removed), the HPA status the controller
writes every 15 s (stored, but no rebuild), BOOKMARK, 410 Gone, and a VPA CRD installed while running.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubefake import FakeKube

from tests.autoscalers.kit import VPA_PREFIX, as_listed, hpa, utilization, vpa
from tests.engine.podkit import container, pod
from webhook.cluster.snapshot import ParseCache, build_snapshot
from webhook.config.policies import bundled_policies
from webhook.config.settings import Settings
from webhook.core.engine import decide
from webhook.core.model.autoscalers import Autoscalers
from webhook.core.snapshot import EMPTY_PROFILES
from webhook.refreshers.cluster import ClusterRefresher
from webhook.refreshers.state import State

from .helpers import namespace, refreshing, wait_until

WEB = ("Deployment", "web")


def around(state: State, target: tuple[str, str] = WEB) -> Autoscalers:
    return state.cluster.facts_for("shop").autoscalers.get(target, Autoscalers())


def injected_cpu(state: State) -> str:
    """The cpu request a web Pod in namespace shop gets from the current snapshot."""
    _, decision = decide(pod(container()), namespace="shop", cluster=state.cluster, profiles=EMPTY_PROFILES)
    (found,) = [i for i in decision.injections if i.field == "requests.cpu"]
    return found.source


@pytest.fixture
def state() -> State:
    return State()


@pytest.fixture
def serving(kube: FakeKube, kubeconfig: Path, state: State) -> Iterator[ClusterRefresher]:
    kube.put(namespace("shop", mode="enforce"))
    with refreshing(kubeconfig, state) as refresher:
        yield refresher


class TestHorizontalPodAutoscalers:
    def test_hpas_listed_at_start_are_in_the_snapshot(
        self, kube: FakeKube, kubeconfig: Path, state: State
    ) -> None:
        kube.put(hpa(metrics=[utilization("cpu", 70)]))
        kube.put(hpa("api", target=("apps/v1", "Deployment", "api"), namespace="other"))
        with refreshing(kubeconfig, state):
            (found,) = around(state).hpas
            assert (found.name, found.min_replicas, found.max_replicas) == ("web", 2, 10)
            assert state.cluster.facts_for("other").autoscalers[("Deployment", "api")].hpas

    def test_an_hpa_added_while_serving_holds_the_request_and_removing_it_releases_it(
        self, kube: FakeKube, serving: ClusterRefresher, state: State
    ) -> None:
        kube.wait_for_watches(1, plural="horizontalpodautoscalers")
        assert "hpa" not in injected_cpu(state)
        kube.put(hpa())
        wait_until(lambda: around(state).hpas, what="the added HPA")
        assert "hpa web scales on cpu utilization 70 %" in injected_cpu(state)
        kube.put(hpa(metrics=[utilization("cpu", 55)]))
        wait_until(lambda: around(state).hpas[0].resources[0].utilization == 55, what="the changed target")
        kube.delete("horizontalpodautoscalers", "web", namespace="shop")
        wait_until(lambda: not around(state), what="the removed HPA")
        assert "hpa" not in injected_cpu(state)

    def test_the_status_written_every_15s_does_not_rebuild_the_snapshot(
        self, kube: FakeKube, serving: ClusterRefresher, state: State
    ) -> None:
        kube.put(hpa())
        wait_until(lambda: around(state).hpas, what="the HPA")
        kube.wait_for_watches(1, plural="horizontalpodautoscalers")
        before = state.cluster
        for replicas in (4, 5, 6):  # what the HPA controller writes: status only
            stored = kube.put(hpa(replicas=replicas))
        watched = serving._watched["horizontalpodautoscalers"]
        wait_until(lambda: watched.resource_version == stored["metadata"]["resourceVersion"], what="events")
        assert state.cluster is before

    def test_a_bookmark_and_a_410_gone_leave_the_snapshot_right(
        self, kube: FakeKube, serving: ClusterRefresher, state: State
    ) -> None:
        kube.put(hpa())
        wait_until(lambda: around(state).hpas, what="the HPA")
        kube.bookmark()
        kube.drop_watches()
        kube.delete("horizontalpodautoscalers", "web", namespace="shop")  # missed: compacted below
        kube.put(hpa("web-2", target=("apps/v1", "Deployment", "web")))
        kube.compact()
        wait_until(lambda: [h.name for h in around(state).hpas] == ["web-2"], what="the re-list after 410")

    def test_an_hpa_pod_tailor_cannot_read_is_left_out_with_a_debug_line(
        self, kube: FakeKube, serving: ClusterRefresher, state: State, caplog: pytest.LogCaptureFixture
    ) -> None:
        broken = hpa("broken")
        del broken["spec"]["scaleTargetRef"]["name"]
        caplog.set_level(logging.DEBUG, logger="webhook.cluster.snapshot")
        kube.put(broken)
        kube.put(hpa())
        wait_until(lambda: around(state).hpas, what="the good HPA")
        assert [h.name for h in around(state).hpas] == ["web"]
        assert "hpa broken: no scaleTargetRef kind and name; ignored" in caplog.text


class TestVerticalPodAutoscalers:
    def test_without_the_crd_the_snapshot_syncs_and_a_crd_installed_later_is_picked_up(
        self, kube: FakeKube, kubeconfig: Path, state: State
    ) -> None:
        kube.put(namespace("shop", mode="enforce"))
        with refreshing(kubeconfig, state, resync=1) as refresher:
            assert not refresher._watched["verticalpodautoscalers"].served
            kube.register(VPA_PREFIX, "verticalpodautoscalers", "VerticalPodAutoscaler")
            kube.put(vpa(mode="Initial"))
            wait_until(lambda: around(state).vpas, what="the VPA after its CRD was installed")
            assert around(state).vpas[0].mode == "Initial"
            _, decision = decide(
                pod(container()), namespace="shop", cluster=state.cluster, profiles=EMPTY_PROFILES
            )
        assert not [i for i in decision.injections if i.field.startswith(("requests.", "limits."))]
        assert "app: cpu, memory left to vpa web (Initial)" in [str(note) for note in decision.notes]

    def test_the_recommenders_status_updates_do_not_rebuild_but_a_mode_change_does(
        self, kube: FakeKube, kubeconfig: Path, state: State
    ) -> None:
        kube.register(VPA_PREFIX, "verticalpodautoscalers", "VerticalPodAutoscaler")
        kube.put(vpa())
        with refreshing(kubeconfig, state) as refresher:
            kube.wait_for_watches(1, plural="verticalpodautoscalers")
            before = state.cluster
            changed = vpa()
            changed["status"]["recommendation"]["containerRecommendations"][0]["target"]["cpu"] = "40m"
            stored = kube.put(changed)
            watched = refresher._watched["verticalpodautoscalers"]
            wait_until(
                lambda: watched.resource_version == stored["metadata"]["resourceVersion"], what="event"
            )
            assert state.cluster is before
            kube.put(vpa(mode="Off"))
            wait_until(lambda: around(state).vpas[0].mode == "Off", what="the mode change")


def test_the_parse_cache_keeps_autoscalers_by_resource_version() -> None:
    listed = [as_listed(hpa(), 10), as_listed(vpa(), 11)]
    cache = ParseCache()

    def build() -> Autoscalers:
        snapshot = build_snapshot(
            policies=bundled_policies(),
            settings=Settings(),
            taken_at=1.0,
            source="test",
            cache=cache,
            objects={"horizontalpodautoscalers": listed[:1], "verticalpodautoscalers": listed[1:]},
            server_version=(1, 33),
        )
        return snapshot.facts_for("shop").autoscalers[WEB]

    first, again = build(), build()
    assert first.hpas[0] is again.hpas[0]
    assert first.vpas[0] is again.vpas[0]
    assert len(cache) == 2
