"""Bad input and our own faults over HTTPS: 400s with clear messages, 413s, and never a 5xx."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.reviews import review_for
from tests.server.answers import SAMPLE_UID, answer_of, metric, patch_of
from tests.server.conftest import MUTATE, RunningServer, running_server


def _review(**request_changes: Any) -> bytes:
    review = review_for(namespace="shop", uid="0c4c6e9e-uid-0001")
    for key, value in request_changes.items():
        if value is _DROP:
            del review["request"][key]
        else:
            review["request"][key] = value
    return orjson.dumps(review)


def _object(**changes: Any) -> bytes:
    review = review_for(namespace="shop", uid="0c4c6e9e-uid-0001")
    pod = review["request"]["object"]
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = pod
        for key in parents:
            node = node[key]
        node[last] = value
    return orjson.dumps(review)


_DROP = object()
_UID = "0c4c6e9e-uid-0001"

MALFORMED: list[tuple[str, bytes, str | None, str]] = [
    ("empty body", b"", None, "not JSON"),
    ("not json", b"<xml/>", None, "not JSON"),
    ("invalid utf-8", b'{"kind": "\xff"}', None, "not JSON"),
    ("truncated", _review()[:200], None, "not JSON"),
    ("a json list", b"[]", None, "JSON list"),
    ("a json string", b'"AdmissionReview"', None, "JSON str"),
    ("deeply nested", b"[" * 5000 + b"]" * 5000, None, "not JSON"),
    ("empty object", b"{}", None, "expected kind AdmissionReview"),
    ("v1beta1", orjson.dumps({**review_for(uid=_UID), "apiVersion": "admission.k8s.io/v1beta1"}), _UID,
     "apiVersion"),
    ("no request", orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}), None,
     "no request"),
    ("request not an object", orjson.dumps({**review_for(), "request": [1]}), None, "no request"),
    ("no uid", _review(uid=_DROP), None, "uid"),
    ("empty uid", _review(uid=""), None, "uid"),
    ("numeric uid", _review(uid=42), None, "uid"),
    ("no kind", _review(kind=_DROP), _UID, "request.kind"),
    ("kind a string", _review(kind="Pod"), _UID, "request.kind"),
    ("no operation", _review(operation=_DROP), _UID, "operation"),
    ("operation not a string", _review(operation=["CREATE"]), _UID, "operation"),
    ("dryRun a string", _review(dryRun="true"), _UID, "dryRun"),
    ("no namespace", _review(namespace=_DROP), _UID, "namespace"),
    ("no object", _review(object=_DROP), _UID, "request.object"),
    ("object a list", _review(object=[]), _UID, "request.object"),
    ("object a Deployment", _object(kind="Deployment", apiVersion="apps/v1"), _UID, "not a v1/Pod"),
    ("no spec", _object(spec=None), _UID, "spec"),
    ("no containers", _object(spec__containers=[]), _UID, "containers"),
    ("containers not a list", _object(spec__containers={"name": "app"}), _UID, "containers"),
    ("metadata a string", _object(metadata="x"), _UID, "metadata"),
]


class TestMalformedBodies:
    @pytest.mark.parametrize(
        ("body", "uid", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
    )
    def test_a_malformed_body_gets_a_400_with_a_clear_message(
        self, server: RunningServer, body: bytes, uid: str | None, message: str
    ) -> None:
        response = server.mutate(body)
        assert response.status_code == 400
        document = response.json()
        if uid is None:
            assert message in document["detail"]
        else:
            assert document["kind"] == "AdmissionReview"
            assert document["response"]["uid"] == uid
            assert message in document["response"]["status"]["message"]

    def test_a_body_over_3_mib_is_refused_with_413(self, server: RunningServer) -> None:
        response = server.mutate(b" " * (3 * 1024 * 1024 + 1))
        assert response.status_code == 413

    def test_a_chunked_body_over_3_mib_is_refused_with_413(self, server: RunningServer) -> None:
        def chunks() -> Any:
            for _ in range(4):
                yield b" " * (1024 * 1024)

        response = server.client().post(MUTATE, content=chunks())
        assert response.status_code == 413

    def test_a_body_of_just_3_mib_is_read(self, server: RunningServer) -> None:
        review = review_for(namespace="shop")
        body = orjson.dumps(review)
        body = body + b" " * (3 * 1024 * 1024 - len(body))
        answer_of(server.mutate(body), review["request"]["uid"])

    def test_a_get_on_mutate_is_not_a_server_error(self, server: RunningServer) -> None:
        assert server.default_client.get(MUTATE).status_code == 405


class TestInternalFaults:
    """Our own bugs, simulated by engines that fail: the Pod must get through unchanged."""

    @staticmethod
    def crashing_engine(pod: Any, **_: Any) -> Any:
        raise KeyError("containers")

    def test_an_engine_error_lets_the_pod_through_with_a_warning(self, tmp_path: Path) -> None:
        with running_server(tmp_path, engine=self.crashing_engine) as running:
            uid = SAMPLE_UID
            answer = answer_of(running.mutate(review_for(namespace="shop")), uid)
            assert patch_of(answer) == []
            assert any("internal error" in w for w in answer["warnings"])
            assert metric(running, "pod_tailor_errors_total", reason="engine_fault") == 1

    def test_a_patch_that_would_not_apply_is_never_sent(self, tmp_path: Path) -> None:
        from webhook.core.engine import decide
        from webhook.core.model.decision import Decision

        def broken_patch(pod: Any, **kwargs: Any) -> Any:
            settings, decision = decide(pod, **kwargs)
            bad = {"op": "add", "path": "/spec/no/such/parent", "value": 1}
            return settings, Decision(ops=(*decision.ops, bad), injections=decision.injections,
                                      policy=decision.policy, workload=decision.workload)

        with running_server(tmp_path, engine=broken_patch) as running:
            uid = SAMPLE_UID
            answer = answer_of(running.mutate(review_for(namespace="shop")), uid)
            assert patch_of(answer) == []
            assert metric(running, "pod_tailor_errors_total", reason="patch_does_not_apply") == 1
