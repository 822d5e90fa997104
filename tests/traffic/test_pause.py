"""The preStop pause sized from the path a Pod's traffic takes, as the engine writes and explains it."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from tests.engine.podkit import DEFAULT, container, first, pod, policy, run
from tests.traffic.kit import facts, ingress, ingress_class, route, service
from webhook.core.facts import ClusterFacts
from webhook.core.policy.reader import PolicyError

WEB = {"app": "web", "pod-template-hash": "7d4b9c8f6d"}
ALB = {
    "alb.ingress.kubernetes.io/target-type": "ip",
    "alb.ingress.kubernetes.io/target-group-attributes": (
        "stickiness.enabled=false,deregistration_delay.timeout_seconds=20"
    ),
}
NLB_IP = {"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"}


def pre_stop(found: ClusterFacts, subject: dict[str, Any] | None = None) -> tuple[int, str, int]:
    """(seconds slept, the preStop explanation, the grace period) of the engine's answer."""
    decision, result = run(subject or pod(labels=WEB), facts=found)
    kubernetes_validate.validate(result, kubernetes_validate.latest_version(), strict=True)
    (injection,) = [i for i in decision.injections if i.field == "preStop"]
    return (
        first(result)["lifecycle"]["preStop"]["sleep"]["seconds"],
        injection.describe(),
        result["spec"]["terminationGracePeriodSeconds"],
    )


class TestThePauseFollowsTheFurthestHop:
    @pytest.mark.parametrize(
        ("objects", "seconds", "explained"),
        [
            ((service(),), 5, "behind Service web type ClusterIP; inCluster 5s"),
            ((service(headless=True),), 5, "behind Service web headless; inCluster 5s"),
            (
                (service(), ingress()),
                15,
                "behind Service web type ClusterIP + Ingress web, class nginx; ingress 15s",
            ),
            (
                (service(), ingress(), ingress_class("nginx", "k8s.io/ingress-nginx")),
                15,
                "Ingress web, class nginx; ingress 15s",
            ),
            ((service(), route()), 15, "HTTPRoute web, class gateway public; ingress 15s"),
            ((service(), route(kind="GRPCRoute")), 15, "GRPCRoute web"),
            ((service(kind="NodePort"),), 20, "Service web type NodePort; loadBalancer 20s"),
            (
                (service(kind="LoadBalancer", local=True),),
                20,
                "Service web type LoadBalancer, externalTrafficPolicy Local; loadBalancer 20s",
            ),
            ((service(annotations=NLB_IP),), 20, "Service web type ClusterIP (nlb ip); loadBalancer 20s"),
            ((service(annotations={"cloud.google.com/neg": '{"ingress": true}'}),), 20, "(neg)"),
            (
                (
                    service(),
                    ingress(class_name="alb", annotations=ALB),
                    ingress_class("alb", "ingress.k8s.aws/alb"),
                ),
                25,
                "Ingress web, class alb ip, deregistration 20s + 5s to reach the controller",
            ),
            (
                (service(), ingress(class_name=None, annotations={"kubernetes.io/ingress.class": "gce"})),
                20,
                "Ingress web, class gce; loadBalancer 20s",
            ),
            (
                (
                    service(),
                    ingress(class_name=None),
                    ingress_class("internal", "k8s.io/ingress-nginx", default=True),
                ),
                15,
                "Ingress web, class nginx",
            ),
        ],
        ids=[
            "clusterip",
            "headless",
            "ingress",
            "ingress-class",
            "httproute",
            "grpcroute",
            "nodeport",
            "lb-local",
            "nlb-ip",
            "gke-neg",
            "alb-deregistration",
            "legacy-gce-class",
            "default-class",
        ],
    )
    def test_the_sleep_is_the_policys_value_for_the_furthest_hop(
        self, objects: tuple[dict[str, Any], ...], seconds: int, explained: str
    ) -> None:
        slept, text, grace = pre_stop(facts(*objects))
        assert slept == seconds
        assert explained in text
        assert grace == max(30, seconds + DEFAULT.drain_seconds)

    def test_a_service_or_ingress_that_asks_for_more_gets_it(self) -> None:
        asked = {"pod-tailor.io/prestop-sleep-seconds": "40"}
        slept, text, _ = pre_stop(facts(service(), ingress(annotations=asked)))
        assert slept == 40
        assert "asked for 40s by pod-tailor.io/prestop-sleep-seconds" in text

    def test_asking_for_less_than_the_path_needs_does_not_lower_it(self) -> None:
        slept, _, _ = pre_stop(
            facts(service(kind="LoadBalancer", annotations={"pod-tailor.io/prestop-sleep-seconds": "2"}))
        )
        assert slept == 20

    def test_the_policy_table_sets_each_kind(self) -> None:
        custom = policy("preStop:\n  sleepSecondsByPath: {inCluster: 3, ingress: 9, loadBalancer: 31}")
        for objects, expected in [
            ((service(),), 3),
            ((service(), ingress()), 9),
            ((service(kind="LoadBalancer"),), 31),
        ]:
            _decision, result = run(pod(labels=WEB), using=custom, facts=facts(*objects))
            assert first(result)["lifecycle"]["preStop"]["sleep"]["seconds"] == expected


class TestWhenThePathIsNotKnown:
    def test_a_pod_no_service_selects_keeps_the_default_and_says_so(self) -> None:
        slept, text, grace = pre_stop(facts(service(selector={"app": "other"}), ingress()))
        assert (slept, grace) == (5, 35)
        assert "no Service selects the Pod yet: default pause" in text

    @pytest.mark.parametrize(
        "objects",
        [(service(kind="ExternalName"),), (service(selector={}),), (ingress(),)],
        ids=["externalname", "no-selector", "ingress-without-service"],
    )
    def test_services_that_select_no_pod_are_no_path(self, objects: tuple[dict[str, Any], ...]) -> None:
        assert "no Service selects the Pod yet" in pre_stop(facts(*objects))[1]

    def test_without_a_cluster_watch_nothing_is_claimed(self) -> None:
        slept, text, _ = pre_stop(ClusterFacts(server_version=(1, 33)))
        assert slept == 5
        assert "Service" not in text

    def test_a_selector_needs_every_label(self) -> None:
        found = facts(service(selector={"app": "web", "tier": "front"}))
        assert "no Service selects" in pre_stop(found)[1]
        assert "behind Service web" in pre_stop(found, pod(labels={**WEB, "tier": "front"}))[1]


class TestPeopleAndLimits:
    def test_a_persons_grace_period_is_kept_and_the_pause_fits_in_half_of_it(self) -> None:
        subject = pod(labels=WEB, grace=40)
        slept, text, grace = pre_stop(facts(service(kind="LoadBalancer")), subject)
        assert (slept, grace) == (20, 40)
        subject = pod(labels=WEB, grace=20)
        slept, text, grace = pre_stop(facts(service(kind="LoadBalancer")), subject)
        assert (slept, grace) == (10, 20)
        assert "shortened to half the Pod's grace period of 20s" in text

    def test_an_existing_pre_stop_hook_is_never_replaced(self) -> None:
        hook = {"preStop": {"exec": {"command": ["/drain.sh"]}}}
        decision, result = run(
            pod(container(lifecycle=hook), labels=WEB), facts=facts(service(kind="LoadBalancer"))
        )
        assert first(result)["lifecycle"] == hook
        assert not [i for i in decision.injections if i.field == "preStop"]

    def test_several_services_name_the_first_two_and_count_the_rest(self) -> None:
        services = [service(name, selector={"app": "web"}) for name in ("a", "b", "c")]
        text = pre_stop(facts(*services))[1]
        assert "behind Service a type ClusterIP + Service b type ClusterIP + 1 more" in text

    def test_jobs_get_no_pause_whatever_selects_them(self) -> None:
        decision, _ = run(
            pod(labels=WEB, restart="Never", owner=("Job", "backup")),
            facts=facts(service(kind="LoadBalancer")),
        )
        assert not [i for i in decision.injections if i.field == "preStop"]


class TestThePolicyTable:
    @pytest.mark.parametrize(
        ("body", "error"),
        [
            (
                "preStop:\n  sleepSecondsByPath: {ingress: 0}",
                "preStop.sleepSecondsByPath.ingress: must be an integer from 1",
            ),
            (
                "preStop:\n  sleepSecondsByPath: {loadBalancer: '30s'}",
                "preStop.sleepSecondsByPath.loadBalancer",
            ),
            ("preStop:\n  sleepSecondsByPath: {gateway: 10}", "sleepSecondsByPath.gateway: unknown field"),
        ],
    )
    def test_a_wrong_value_is_refused_naming_the_field(self, body: str, error: str) -> None:
        with pytest.raises(PolicyError, match=error.replace(".", r"\.")):
            policy(body)

    def test_a_named_policy_changes_only_what_it_lists(self) -> None:
        custom = policy("preStop:\n  sleepSecondsByPath: {loadBalancer: 45}")
        assert (custom.sleeps_by_path.in_cluster, custom.sleeps_by_path.ingress) == (5, 15)
        assert custom.sleeps_by_path.load_balancer == 45
