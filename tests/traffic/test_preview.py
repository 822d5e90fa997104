"""The offline preview reads Services, Ingresses and routes from the same manifests as the workload."""

from __future__ import annotations

import time

import yaml

from tests.traffic.kit import ingress, ingress_class, service
from webhook.config.policies import bundled_policies
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot
from webhook.offline.preview import run_preview

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "app", "image": "nginx:1.27", "ports": [{"containerPort": 8080}]}]
            },
        },
    },
}
CLUSTER = ClusterSnapshot(policies=bundled_policies(), server_version=(1, 33), taken_at=time.time())
ALB = {
    "alb.ingress.kubernetes.io/target-type": "ip",
    "alb.ingress.kubernetes.io/target-group-attributes": "deregistration_delay.timeout_seconds=20",
}


def preview_pause(*documents: dict[str, object], namespace: str | None = None) -> str:
    text = yaml.safe_dump_all([DEPLOYMENT, *documents])
    (found,) = run_preview(text, cluster=CLUSTER, profiles=EMPTY_PROFILES, namespace=namespace)
    (pause,) = [i for i in found.decision.injections if i.field == "preStop"]
    return pause.describe()


def test_the_service_and_ingress_beside_the_deployment_size_the_pause() -> None:
    shown = preview_pause(
        service(kind="LoadBalancer"),
        ingress(class_name="alb", annotations=ALB),
        ingress_class("alb", "ingress.k8s.aws/alb"),
    )
    assert shown.startswith(
        "preStop=sleep 25s (behind Service web type LoadBalancer + Ingress web, class alb ip"
    )


def test_objects_land_in_the_namespace_the_pods_land_in() -> None:
    assert "behind Service web" in preview_pause(service(namespace="elsewhere"), namespace="prod")


def test_without_services_in_the_input_the_path_is_not_claimed() -> None:
    shown = preview_pause()
    assert shown.startswith("preStop=sleep 5s (native sleep")
    assert "Service" not in shown
