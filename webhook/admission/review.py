"""Reading an AdmissionReview (admission.k8s.io/v1) request body into a typed `Review`.

Parsing never raises: anything the API server would not send comes back as `BadRequest` with a
message a person can act on and, when it could be read, the request uid (so the answer can carry it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from webhook.core.model.pod import malformed

__all__ = ["API_VERSION", "KIND", "BadRequest", "Review", "is_v1_pod", "parse_review", "pod_problem"]

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"


@dataclass(frozen=True, slots=True)
class BadRequest:
    """Input that is not an AdmissionReview we can answer; `uid` is set when it was readable."""

    message: str
    uid: str | None = None


class Review(NamedTuple):
    """The parts of `request` the webhook acts on (a NamedTuple: immutable and cheap to build).

    `obj` is `request.object`, validated as a Pod only when the review is a Pod CREATE (`is_pod_create`);
    for anything else it is whatever was sent (possibly None) and is never looked at.
    """

    uid: str
    group: str
    kind: str
    operation: str
    sub_resource: str
    namespace: str
    name: str
    obj: Any
    dry_run: bool

    @property
    def is_pod_create(self) -> bool:
        pod = self.group == "" and self.kind == "Pod"
        return pod and self.operation == "CREATE" and not self.sub_resource


def _show(value: Any) -> str:
    """A sent value quoted in a message, clipped: messages and log lines must stay short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_STRINGS = ("operation", "subResource", "namespace", "name")


def is_v1_pod(obj: Any) -> bool:
    """An object whose kind and apiVersion, when given, are those of a v1 Pod."""
    return isinstance(obj, dict) and obj.get("kind", "Pod") == "Pod" and obj.get("apiVersion", "v1") == "v1"


def pod_problem(obj: Any, uid: str) -> BadRequest | None:
    """Why `request.object` of a Pod CREATE is not a Pod the engine can work on, or None.

    The engine's own `malformed` check (metadata shapes included) decides beyond the kind; it reads
    only fields that `decision_inputs` keeps, which lets the verdict cache skip it for a known Pod.
    """
    if not isinstance(obj, dict):
        return BadRequest("request.object must be a Pod object for a Pod CREATE", uid)
    if not is_v1_pod(obj):
        return BadRequest(
            f"request.object is a {_show(obj.get('apiVersion'))}/{_show(obj.get('kind'))}, not a v1/Pod", uid
        )
    problem = malformed(obj)
    if problem is not None:
        return BadRequest(f"request.object is not a usable Pod: {problem}", uid)
    return None


def parse_review(body: bytes) -> Review | BadRequest:
    """Validate an AdmissionReview envelope; never raises. A Pod's shape is `pod_problem`'s job."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return BadRequest(f"body is not JSON: {exc}")
    if not isinstance(document, dict):
        return BadRequest(f"body is a JSON {type(document).__name__}, not an AdmissionReview object")
    request = document.get("request")
    uid_value = request.get("uid") if isinstance(request, dict) else None
    uid = uid_value if isinstance(uid_value, str) and uid_value else None
    if document.get("kind") != KIND or document.get("apiVersion") != API_VERSION:
        return BadRequest(
            f"expected kind {KIND} and apiVersion {API_VERSION}, got kind {_show(document.get('kind'))} "
            f"and apiVersion {_show(document.get('apiVersion'))}",
            uid,
        )
    if not isinstance(request, dict):
        return BadRequest("AdmissionReview has no request object")
    if uid is None:
        return BadRequest("request.uid is missing or not a non-empty string")
    kind = request.get("kind")
    if not isinstance(kind, dict) or not isinstance(kind.get("kind"), str):
        return BadRequest("request.kind must be an object with a string kind", uid)
    group = kind.get("group", "")
    if not isinstance(group, str):
        return BadRequest("request.kind.group must be a string", uid)
    get = request.get
    fields = (get("operation"), get("subResource"), get("namespace"), get("name"))
    operation, sub_resource, namespace, name = fields
    if (
        sub_resource is None
        and type(operation) is str
        and type(namespace) is str
        and (name is None or type(name) is str)
    ):  # the usual shape of a namespaced CREATE or UPDATE
        sub_resource, name = "", name or ""
    else:  # check each field for its message
        for key, value in zip(_STRINGS, fields, strict=True):
            if value is not None and not isinstance(value, str):
                return BadRequest(f"request.{key} must be a string, got {type(value).__name__}", uid)
        operation, sub_resource, namespace, name = [value or "" for value in fields]
    if not operation:
        return BadRequest("request.operation is missing", uid)
    dry_run = get("dryRun")
    if type(dry_run) is not bool:
        if dry_run is not None:
            return BadRequest("request.dryRun must be a boolean", uid)
        dry_run = False
    obj = get("object")
    review = Review(uid, group, kind["kind"], operation, sub_resource, namespace, name, obj, dry_run)
    if not namespace and review.is_pod_create:
        return BadRequest("request.namespace is missing for a Pod CREATE", uid)
    return review
