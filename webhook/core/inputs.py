"""The part of a Pod the engine reads: its decision inputs.

Replicas of one template differ in fields the engine never looks at (the ServiceAccount plugin's
`kube-api-access-xxxxx` volume and its mounts, env, images' digests), so the same inputs mean the same
decision, and the same patch applies to each of them. The admission path keys its verdict cache on
these inputs; a test holds the engine to reading nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

__all__ = ["ContainerInputs", "MetadataInputs", "PodInputs", "SpecInputs", "decision_inputs"]


# The fields the engine reads, as types: `decision_inputs` picks them from a parsed Pod, and the
# admission path decodes only them from a request body (`webhook.admission.peek`).
class MetadataInputs(TypedDict, total=False):
    name: Any
    generateName: Any
    namespace: Any
    labels: Any
    annotations: Any
    ownerReferences: Any


class ContainerInputs(TypedDict, total=False):
    name: Any
    ports: Any
    resources: Any
    readinessProbe: Any
    livenessProbe: Any
    startupProbe: Any
    lifecycle: Any
    restartPolicy: Any


class SpecInputs(TypedDict, total=False):
    restartPolicy: Any
    terminationGracePeriodSeconds: Any
    resources: Any
    os: Any
    nodeSelector: Any
    containers: list[ContainerInputs]
    initContainers: list[ContainerInputs]


class PodInputs(TypedDict, total=False):
    metadata: MetadataInputs
    spec: SpecInputs


_GROUPS = ("containers", "initContainers")
_METADATA = tuple(MetadataInputs.__annotations__)
_SPEC = tuple(key for key in SpecInputs.__annotations__ if key not in _GROUPS)
_CONTAINER = tuple(ContainerInputs.__annotations__)


def _pick(source: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    # A plain loop: this runs for every container of every admission, and a comprehension costs a frame.
    picked = {}
    for key in keys:
        if key in source:
            picked[key] = source[key]
    return picked


def _pick_each(items: list[Any]) -> list[Any]:
    """Each container projected; the list unchanged if any item is not an object."""
    picked = []
    for item in items:
        if not isinstance(item, dict):
            return items
        picked.append(_pick(item, _CONTAINER))
    return picked


def decision_inputs(pod: Any) -> Any:
    """A copy-free projection of `pod` onto what the engine reads; odd shapes pass through unchanged."""
    if not isinstance(pod, dict):
        return pod
    metadata, spec = pod.get("metadata", {}), pod.get("spec")
    if not isinstance(spec, dict) or not isinstance(metadata, dict):
        return pod
    view: dict[str, Any] = {}
    if "metadata" in pod:
        view["metadata"] = _pick(metadata, _METADATA)
    projected = _pick(spec, _SPEC)
    for group in _GROUPS:
        items = spec.get(group)
        if isinstance(items, list):
            projected[group] = _pick_each(items)
        elif group in spec:
            projected[group] = items
    view["spec"] = projected
    return view
