"""Checking answers the way the API server reads them, and reading the server's metrics."""

from __future__ import annotations

import base64
import re
from typing import Any

import httpx
import orjson
from prometheus_client.parser import text_string_to_metric_families

from tests.reviews import review_for
from tests.server.conftest import RunningServer

SAMPLE_UID = review_for()["request"]["uid"]
QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def answer_of(response: httpx.Response, uid: str) -> dict[str, Any]:
    """The `response` of a well-formed AdmissionReview answer for `uid`."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    review = response.json()
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    answer: dict[str, Any] = review["response"]
    assert answer["uid"] == uid
    assert answer["allowed"] is True
    for warning in answer.get("warnings", []):
        assert len(warning) < 120
    assert sum(len(w) for w in answer.get("warnings", [])) <= 4096
    for key in answer.get("auditAnnotations", {}):
        assert QUALIFIED_NAME.match(key)
        assert len(key) <= 63
    return answer


def patch_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    if "patch" not in answer:
        assert "patchType" not in answer
        return []
    assert answer["patchType"] == "JSONPatch"
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(answer["patch"], validate=True))
    return ops


def metric(server: RunningServer, name: str, **labels: str) -> float:
    text = server.default_client.get("/metrics").text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0
