"""Services, Ingresses and Gateway routes reach the snapshot by list+watch from the fake 1.33 API server.

A Service created, changed or deleted while serving changes the next decision; a load balancer's status
update does not rebuild the snapshot; HTTPRoutes are picked up once their CRD is installed.
"""

from __future__ import annotations

from pathlib import Path

from kubefake import FakeKube

from tests.engine.podkit import pod
from tests.traffic.kit import GATEWAY_PREFIX, ingress, ingress_class, route, service
from webhook.core.engine import decide
from webhook.core.snapshot import EMPTY_PROFILES
from webhook.refreshers.state import State

from .helpers import namespace, refreshing, wait_until

WEB = {"app": "web", "pod-template-hash": "7d4b9c8f6d"}
DELAY_30 = "deregistration_delay.timeout_seconds=30"


def pause(state: State) -> str:
    """How the next web Pod in namespace shop gets its preStop pause, as the annotation says."""
    _, decision = decide(pod(labels=WEB), namespace="shop", cluster=state.cluster, profiles=EMPTY_PROFILES)
    (found,) = [i for i in decision.injections if i.field == "preStop"]
    return found.describe()


def test_a_service_added_changed_and_removed_while_serving_changes_the_next_decision(
    kube: FakeKube, kubeconfig: Path
) -> None:
    state = State()
    kube.put(namespace("shop", mode="enforce"))
    with refreshing(kubeconfig, state):
        kube.wait_for_watches(1, plural="services")
        assert "no Service selects the Pod yet" in pause(state)
        kube.put(service())
        wait_until(lambda: "behind Service web type ClusterIP" in pause(state), what="the added Service")
        assert state.cluster.label_keys_read("shop") >= {"app"}
        kube.put(service(kind="LoadBalancer"))
        wait_until(lambda: "preStop=sleep 20s" in pause(state), what="the Service turned LoadBalancer")
        kube.put(ingress_class("alb", "ingress.k8s.aws/alb"))
        kube.put(
            ingress(
                class_name="alb",
                annotations={"alb.ingress.kubernetes.io/target-group-attributes": DELAY_30},
            )
        )
        wait_until(lambda: "preStop=sleep 35s" in pause(state), what="the ALB Ingress")
        kube.delete("ingresses", "web", namespace="shop")
        kube.delete("services", "web", namespace="shop")
        wait_until(lambda: "no Service selects the Pod yet" in pause(state), what="the removed Service")


def test_a_load_balancers_status_does_not_rebuild_the_snapshot(kube: FakeKube, kubeconfig: Path) -> None:
    state = State()
    kube.put(namespace("shop", mode="enforce"))
    stored = kube.put(service(kind="LoadBalancer"))
    with refreshing(kubeconfig, state) as refresher:
        kube.wait_for_watches(1, plural="services")
        before = state.cluster
        moved = service(kind="LoadBalancer")
        moved["status"]["loadBalancer"]["ingress"] = [{"hostname": "elsewhere.elb.amazonaws.com"}]
        stored = kube.put(moved)
        watched = refresher._watched["services"]
        wait_until(lambda: watched.resource_version == stored["metadata"]["resourceVersion"], what="event")
        assert state.cluster is before


def test_http_routes_are_read_once_their_crd_is_installed(kube: FakeKube, kubeconfig: Path) -> None:
    state = State()
    kube.put(namespace("shop", mode="enforce"))
    kube.put(service())
    with refreshing(kubeconfig, state, resync=1) as refresher:
        assert not refresher._watched["httproutes"].served
        assert "Route" not in pause(state)
        kube.register(GATEWAY_PREFIX, "httproutes", "HTTPRoute")
        kube.put(route())
        wait_until(
            lambda: "HTTPRoute web, class gateway public; ingress 15s" in pause(state), what="the route"
        )
