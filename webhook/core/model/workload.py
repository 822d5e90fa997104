"""Which workload a Pod belongs to, computed from the Pod alone (no API call at admission).

A ReplicaSet named `<deployment>-<pod-template-hash>` maps to its Deployment, a Job named
`<cronjob>-<scheduled minutes>` to its CronJob; the same rules run on Prometheus pod names. A
StatefulSet's volumeClaimTemplates show on its Pod as claims named `<template>-<pod name>`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CLAIM_TEMPLATES",
    "ROLLOUT_HASH_LABEL",
    "TEMPLATE_HASH_LABEL",
    "WorkloadKey",
    "claim_templates",
    "controller_owner",
    "owner_workload",
    "pod_workload",
]

TEMPLATE_HASH_LABEL = "pod-template-hash"
ROLLOUT_HASH_LABEL = "rollouts-pod-template-hash"  # Argo Rollouts' label on its ReplicaSets' Pods
# Where the decision inputs (and the preview's template) carry a StatefulSet's volumeClaimTemplates'
# names: not a Pod field (the API server drops unknown fields before admission), so nothing clashes.
CLAIM_TEMPLATES = "pod-tailor.io/volumeClaimTemplates"

# pod-template-hash: rand.SafeEncodeString alphabet, 1-10 chars (usually 8-10).
_TEMPLATE_HASH = re.compile(r"^(?P<base>.+)-(?P<hash>[bcdfghjklmnpqrstvwxz2456789]{1,10})$")
# CronJob-created Jobs: name-<unix minutes>, 8+ digits.
_CRON_SUFFIX = re.compile(r"^(?P<base>.+)-(?P<stamp>\d{8,})$")


@dataclass(frozen=True, slots=True, order=True)
class WorkloadKey:
    """A workload by namespace, kind and name; `str()` gives `ns/Kind/name`."""

    namespace: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> WorkloadKey:
        namespace, kind, name = text.split("/", 2)
        return cls(namespace, kind, name)


def owner_workload(kind: str, name: str, *, template_hash: str | None = None) -> tuple[str, str]:
    """Map a controller owner (kind, name) to the workload that people manage."""
    if kind == "ReplicaSet":
        if template_hash and name.endswith("-" + template_hash):
            return "Deployment", name[: -len(template_hash) - 1]
        match = _TEMPLATE_HASH.match(name)
        if match and template_hash is None:
            return "Deployment", match["base"]
        return "ReplicaSet", name
    if kind == "Job":
        match = _CRON_SUFFIX.match(name)
        if match:
            return "CronJob", match["base"]
    return kind, name


def controller_owner(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference that names the Pod's workload: the first controller with a kind and a name."""
    refs = metadata.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") and ref.get("name"):
            return ref
    return None


def pod_workload(pod: Mapping[str, Any], namespace: str) -> WorkloadKey:
    """The workload of a Pod at CREATE time: its controller owner, else the Pod's own name."""
    metadata = pod.get("metadata") or {}
    ref = controller_owner(metadata)
    if ref is not None:
        labels = metadata.get("labels") or {}
        kind, name = owner_workload(
            str(ref["kind"]), str(ref["name"]), template_hash=labels.get(TEMPLATE_HASH_LABEL)
        )
        return WorkloadKey(namespace, kind, name)
    name = metadata.get("name") or metadata.get("generateName", "").rstrip("-") or "unnamed"
    return WorkloadKey(namespace, "Pod", str(name))


def claim_templates(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the volumeClaimTemplates of the StatefulSet that owns `pod`, from the Pod alone.

    The StatefulSet controller gives each Pod a volume per template, named as the template, whose
    claim is `<template>-<pod name>` (`getPersistentVolumeClaimName` in pkg/controller/statefulset).
    Those names hold for every replica, so the decision inputs carry them (`CLAIM_TEMPLATES`) instead of
    the Pod's name; where that key is present it is the answer.
    """
    given = pod.get(CLAIM_TEMPLATES)
    if given is not None:
        return tuple(name for name in given if isinstance(name, str)) if isinstance(given, list) else ()
    metadata, spec = pod.get("metadata"), pod.get("spec")
    if not isinstance(metadata, dict) or not isinstance(spec, dict):
        return ()
    owner, name, volumes = controller_owner(metadata), metadata.get("name"), spec.get("volumes")
    if owner is None or owner.get("kind") != "StatefulSet" or not isinstance(name, str) or not name:
        return ()
    templates = []
    for volume in volumes if isinstance(volumes, list) else ():
        if not isinstance(volume, dict) or not isinstance(claim := volume.get("persistentVolumeClaim"), dict):
            continue
        template = volume.get("name")
        if isinstance(template, str) and template and claim.get("claimName") == f"{template}-{name}":
            templates.append(template)
    return tuple(templates)
