"""AdmissionReview requests as a 1.33 API server sends them, for the tests and the benches.

Two ways in: `admission_review` wraps an object the test made (the envelope the API server writes,
field for field and in its order, so `orjson.dumps` gives the server's bytes); `review_for` takes a
recorded review (the bundled sample, or a corpus file) with a few fields changed. The product builds
no reviews (it only reads them), so the one builder lives here, beside `tests/shared.py`; benches
import it as `tests.reviews`, as they import `tests.shared`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from tests.shared import SAMPLE_REVIEW

__all__ = ["ADMIN", "CONTROLLER", "KUBECTL_CREATE", "POD", "Kind", "admission_review", "review_for"]


class Kind(NamedTuple):
    """What a review's `kind`/`resource` (and `requestKind`/`requestResource`) name."""

    group: str
    version: str
    kind: str
    resource: str


POD = Kind("", "v1", "Pod", "pods")
# Who creates Pods: a Deployment's ReplicaSet controller (most of the corpus), or `kubectl create`.
CONTROLLER: dict[str, Any] = {
    "username": "system:serviceaccount:kube-system:replicaset-controller",
    "uid": "aaed7e7d-8bdf-4bbf-a6b8-013f658eab37",
    "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"],
}
ADMIN: dict[str, Any] = {
    "username": "kubernetes-admin",
    "groups": ["kubeadm:cluster-admins", "system:authenticated"],
}
KUBECTL_CREATE: dict[str, Any] = {"fieldManager": "kubectl-create", "fieldValidation": "Strict"}


def admission_review(
    obj: Mapping[str, Any],
    *,
    uid: str | None = None,
    namespace: str | None = None,
    name: str | None = None,
    kind: Kind = POD,
    dry_run: bool = False,
    user: Mapping[str, Any] = CONTROLLER,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A CREATE of `obj` as the API server asks a mutating webhook (admission.k8s.io/v1).

    Go's field order and `omitempty`: no `name` while the object has none (a generated name is set
    after the webhooks), no `namespace` outside one. `namespace` and `name` default to the object's;
    the uid is random unless given. `options`: what the client set in its CreateOptions beyond
    `dryRun: [All]`, which a dry run sets (`KUBECTL_CREATE` for `kubectl create`).
    """
    meta = obj.get("metadata") or {}
    named = meta.get("name", "") if name is None else name
    where = meta.get("namespace", "") if namespace is None else namespace
    gvk = {"group": kind.group, "version": kind.version, "kind": kind.kind}
    gvr = {"group": kind.group, "version": kind.version, "resource": kind.resource}
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        **({"name": named} if named else {}),
        **({"namespace": where} if where else {}),
        "operation": "CREATE",
        "userInfo": dict(user),
        "object": obj,
        "oldObject": None,
        "dryRun": dry_run,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                    **({"dryRun": ["All"]} if dry_run else {}), **(options or {})},
    }  # fmt: skip
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}


def review_for(
    path: Path | None = None,
    *,
    namespace: str | None = None,
    dry_run: bool | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    name: str | None = None,
    uid: str | None = None,
) -> dict[str, Any]:
    """A recorded review (the bundled sample by default) with a few fields changed.

    `namespace` moves the request and its Pod; `name` is the Pod's (the request keeps no name for a
    generated one); `dry_run` sets the request's flag and its CreateOptions together.
    """
    review: dict[str, Any] = orjson.loads((path or SAMPLE_REVIEW).read_bytes())
    request = review["request"]
    metadata = request["object"]["metadata"]
    if namespace is not None:
        request["namespace"] = namespace
        metadata["namespace"] = namespace
    if dry_run is not None:
        request["dryRun"] = dry_run
        options = request.setdefault("options", {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"})
        if dry_run:
            options["dryRun"] = ["All"]
        else:
            options.pop("dryRun", None)
    if labels:
        metadata.setdefault("labels", {}).update(labels)
    if annotations:
        metadata.setdefault("annotations", {}).update(annotations)
    if name:
        metadata["name"] = name
    if uid is not None:
        request["uid"] = uid
    return review
