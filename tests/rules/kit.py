"""One manifest set (a workload and its Services), decided twice: by the real HTTPS server on the Pod the
API server would create from it, and by the offline preview on the manifests themselves.

`both(server, *documents)` returns the two Pods as patched plus the warnings each path gave, and
asserts they agree; the tests then check the rule on either.
"""

from __future__ import annotations

import base64
import copy
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonpatch
import yaml

from tests.reviews import admission_review
from tests.server.answers import answer_of
from tests.server.conftest import RunningServer
from webhook.config.policies import bundled_policies
from webhook.core.model.pod import INJECTED_ANNOTATION
from webhook.core.policy.policies import PolicySet
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot
from webhook.offline.admitted import as_created
from webhook.offline.preview import run_preview
from webhook.offline.traffic import with_manifest_traffic

NAMESPACE = "shop"
_TEMPLATE_HASH = "7d4b9c8f6d"


def cluster(policies: PolicySet | None = None) -> ClusterSnapshot:
    return ClusterSnapshot(
        policies=policies or bundled_policies(), server_version=(1, 33), taken_at=time.time()
    )


def box(name: str = "app", *, image: str = "example/app:1.0", ports: Sequence[Any] = (8080,),
        **fields: Any) -> dict[str, Any]:  # fmt: skip
    """A container as a manifest writes it: ports as numbers or full port objects."""
    body: dict[str, Any] = {"name": name, "image": image}
    if ports:
        body["ports"] = [{"containerPort": p} if isinstance(p, int) else dict(p) for p in ports]
    body.update(fields)
    return body


def workload(
    kind: str = "Deployment",
    *containers: dict[str, Any],
    name: str = "web",
    init: Sequence[dict[str, Any]] = (),
    claims: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Deployment, StatefulSet, DaemonSet or Job manifest with one pod template labelled app=`name`."""
    pod_spec: dict[str, Any] = {"containers": list(containers or [box()]), **spec}
    if init:
        pod_spec["initContainers"] = list(init)
    if kind == "Job":
        pod_spec.setdefault("restartPolicy", "Never")
    template = {"metadata": {"labels": {"app": name, **(labels or {})}}, "spec": pod_spec}
    body: dict[str, Any] = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if kind == "Job":
        body = {"template": template}
    if kind == "StatefulSet":
        body["serviceName"] = name
        body["volumeClaimTemplates"] = [
            {"metadata": {"name": claim},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
            for claim in claims
        ]  # fmt: skip
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE}, "spec": body}


def svc(name: str = "web", *, ports: Sequence[tuple[int, int | str]] = ((80, 8080),),
        selector: Mapping[str, str] | None = None) -> dict[str, Any]:  # fmt: skip
    """A Service selecting app=`name` (or `selector`), with (port, targetPort) pairs."""
    return {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "selector": dict(selector or {"app": name}),
            "ports": [{"name": f"p{i}", "port": p, "targetPort": t, "protocol": "TCP"} for i, (p, t) in
                      enumerate(ports)],
        },
    }  # fmt: skip


def created_pod(document: Mapping[str, Any]) -> dict[str, Any]:
    """The Pod the workload's controller asks for, as the API server hands it to the webhooks."""
    kind, name = document["kind"], document["metadata"]["name"]
    template = copy.deepcopy(document["spec"]["template"])
    metadata: dict[str, Any] = {**template.get("metadata", {}), "namespace": NAMESPACE}
    labels = metadata.setdefault("labels", {})
    spec = template["spec"]
    owner_kind, owner_name = kind, name
    if kind == "Deployment":
        owner_kind, owner_name = "ReplicaSet", f"{name}-{_TEMPLATE_HASH}"
        labels["pod-template-hash"] = _TEMPLATE_HASH
        metadata["generateName"] = f"{owner_name}-"
    elif kind == "StatefulSet":
        metadata["name"] = f"{name}-0"
        labels["statefulset.kubernetes.io/pod-name"] = f"{name}-0"
        claims = [t["metadata"]["name"] for t in document["spec"].get("volumeClaimTemplates") or ()]
        spec["volumes"] = [
            *({"name": c, "persistentVolumeClaim": {"claimName": f"{c}-{name}-0"}} for c in claims),
            *(spec.get("volumes") or ()),
        ]
    else:
        metadata["generateName"] = f"{name}-"
    metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner_kind, "name": owner_name,
                                    "uid": str(uuid.uuid4()), "controller": True,
                                    "blockOwnerDeletion": True}]  # fmt: skip
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    return as_created({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


@dataclass
class Decided:
    pod: dict[str, Any]  # the Pod as patched by the server
    warnings: list[str]
    annotation: str

    def container(self, name: str, group: str = "containers") -> dict[str, Any]:
        (found,) = [c for c in self.pod["spec"].get(group) or () if c["name"] == name]
        return dict(found)


def _injected(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("annotations") or {}).get(INJECTED_ANNOTATION, ""))


def _lines(annotation: str) -> list[str]:
    return annotation.splitlines()


def both(server: RunningServer, *documents: dict[str, Any], policies: PolicySet | None = None) -> Decided:
    """Decide the first document's Pod through the server and through the preview; both must agree."""
    base = cluster(policies)
    with_services = with_manifest_traffic(base, documents, namespace=NAMESPACE)
    server.state.swap_cluster(with_services)
    pod = created_pod(documents[0])
    uid = str(uuid.uuid4())
    review = admission_review(pod, uid=uid, namespace=NAMESPACE)
    answer = answer_of(server.mutate(review), uid)
    ops = json.loads(base64.b64decode(answer["patch"])) if "patch" in answer else []
    patched = jsonpatch.apply_patch(copy.deepcopy(pod), ops)
    served_annotation = _injected(patched)

    (previewed,) = [found for found in run_preview(yaml.safe_dump_all(documents), cluster=base,
                                                   profiles=EMPTY_PROFILES, namespace=NAMESPACE)
                    if found.source.workload.name == documents[0]["metadata"]["name"]]  # fmt: skip
    shown: Any = previewed.document
    for key in previewed.source.prefix:
        shown = shown[key]
    shown_annotation = _injected(shown)
    assert _lines(shown_annotation) == _lines(served_annotation)
    said = [w if w.startswith("pod-tailor") else f"pod-tailor: {w}" for w in previewed.decision.warnings]
    assert said == answer.get("warnings", [])
    for group in ("initContainers", "containers"):
        assert (shown["spec"].get(group) or []) == (patched["spec"].get(group) or []), group
    grace = patched["spec"]["terminationGracePeriodSeconds"]
    assert shown["spec"].get("terminationGracePeriodSeconds", 30) == grace
    return Decided(patched, list(answer.get("warnings", [])), served_annotation)
