"""Finding Pods in what people hand the preview: Pods, workload manifests, or an AdmissionReview.

Each `PodSource` knows where its pod-shaped object sits inside the document (a JSON Pointer prefix),
so the engine's patch can be applied to, or shown against, the document itself. A manifest the API
server would refuse (no containers, a containerPort that is no number, negative replicas) is a
SourceError naming what is wrong, for `preview`, `report` and the dashboard alike: the Pod is judged by
the server's own check (`webhook.core.model.pod.malformed`), the workload's counts here.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.config.yamltext import yaml_documents
from webhook.core.model.pod import malformed
from webhook.core.model.workload import WorkloadKey, pod_workload

__all__ = [
    "TEMPLATE_PATHS",
    "InputDocument",
    "PodSource",
    "SourceError",
    "input_documents",
    "is_list",
    "load_documents",
    "nothing_to_preview",
    "object_sources",
    "pod_source",
    "pod_sources",
]

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

# The counts of a workload the API server refuses below 0, by kind.
_REPLICAS = (("spec", "replicas"),)
_RUNS = (("spec", "parallelism"), ("spec", "completions"))
_SCALED = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "Rollout")
COUNTS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    **dict.fromkeys(_SCALED, _REPLICAS),
    "Job": _RUNS,
    "CronJob": tuple(("spec", "jobTemplate", *path) for path in _RUNS),
}
REFUSED = "the API server would refuse it"


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
    origin: str = ""  # the file it was read from, when the preview read several

    @property
    def label(self) -> str:
        return f"{self.workload.kind}/{self.workload.name}"

    @property
    def claim_templates(self) -> tuple[str, ...]:
        """A StatefulSet's volumeClaimTemplates' names: each of its Pods gets a claim of its own."""
        if self.is_review or self.document.get("kind") != "StatefulSet":
            return ()
        templates = _dig(self.document, ("spec", "volumeClaimTemplates"))
        if not isinstance(templates, list):
            return ()
        names = [_dig(one, ("metadata", "name")) for one in templates if isinstance(one, Mapping)]
        return tuple(name for name in names if isinstance(name, str) and name)


@dataclass(frozen=True, slots=True)
class InputDocument:
    """One document as read: a `List` stays one document, its items are its objects."""

    origin: str
    line: int
    document: dict[str, Any]
    objects: tuple[dict[str, Any], ...]  # the document itself, or the List's items that are objects


def is_list(document: Mapping[str, Any]) -> bool:
    """`kind: List` or any `*List` (what `kubectl get -o yaml` writes): kubectl applies its items."""
    return str(document.get("kind", "")).endswith("List")


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))  # YAML dates etc. as plain JSON


def input_documents(text: str, *, origin: str, problems: list[str]) -> list[InputDocument]:
    """Every document of `text` in order; one that cannot be parsed or is not an object is one line in
    `problems` naming `origin`, the line and the column (`webhook.config.yamltext`), and left out."""
    found = []
    for line, doc in yaml_documents(text, origin=origin, problems=problems):
        if not isinstance(doc, dict):
            kind = type(doc).__name__
            problems.append(f"{origin}:{line}: a {kind}, not an object (apiVersion, kind, metadata)")
            continue
        document = _plain(doc)
        if is_list(document):
            items = document.get("items") if isinstance(document.get("items"), list) else []
            objects = tuple(item for item in items if isinstance(item, dict))
        else:
            objects = (document,)
        found.append(InputDocument(origin, line, document, objects))
    return found


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
    flat = [obj for doc in input_documents(text, origin=origin, problems=found) for obj in doc.objects]
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


def object_sources(
    documents: Sequence[InputDocument], *, namespace: str | None, problems: list[str]
) -> dict[int, PodSource | None]:
    """id(object) -> its PodSource (its file as `origin`), None for one without pods; a workload that
    cannot be used is named in `problems` and has no entry (it is left out)."""
    found: dict[int, PodSource | None] = {}
    for document in documents:
        for obj in document.objects:
            try:
                source = pod_source(obj, namespace=namespace)
                found[id(obj)] = source and dataclasses.replace(source, origin=document.origin)
            except SourceError as exc:
                problems.append(f"{document.origin}:{document.line}: {exc}")
    return found


def pod_sources(documents: list[dict[str, Any]], *, namespace: str | None = None) -> list[PodSource]:
    """One PodSource per Pod or pod template.

    Objects without pods (Services, ConfigMaps) are passed over, so a whole app's manifest works; a
    workload without a template, or input with no pod at all, raises SourceError.
    """
    found = [source for document in documents if (source := pod_source(document, namespace=namespace))]
    if not found:
        raise SourceError(nothing_to_preview(documents))
    return found


def nothing_to_preview(documents: list[dict[str, Any]]) -> str:
    kinds = ", ".join(sorted({str(document.get("kind")) for document in documents})) or "nothing"
    return f"no Pod or pod template found (unsupported kind: {kinds})"


def _count_problem(document: Mapping[str, Any], kind: str) -> str | None:
    for path in COUNTS.get(kind, ()):
        value = _dig(document, path)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            return f"{'.'.join(path)} {value!r} is not a whole number, 0 or more"
    return None


def pod_source(document: dict[str, Any], *, namespace: str | None = None) -> PodSource | None:
    """The Pod or pod template in `document`, None for a kind without one (a Service); SourceError for
    a workload whose template is missing, or for what the API server would refuse."""
    kind = document.get("kind")
    meta: Mapping[str, Any] = document["metadata"] if isinstance(document.get("metadata"), Mapping) else {}
    name = str(meta.get("name") or meta.get("generateName") or "unnamed")
    ns = namespace or str(meta.get("namespace") or "default")
    if kind == "AdmissionReview":
        request = document.get("request")
        if not isinstance(request, Mapping) or not isinstance(request.get("object"), dict):
            raise SourceError("AdmissionReview without request.object")
        pod = request["object"]
        problem = malformed(pod)
        if problem is not None:
            raise SourceError(f"AdmissionReview: request.object is not a usable Pod: {problem} (the server "
                              "answers 400)")
        ns = namespace or str(
            request.get("namespace") or (pod.get("metadata") or {}).get("namespace") or "default"
        )
        return PodSource(document, ("request", "object"), pod, ns, pod_workload(pod, ns), is_review=True)
    if kind == "Pod":
        if not isinstance(document.get("spec"), Mapping):
            raise SourceError(f"Pod {name} has no spec")
        problem = malformed(document)
        if problem is not None:
            raise SourceError(f"Pod {name}: {problem}: {REFUSED}")
        return PodSource(document, (), document, ns, WorkloadKey(ns, "Pod", name.rstrip("-")))
    if kind in TEMPLATE_PATHS:
        path = TEMPLATE_PATHS[str(kind)]
        template = _dig(document, path)
        if not isinstance(template, dict) or not isinstance(template.get("spec"), Mapping):
            raise SourceError(f"{kind} {name} has no pod template at {'.'.join(path)}")
        problem = _count_problem(document, str(kind))
        if problem is None:
            found = malformed({**template, "metadata": template.get("metadata") or {}})
            problem = found and f"{'.'.join(path)}: {found}"
        if problem is not None:
            raise SourceError(f"{kind} {name}: {problem}: {REFUSED}")
        return PodSource(document, path, template, ns, WorkloadKey(ns, str(kind), name))
    return None
