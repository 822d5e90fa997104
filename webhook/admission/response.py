"""Building AdmissionReview answers the API server accepts (uid echoed, base64 JSON Patch)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from webhook.admission.review import API_VERSION, KIND

__all__ = ["answer_tail", "answer_with_tail", "bad_request_body", "encode_patch", "review_answer"]


def encode_patch(ops: Sequence[Mapping[str, Any]]) -> str:
    """RFC 6902 operations as the base64 JSON array the API server expects in `response.patch`."""
    return base64.b64encode(orjson.dumps(list(ops))).decode("ascii")


_HEAD = orjson.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": {"uid": ""}})[:-4]


def answer_tail(
    *, patch: str | None = None, warnings: Sequence[str] = (), audit: Mapping[str, str] | None = None
) -> bytes:
    """Everything of an allowing answer after its uid, so replicas sharing a verdict only add their uid."""
    response: dict[str, Any] = {"allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = patch
    if warnings:
        response["warnings"] = list(warnings)
    if audit:
        response["auditAnnotations"] = audit
    return b"," + orjson.dumps(response)[1:] + b"}"


def answer_with_tail(uid: str, tail: bytes) -> bytes:
    return _HEAD + orjson.dumps(uid) + tail


def review_answer(
    uid: str,
    *,
    patch: str | None = None,
    warnings: Sequence[str] = (),
    audit: Mapping[str, str] | None = None,
) -> bytes:
    """An allowing AdmissionReview answer (`patch` from `encode_patch`); pod-tailor never denies a Pod."""
    return answer_with_tail(uid, answer_tail(patch=patch, warnings=warnings, audit=audit))


def bad_request_body(message: str, uid: str | None) -> bytes:
    """The body of a 400: an AdmissionReview carrying the uid when it was readable, else `detail`."""
    if uid is None:
        return orjson.dumps({"detail": message})
    status = {"code": 400, "reason": "BadRequest", "message": message}
    response = {"uid": uid, "allowed": True, "status": status}
    return orjson.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response})
