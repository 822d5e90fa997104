"""Finding Pods in what people hand the preview: Pods, workload manifests, or an AdmissionReview.

Each `PodSource` knows where its pod-shaped object sits inside the document (a JSON Pointer prefix),
so the engine's patch can be applied to, or shown against, the document itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.config.yamltext import yaml_documents
from webhook.core.workload import WorkloadKey, pod_workload

__all__ = ["TEMPLATE_PATHS", "PodSource", "SourceError", "load_documents", "pod_sources"]

# Where each kind keeps its pod template.
TEMPLATE_PATHS: Mapping[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
    "Rollout": ("spec", "template"),  # Argo Rollouts (argoproj.io/v1alpha1)
}


class SourceError(ValueError):
    """Input the preview cannot use; the message is one line meant for a person."""


@dataclass(frozen=True, slots=True)
class PodSource:
    document: dict[str, Any]  # the whole document as read
    prefix: tuple[str, ...]  # where the pod-shaped object sits in `document`
    pod: dict[str, Any]  # the pod-shaped object (a Pod, a template, or request.object)
    namespace: str
    workload: WorkloadKey
    is_review: bool = False

    @property
    def label(self) -> str:
        return f"{self.workload.kind}/{self.workload.name}"


def load_documents(
    text: str, *, origin: str = "input", problems: list[str] | None = None
) -> list[dict[str, Any]]:
    """JSON or (multi-document) YAML into a list of objects; `List` kinds are flattened.

    A document that cannot be parsed or is not an object is one line naming `origin`, the line and
    the column (`webhook.config.yamltext`): with `problems`, it is added there and left out while the
    other documents still count; without, the first one raises SourceError.
    """
    found: list[str] = [] if problems is None else problems
    before = len(found)
    flat: list[dict[str, Any]] = []
    for line, doc in yaml_documents(text, origin=origin, problems=found):
        if not isinstance(doc, dict):
            kind = type(doc).__name__
            found.append(f"{origin}:{line}: a {kind}, not an object (apiVersion, kind, metadata)")
        elif doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List"):
            flat.extend(item for item in doc.get("items") or () if isinstance(item, dict))
        else:
            flat.append(json.loads(json.dumps(doc, default=str)))  # YAML dates etc. as plain JSON
    if problems is None and len(found) > before:
        raise SourceError(found[before])
    if not flat and len(found) == before:
        raise SourceError(f"{origin}: no objects in input")
    return flat


def _dig(document: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = document
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def pod_sources(documents: list[dict[str, Any]], *, namespace: str | None = None) -> list[PodSource]:
    """One PodSource per Pod or pod template.

    Objects without pods (Services, ConfigMaps) are passed over, so a whole app's manifest works; a
    workload without a template, or input with no pod at all, raises SourceError.
    """
    found: list[PodSource] = []
    passed_over: list[str] = []
    for document in documents:
        found.extend(_sources(document, namespace=namespace, passed_over=passed_over))
    if not found:
        kinds = ", ".join(sorted(set(passed_over))) or "nothing"
        raise SourceError(f"no Pod or pod template found (unsupported kind: {kinds})")
    return found


def _sources(document: dict[str, Any], *, namespace: str | None, passed_over: list[str]) -> list[PodSource]:
    kind = document.get("kind")
    meta: Mapping[str, Any] = document["metadata"] if isinstance(document.get("metadata"), Mapping) else {}
    name = str(meta.get("name") or meta.get("generateName") or "unnamed")
    ns = namespace or str(meta.get("namespace") or "default")
    if kind == "AdmissionReview":
        request = document.get("request")
        if not isinstance(request, Mapping) or not isinstance(request.get("object"), dict):
            raise SourceError("AdmissionReview without request.object")
        pod = request["object"]
        ns = namespace or str(
            request.get("namespace") or (pod.get("metadata") or {}).get("namespace") or "default"
        )
        return [PodSource(document, ("request", "object"), pod, ns, pod_workload(pod, ns), is_review=True)]
    if kind == "Pod":
        if not isinstance(document.get("spec"), Mapping):
            raise SourceError(f"Pod {name} has no spec")
        return [PodSource(document, (), document, ns, WorkloadKey(ns, "Pod", name.rstrip("-")))]
    if kind in TEMPLATE_PATHS:
        path = TEMPLATE_PATHS[str(kind)]
        template = _dig(document, path)
        if not isinstance(template, dict) or not isinstance(template.get("spec"), Mapping):
            raise SourceError(f"{kind} {name} has no pod template at {'.'.join(path)}")
        return [PodSource(document, path, template, ns, WorkloadKey(ns, str(kind), name))]
    passed_over.append(str(kind))
    return []
