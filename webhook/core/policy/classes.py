"""Workload classes: which kind of workload a Pod runs, so a datastore is not shut down like a web server.

A class is a name, a `match` and what changes for it. The policy's `classes` are tried in order (the
namespace policy's own first, then the bundled ones); a Pod-scoped class decides for the whole Pod (the
first that matches; none: `web`, today's behaviour), a container-scoped one (`mesh-proxy`, `pause`) for
each container it matches. What admission can see: the Pod's owner kind (a ReplicaSet's Pod is a
Deployment's), its images, container names, `priorityClassName`, labels, and its StatefulSet's
volumeClaimTemplates (the claims the controller names `<template>-<pod>`: `workload.claim_templates`).
It cannot see the rest of the workload object (replicas, annotations on the Deployment) nor what the
image does. A class may list several matches: any one that holds selects it. The classes themselves
(`WorkloadClass`, `ClassMatch`) are part of the policy they refine (`webhook.core.policy.policies`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.core.model.pod import ContainerRef, containers
from webhook.core.policy.policies import ClassMatch, Scope, WorkloadClass

__all__ = ["WEB", "container_class", "image_name", "pod_class"]

WEB = "web"  # the class of a Pod no class matches: today's behaviour


@functools.lru_cache(maxsize=4096)
def image_name(image: str) -> str:
    """The registry-independent name of an image: no registry, path, tag or digest.

    `registry.k8s.io/pause@sha256:...` -> `pause`; `docker.io/library/postgres:16` -> `postgres`;
    `localhost:5000/team/app:1` -> `app`.
    """
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[0].lower()


def _why_any(
    matches: tuple[ClassMatch, ...], pod: Mapping[str, Any], *, kind: str, refs: Sequence[ContainerRef],
    claims: tuple[str, ...],
) -> str | None:
    """Why the first of `matches` that holds does (`image postgres`), "default" for none given, or None."""
    if not matches:
        return "default"
    for match in matches:
        why = _why(match, pod, kind=kind, refs=refs, claims=claims)
        if why is not None:
            return why
    return None


def _why(
    match: ClassMatch, pod: Mapping[str, Any], *, kind: str, refs: Sequence[ContainerRef],
    claims: tuple[str, ...],
) -> str | None:
    """Why `match` holds for these containers of the Pod (`image postgres`), or None when it does not."""
    spec = pod["spec"]
    metadata = pod.get("metadata") or {}
    reasons: list[str] = []
    if match.claim_templates:
        if not claims:
            return None
        reasons.append("volumeClaimTemplates " + ",".join(claims))
    if match.kinds:
        if kind not in match.kinds:
            return None
        reasons.append(f"kind {kind}")
    if match.priority_class_names:
        priority = spec.get("priorityClassName")
        if priority not in match.priority_class_names:
            return None
        reasons.append(f"priorityClassName {priority}")
    if match.labels:
        labels = metadata.get("labels") or {}
        if any(labels.get(key) != value for key, value in match.labels):
            return None
        reasons.append("label " + ",".join(f"{key}={value}" for key, value in match.labels))
    if match.container_names or match.images:
        reason = next(
            (
                f"container {ref.name}" if ref.name in match.container_names else f"image {image_name(image)}"
                for ref in refs
                if ref.name in match.container_names
                or (isinstance(image := ref.body.get("image"), str) and image_name(image) in match.images)
            ),
            None,
        )
        if reason is None:
            return None
        reasons.append(reason)
    return ", ".join(reasons) or "default"


def pod_class(
    classes: Sequence[WorkloadClass], pod: Mapping[str, Any], *, kind: str, claims: tuple[str, ...] = ()
) -> WorkloadClass | None:
    """The first Pod-scoped class matching the Pod (images: any regular container's), with its reason.

    `claims`: the names of its StatefulSet's volumeClaimTemplates (`workload.claim_templates`).
    """
    regular = [ref for ref in containers(pod) if ref.group == "containers"]
    for candidate in classes:
        if candidate.scope is not Scope.POD:
            continue
        why = _why_any(candidate.match, pod, kind=kind, refs=regular, claims=claims)
        if why is not None:
            return _with_reason(candidate, why)
    return None


def container_class(
    classes: Sequence[WorkloadClass], pod: Mapping[str, Any], ref: ContainerRef, *, kind: str,
    claims: tuple[str, ...] = (),
) -> WorkloadClass | None:
    """The first container-scoped class matching one container, with its reason."""
    for candidate in classes:
        if candidate.scope is Scope.CONTAINER:
            why = _why_any(candidate.match, pod, kind=kind, refs=[ref], claims=claims)
            if why is not None:
                return _with_reason(candidate, why)
    return None


def _with_reason(matched: WorkloadClass, why: str) -> WorkloadClass:
    return WorkloadClass(
        matched.name, matched.match, matched.scope, matched.hands_off, matched.needs_service,
        matched.minimum_requests, matched.policy, why,
    )

