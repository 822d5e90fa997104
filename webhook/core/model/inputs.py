"""The part of a Pod the engine reads: its decision inputs.

Replicas of one template differ in fields the engine never looks at (the ServiceAccount plugin's
`kube-api-access-xxxxx` volume and its mounts, env), so the same inputs mean the same
decision, and the same patch applies to each of them. The admission path keys its verdict cache on
these inputs; a test holds the engine to reading nothing else.

Within metadata only what is read is kept, so that StatefulSet ordinals and Job Pods share one key
and a large annotation nobody reads costs nothing per cache entry: the `pod-tailor.io/` annotations
and LimitRanger's; the `pod-tailor.io/` labels and the label keys the cluster snapshot says are read
(`ClusterSnapshot.label_keys_read`); of each owner reference its kind, name and controller flag; and
the Pod's own name only when no controller owner names its workload (`workload.controller_owner`).
A StatefulSet's Pod's claims are named after the Pod: the inputs hold its volumeClaimTemplates'
names instead (`workload.claim_templates`, under `CLAIM_TEMPLATES`), the same for every replica.
A field of an odd shape is kept whole, so `malformed` judges the inputs as it judges the Pod, and
a map left empty stays: whether `metadata.annotations` exists decides the shape of the patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from webhook import PREFIX
from webhook.core.model.pod import LIMIT_RANGER_ANNOTATION
from webhook.core.model.workload import (
    CLAIM_TEMPLATES,
    ROLLOUT_HASH_LABEL,
    TEMPLATE_HASH_LABEL,
    claim_templates,
    controller_owner,
)

__all__ = [
    "BASE_LABEL_KEYS",
    "ContainerInputs",
    "MetadataInputs",
    "SpecInputs",
    "decision_inputs",
    "metadata_inputs",
    "template_free",
]

# Label keys the engine itself reads besides the `pod-tailor.io/` ones (kept always): the workload's
# name comes from the first, an Argo Rollout's autoscalers are found by the second.
BASE_LABEL_KEYS = frozenset({TEMPLATE_HASH_LABEL, ROLLOUT_HASH_LABEL})
_OWNER_FIELDS = ("controller", "kind", "name")


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
    image: Any  # the workload class (`webhook.core.policy.classes`) reads its registry-independent name
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
    affinity: Any  # required node affinity: node fit
    tolerations: Any
    overhead: Any
    priorityClassName: Any  # quota scopes; a system-critical node agent's class
    activeDeadlineSeconds: Any
    containers: list[ContainerInputs]
    initContainers: list[ContainerInputs]


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


def _labels(value: Any, keys: frozenset[str]) -> Any:
    """The labels read: `pod-tailor.io/` ones and `keys`; any value not a map of strings unchanged."""
    if not isinstance(value, dict):
        return value
    kept = {}
    for key, text in value.items():  # loops, not a shared helper with a predicate: this runs per request
        if not (isinstance(key, str) and isinstance(text, str)):
            return value
        if key in keys or key.startswith(PREFIX):
            kept[key] = text
    return kept


def _annotations(value: Any) -> Any:
    """The annotations read: `pod-tailor.io/` ones and LimitRanger's; any other value unchanged."""
    if not isinstance(value, dict):
        return value
    kept = {}
    for key, text in value.items():
        if not (isinstance(key, str) and isinstance(text, str)):
            return value
        if key.startswith(PREFIX) or key == LIMIT_RANGER_ANNOTATION:
            kept[key] = text
    return kept


def _owners(value: Any) -> Any:
    if not isinstance(value, list) or not all(isinstance(ref, dict) for ref in value):
        return value
    return [_pick(ref, _OWNER_FIELDS) for ref in value]


def metadata_inputs(
    metadata: Mapping[str, Any], label_keys: frozenset[str] = BASE_LABEL_KEYS
) -> dict[str, Any]:
    """What the engine reads of a Pod's metadata (see the module's docstring)."""
    view = _pick(metadata, _METADATA)
    if "labels" in view:
        view["labels"] = _labels(view["labels"], label_keys)
    if "annotations" in view:
        view["annotations"] = _annotations(view["annotations"])
    if "ownerReferences" in view:
        view["ownerReferences"] = _owners(view["ownerReferences"])
        if controller_owner(view) is not None:
            # The owner names the workload; a string name (a StatefulSet ordinal, a Job Pod's) is not read.
            for key in ("name", "generateName"):
                if isinstance(view.get(key), str):
                    del view[key]
    return view


def decision_inputs(pod: Any, *, label_keys: frozenset[str] = BASE_LABEL_KEYS) -> Any:
    """A projection of `pod` onto what the engine reads; odd shapes pass through unchanged.

    `label_keys`: the label keys read beyond the `pod-tailor.io/` ones, from the cluster snapshot.
    """
    if not isinstance(pod, dict):
        return pod
    metadata, spec = pod.get("metadata", {}), pod.get("spec")
    if not isinstance(spec, dict) or not isinstance(metadata, dict):
        return pod
    view: dict[str, Any] = {}
    if "metadata" in pod:
        view["metadata"] = metadata_inputs(metadata, label_keys)
    projected = _pick(spec, _SPEC)
    for group in _GROUPS:
        items = spec.get(group)
        if isinstance(items, list):
            projected[group] = _pick_each(items)
        elif group in spec:
            projected[group] = items
    view["spec"] = projected
    claims = claim_templates(pod)
    if claims:
        view[CLAIM_TEMPLATES] = list(claims)
    return view


def template_free(inputs: dict[str, Any]) -> dict[str, Any] | None:
    """`inputs` of a Deployment's Pod with its ReplicaSet named as the Deployment and no template hash.

    What the engine makes of the ReplicaSet's name and the `pod-template-hash` label is the
    Deployment's name, the same for every template, so after a rollout the first Pods of the new
    template decide as the old ones did: the verdict cache keys them by this view. None unless the
    controller owner is a ReplicaSet named `<name>-<that label>` and no Rollout label is present (its
    autoscalers are found by the ReplicaSet's full name). The caller makes sure nothing else in the
    namespace reads the hash label (a Service selecting on it) and keeps these keys apart from others.
    """
    metadata = inputs.get("metadata")
    if not isinstance(metadata, dict):
        return None
    labels = metadata.get("labels")
    if not isinstance(labels, dict) or ROLLOUT_HASH_LABEL in labels:
        return None
    hashed, owner = labels.get(TEMPLATE_HASH_LABEL), controller_owner(metadata)
    if owner is None or owner.get("kind") != "ReplicaSet" or not isinstance(hashed, str) or not hashed:
        return None
    name = owner["name"]
    if not isinstance(name, str) or not name.endswith("-" + hashed):
        return None
    deployment = name[: -len(hashed) - 1]
    owners = [{**ref, "name": deployment} if ref is owner else ref for ref in metadata["ownerReferences"]]
    kept = {key: value for key, value in labels.items() if key != TEMPLATE_HASH_LABEL}
    return {**inputs, "metadata": {**metadata, "labels": kept, "ownerReferences": owners}}
