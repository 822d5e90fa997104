"""Small workload objects for the report tests, shaped as `kubectl get -o yaml` prints them."""

from __future__ import annotations

from typing import Any

from webhook.core.model.decision import Injection
from webhook.core.model.profile import Evidence, Recommendation

Obj = dict[str, Any]


def container(name: str = "app", *, port: int | None = None, **fields: Any) -> Obj:
    body: Obj = {"name": name, "image": f"example/{name}:1"}
    if port is not None:
        body["ports"] = [{"containerPort": port}]
    return body | fields


def resources(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Obj:
    out: Obj = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def workload(
    kind: str, name: str, *containers: Obj, namespace: str = "shop", replicas: int | None = None, **extra: Any
) -> Obj:
    """A Deployment, StatefulSet, DaemonSet, ReplicaSet, Job or CronJob with a pod template."""
    template: Obj = {"metadata": {"labels": {"app": name}}, "spec": {"containers": list(containers)}}
    spec: Obj = {"selector": {"matchLabels": {"app": name}}}
    group = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    if kind == "CronJob":
        template["spec"]["restartPolicy"] = "OnFailure"
        spec = {"schedule": "0 1 * * *", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "Job":
        template["spec"]["restartPolicy"] = "Never"
        spec = {"template": template}
    else:
        spec["template"] = template
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": group,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        **extra,
    }


def namespace(name: str, mode: str | None = None, policy: str | None = None) -> Obj:
    labels = {
        key: value for key, value in (("pod-tailor.io/mode", mode), ("pod-tailor.io/policy", policy)) if value
    }
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def recommendation(cpu: str, memory: str, *, confidence: float = 0.93) -> Recommendation:
    from webhook.core.model.quantity import parse

    evidence = Evidence(
        window="14d",
        samples=4032,
        hours=336.0,
        cpu_percentile=95.0,
        memory_margin=0.15,
        confidence=confidence,
    )
    return Recommendation(cpu=parse(cpu), memory=parse(memory), evidence=evidence)


def described(injections: tuple[Injection, ...]) -> set[tuple[str, str, str]]:
    return {(i.target, i.field, i.value) for i in injections}
