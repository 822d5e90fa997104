"""Malformed and mutated AdmissionReviews: never a 5xx, and every answer is a 400 or a valid review.

Most examples run in-process against the ASGI app (fast); a smaller batch goes over real TLS.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.conftest import (
    MUTATE,
    NAMESPACE_LABELS,
    RunningServer,
    corpus_files,
    labelled_state,
    running_server,
)
from tests.shared import SAMPLE_REVIEW
from webhook.admission import VerdictCache, admit, default_engine
from webhook.config.settings import Settings
from webhook.core.model.inputs import decision_inputs
from webhook.core.model.pod import malformed
from webhook.refreshers.state import State
from webhook.server.app import create_app

# Without ../shared the fuzzing starts from the bundled sample review alone.
REVIEWS: list[dict[str, Any]] = [orjson.loads(p.read_bytes()) for p in corpus_files() or [SAMPLE_REVIEW]]
NAMESPACES = ["default", *NAMESPACE_LABELS]  # every mode, a bad mode label and an unknown policy

json_scalars = (
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
# Keys the API server and the engine care about, so mutations hit interesting places more often.
KNOWN_KEYS = st.sampled_from([
    "uid", "kind", "operation", "namespace", "object", "dryRun", "subResource", "metadata", "spec",
    "containers", "initContainers", "resources", "requests", "limits", "cpu", "memory", "ports",
    "containerPort", "readinessProbe", "livenessProbe", "startupProbe", "lifecycle", "preStop", "labels",
    "annotations", "ownerReferences", "terminationGracePeriodSeconds", "name", "httpGet", "restartPolicy",
    "pod-tailor.io/skip", "pod-tailor.io/exclude", "kubernetes.io/limit-ranger",
])


def _containers(node: Any) -> Iterator[tuple[Any, Any]]:
    """Every (container, key) position in a JSON tree."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield node, key
            yield from _containers(value)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield node, index
            yield from _containers(value)


@st.composite
def mutated_reviews(draw: st.DrawFn) -> dict[str, Any]:
    """A corpus review with a few random edits: values replaced, keys dropped or added."""
    review: dict[str, Any] = orjson.loads(orjson.dumps(draw(st.sampled_from(REVIEWS))))
    review["request"]["namespace"] = draw(st.sampled_from(NAMESPACES))
    review["request"]["dryRun"] = draw(st.booleans())
    for _ in range(draw(st.integers(1, 4))):
        positions = list(_containers(review))
        if not positions:
            break
        parent, key = positions[draw(st.integers(0, len(positions) - 1))]  # cheaper than sampled_from
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "replace":
            parent[key] = draw(json_values)
        elif action == "drop":
            del parent[key]
        elif isinstance(parent, dict):
            parent[draw(KNOWN_KEYS | st.text(max_size=8))] = draw(json_values)
        else:
            parent.append(draw(json_values))
    return review


@st.composite
def bodies(draw: st.DrawFn) -> tuple[bytes, str | None]:
    """A request body and the uid it carries (None when it carries none readable)."""
    body = orjson.dumps(draw(mutated_reviews()))
    corruption = draw(st.sampled_from(["none", "none", "none", "truncate", "flip"]))
    if corruption == "truncate":
        body = body[: draw(st.integers(0, len(body)))]
    elif corruption == "flip":
        index = draw(st.integers(0, len(body) - 1))
        body = body[:index] + bytes([draw(st.integers(0, 255))]) + body[index + 1 :]
    return body, _uid_in(body)


def _uid_in(body: bytes) -> str | None:
    """The uid as the final bytes carry it (a flipped byte may have changed it)."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    request = document.get("request") if isinstance(document, dict) else None
    uid = request.get("uid") if isinstance(request, dict) else None
    return uid if isinstance(uid, str) else None


def check(response: httpx.Response, body: bytes, uid: str | None) -> None:
    """The invariant: no 5xx; a 400, or a valid allowing AdmissionReview whose patch applies."""
    assert response.status_code < 500, response.text
    if response.status_code == 400:
        document = response.json()
        if "response" in document:
            assert document["response"]["uid"] == uid
        return
    assert response.status_code == 200, response.text
    review = response.json()
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    answer = review["response"]
    assert answer["uid"] == uid
    assert answer["allowed"] is True
    assert all(len(w) < 120 for w in answer.get("warnings", []))
    assert sum(len(w) for w in answer.get("warnings", [])) <= 4096
    if "patch" in answer:
        assert answer["patchType"] == "JSONPatch"
        ops = orjson.loads(base64.b64decode(answer["patch"], validate=True))
        pod = orjson.loads(body)["request"]["object"]
        orjson.dumps(jsonpatch.apply_patch(pod, ops))  # applies, and the result is still JSON


class InProcess:
    """The ASGI app called through httpx without sockets, on one event loop kept for the module."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        transport = httpx.ASGITransport(app=create_app(Settings(), labelled_state()))
        self.client = httpx.AsyncClient(transport=transport, base_url="https://webhook")

    def post(self, body: bytes) -> httpx.Response:
        request = self.client.post(MUTATE, content=body, headers={"Content-Type": "application/json"})
        return self.loop.run_until_complete(request)

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()


@pytest.fixture(scope="module")
def in_process() -> Iterator[InProcess]:
    app = InProcess()
    yield app
    app.close()


FUZZ = settings(
    max_examples=2000, deadline=None, derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture
    ],
)


class TestFuzz:
    @FUZZ
    @given(case=bodies())
    def test_mutated_reviews_in_process_never_get_a_5xx_and_keep_their_uid(
        self, in_process: InProcess, case: tuple[bytes, str | None]
    ) -> None:
        body, uid = case
        check(in_process.post(body), body, uid)

    def test_mutated_reviews_over_tls_never_get_a_5xx_and_keep_their_uid(self, tmp_path: Path) -> None:
        with running_server(tmp_path) as running:
            self._over_tls(running)

    @staticmethod
    def _over_tls(running: RunningServer) -> None:
        @settings(max_examples=300, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(case=bodies())
        def over_tls(case: tuple[bytes, str | None]) -> None:
            body, uid = case
            check(running.mutate(body), body, uid)

        over_tls()


POD_FIELDS = st.sampled_from([
    ("metadata",), ("spec",), ("kind",), ("apiVersion",),
    *(("metadata", key) for key in ("name", "generateName", "namespace", "labels", "annotations",
                                    "ownerReferences")),
    *(("spec", key) for key in ("containers", "initContainers", "restartPolicy", "volumes")),
    *(("container", key) for key in ("name", "ports", "resources", "readinessProbe", "livenessProbe",
                                     "startupProbe", "lifecycle", "restartPolicy", "env", "image")),
])


@st.composite
def reviews_with_an_odd_pod_field(draw: st.DrawFn) -> bytes:
    """A corpus review whose Pod has one field replaced by any JSON value, or dropped."""
    review: dict[str, Any] = orjson.loads(orjson.dumps(draw(st.sampled_from(REVIEWS))))
    pod = review["request"]["object"]
    where, *key = draw(POD_FIELDS)
    if where == "container":
        parent = draw(st.sampled_from(pod["spec"]["containers"]))
    else:
        parent = pod if not key else pod.setdefault(where, {})
    name = key[0] if key else where
    if draw(st.booleans()):
        parent.pop(name, None)
    else:
        parent[name] = draw(json_values)
    return orjson.dumps(review)


@pytest.fixture(scope="module")
def warm() -> tuple[State, VerdictCache]:
    """A cache holding every corpus Pod decided in every namespace."""
    state, cache = labelled_state(), VerdictCache(100_000)
    for review in REVIEWS:
        for namespace in NAMESPACES:
            copy = {**review, "request": {**review["request"], "namespace": namespace}}
            admit(orjson.dumps(copy), cluster=state.cluster, profiles=state.profiles, engine=default_engine(),
                  cache=cache)
    return state, cache


class TestVerdictCacheUnderFuzz:
    """The cache answers a Pod from its decision inputs alone, so it must never change an answer."""

    @settings(max_examples=1500, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(body=reviews_with_an_odd_pod_field() | bodies().map(lambda case: case[0]))
    def test_a_mutated_review_gets_the_same_answer_from_a_warm_cache_as_without_one(
        self, warm: tuple[State, VerdictCache], body: bytes
    ) -> None:
        state, cache = warm
        engine = default_engine()
        cached = admit(body, cluster=state.cluster, profiles=state.profiles, engine=engine, cache=cache)
        fresh = admit(body, cluster=state.cluster, profiles=state.profiles, engine=engine, cache=None)
        assert (cached.status, cached.body, cached.outcome) == (fresh.status, fresh.body, fresh.outcome)

    @settings(max_examples=1500, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(review=reviews_with_an_odd_pod_field().map(orjson.loads) | mutated_reviews())
    def test_a_pod_is_judged_the_same_through_its_decision_inputs(self, review: dict[str, Any]) -> None:
        request = review.get("request")
        pod = request.get("object") if isinstance(request, dict) else review
        assert malformed(decision_inputs(pod)) == malformed(pod)
