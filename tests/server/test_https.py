"""The webhook over real HTTPS, called as the API server calls it: POST /mutate?timeout=10s, CA verified."""

from __future__ import annotations

import base64
import copy
import re
import shutil
import ssl
import subprocess
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
import kubernetes_validate
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.conftest import (
    MUTATE,
    RunningServer,
    corpus_files,
    make_tls_files,
    review_for,
)

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


class TestEveryCorpusReview:
    @pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.stem)
    def test_the_answer_echoes_the_uid_and_its_patch_applies_and_validates(
        self, server: RunningServer, path: Path
    ) -> None:
        review = orjson.loads(path.read_bytes())
        answer = answer_of(server.mutate(path.read_bytes()), review["request"]["uid"])
        patched = jsonpatch.apply_patch(review["request"]["object"], patch_of(answer))
        kubernetes_validate.validate(patched, "1.30", strict=True)

    def test_the_corpus_is_all_there(self) -> None:
        assert len(corpus_files()) == 132


class TestNamespaceModes:
    def test_an_enforce_namespace_gets_the_patch(self, server: RunningServer) -> None:
        answer = answer_of(server.mutate(review_for(namespace="shop")), SAMPLE_UID)
        assert patch_of(answer)
        assert answer["auditAnnotations"]["mode"] == "enforce"
        assert "requests.cpu" in answer["auditAnnotations"]["injected"]

    def test_an_unknown_namespace_gets_the_default_mode_enforce(self, server: RunningServer) -> None:
        answer = answer_of(server.mutate(review_for(namespace="brand-new")), SAMPLE_UID)
        assert patch_of(answer)

    def test_a_dry_run_namespace_gets_warnings_and_audit_annotations_but_no_patch(
        self, server: RunningServer
    ) -> None:
        enforced = patch_of(answer_of(server.mutate(review_for(namespace="shop")), SAMPLE_UID))
        answer = answer_of(server.mutate(review_for(namespace="trial")), SAMPLE_UID)
        assert patch_of(answer) == []
        warnings = answer["warnings"]
        assert warnings[0].startswith("pod-tailor dry-run")
        would = [w for w in warnings if w.startswith("pod-tailor would set")]
        assert would
        assert len(would) >= len({op["path"] for op in enforced}) - 1
        assert answer["auditAnnotations"]["mode"] == "dry-run"
        assert "requests.cpu" in answer["auditAnnotations"]["would-inject"]

    @pytest.mark.parametrize("namespace", ["legacy", "unlabelled", "typo"])
    def test_an_off_or_unlabelled_or_mislabelled_namespace_is_left_alone(
        self, server: RunningServer, namespace: str
    ) -> None:
        answer = answer_of(server.mutate(review_for(namespace=namespace)), SAMPLE_UID)
        assert patch_of(answer) == []
        assert "warnings" not in answer

    def test_an_unknown_policy_falls_back_to_default_and_says_so(self, server: RunningServer) -> None:
        answer = answer_of(server.mutate(review_for(namespace="strict")), SAMPLE_UID)
        assert patch_of(answer)
        assert any("no-such-policy" in w for w in answer["warnings"])


class TestServerSideDryRun:
    def test_request_dry_run_gets_the_same_patch_as_a_real_create(self, server: RunningServer) -> None:
        uid = SAMPLE_UID
        real = patch_of(answer_of(server.mutate(review_for(namespace="shop")), uid))
        dry = patch_of(answer_of(server.mutate(review_for(namespace="shop", dry_run=True)), uid))
        assert dry == real != []

    def test_request_dry_run_does_not_count_injections_as_applied(self, server: RunningServer) -> None:
        applied = metric(server, "pod_tailor_injections_total", field="requests.cpu", applied="true")
        not_applied = metric(server, "pod_tailor_injections_total", field="requests.cpu", applied="false")
        server.mutate(review_for(namespace="shop", dry_run=True))
        assert metric(server, "pod_tailor_injections_total", field="requests.cpu", applied="true") == applied
        assert metric(
            server, "pod_tailor_injections_total", field="requests.cpu", applied="false"
        ) == not_applied + 1

    def test_a_real_create_counts_injections_as_applied(self, server: RunningServer) -> None:
        applied = metric(server, "pod_tailor_injections_total", field="requests.cpu", applied="true")
        server.mutate(review_for(namespace="shop"))
        after = metric(server, "pod_tailor_injections_total", field="requests.cpu", applied="true")
        assert after == applied + 1

    def test_request_dry_run_in_a_dry_run_namespace_still_warns(self, server: RunningServer) -> None:
        answer = answer_of(server.mutate(review_for(namespace="trial", dry_run=True)), SAMPLE_UID)
        assert patch_of(answer) == []
        assert answer["warnings"]


class TestOptOutsAndOtherRequests:
    def test_a_pod_labelled_skip_gets_no_patch(self, server: RunningServer) -> None:
        review = review_for(namespace="shop", labels={"pod-tailor.io/skip": "true"})
        answer = answer_of(server.mutate(review), review["request"]["uid"])
        assert patch_of(answer) == []

    @pytest.mark.parametrize(
        "change",
        [
            {"operation": "UPDATE"},
            {"operation": "DELETE", "object": None},
            {"operation": "CONNECT"},
            {"subResource": "status"},
            {"subResource": "ephemeralcontainers"},
            {"subResource": "binding", "object": {"kind": "Binding", "apiVersion": "v1"}},
            {"kind": {"group": "apps", "version": "v1", "kind": "Deployment"}, "object": {"spec": {}}},
            {"kind": {"group": "", "version": "v1", "kind": "Service"}, "object": {"spec": {"ports": []}}},
            {"kind": {"group": "example.com", "version": "v1", "kind": "Pod"}},
        ],
        ids=["update", "delete", "connect", "status", "ephemeral", "binding", "deployment", "service",
             "pod-of-another-group"],
    )
    def test_anything_but_a_pod_create_is_allowed_without_a_patch(
        self, server: RunningServer, change: dict[str, Any]
    ) -> None:
        review = review_for(namespace="shop")
        review["request"].update(change)
        answer = answer_of(server.mutate(review), review["request"]["uid"])
        assert patch_of(answer) == []
        assert "warnings" not in answer


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
        from tests.server.conftest import running_server

        with running_server(tmp_path, engine=self.crashing_engine) as running:
            uid = SAMPLE_UID
            answer = answer_of(running.mutate(review_for(namespace="shop")), uid)
            assert patch_of(answer) == []
            assert any("internal error" in w for w in answer["warnings"])
            assert metric(running, "pod_tailor_errors_total", reason="engine_fault") == 1

    def test_a_patch_that_would_not_apply_is_never_sent(self, tmp_path: Path) -> None:
        from tests.server.conftest import running_server
        from webhook.core.decision import Decision
        from webhook.core.engine import decide

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


class TestTls:
    def test_tls_1_2_is_accepted(self, server: RunningServer) -> None:
        context = server.tls_files.client_context()
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        with httpx.Client(base_url=server.base_url, verify=context) as client:
            assert client.get("/healthz").status_code == 200

    def test_the_listening_context_refuses_anything_below_tls_1_2(self, server: RunningServer) -> None:
        assert server.tls.listening.minimum_version == ssl.TLSVersion.TLSv1_2
        assert server.tls.current.context.minimum_version == ssl.TLSVersion.TLSv1_2

    def test_a_client_trusting_another_ca_is_refused(self, server: RunningServer, tmp_path: Path) -> None:
        other = make_tls_files(tmp_path)
        with httpx.Client(base_url=server.base_url, verify=other.client_context()) as client, \
                pytest.raises(httpx.ConnectError):
            client.get("/healthz")


class TestProbesAndMetrics:
    def test_healthz_says_ok(self, server: RunningServer) -> None:
        assert server.default_client.get("/healthz").json() == {"status": "ok"}

    def test_readyz_reports_certificate_and_snapshots(self, server: RunningServer) -> None:
        body = server.default_client.get("/readyz").json()
        assert body["ready"] is True
        assert body["certificate"]["notAfter"]
        assert "default" in body["policies"]

    def test_metrics_count_requests_by_outcome(self, server: RunningServer) -> None:
        before = metric(server, "pod_tailor_admission_requests_total", outcome="dry-run")
        server.mutate(review_for(namespace="trial"))
        assert metric(server, "pod_tailor_admission_requests_total", outcome="dry-run") == before + 1
        assert metric(server, "pod_tailor_admission_duration_seconds_count") > 0
        assert metric(server, "pod_tailor_snapshot_age_seconds", snapshot="cluster") == 0

    def test_metrics_pass_prometheus_own_lint(self, server: RunningServer) -> None:
        promtool = shutil.which("promtool")
        if promtool is None:
            pytest.skip("promtool is not installed (scripts/test installs Debian's prometheus)")
        server.mutate(review_for(namespace="shop"))
        text = server.default_client.get("/metrics").text
        checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                                 timeout=60)
        assert checked.returncode == 0, checked.stdout + checked.stderr

    def test_metrics_include_the_process_wide_registry(self, server: RunningServer) -> None:
        assert metric(server, "python_info") == 1  # from prometheus_client's default registry

    def test_metrics_count_bad_requests_as_errors(self, server: RunningServer) -> None:
        before = metric(server, "pod_tailor_errors_total", reason="bad_request")
        server.mutate(b"nonsense")
        assert metric(server, "pod_tailor_errors_total", reason="bad_request") == before + 1


class TestLogs:
    def test_each_admission_logs_uid_namespace_workload_and_outcome_but_no_contents(
        self, server: RunningServer, caplog: pytest.LogCaptureFixture
    ) -> None:
        from webhook.server.logs import JsonFormatter

        review = review_for(namespace="shop", uid="log-uid-1")
        container = review["request"]["object"]["spec"]["containers"][0]
        container["env"] = [{"name": "API_TOKEN", "value": "s3cr3t-value"}]
        with caplog.at_level("INFO", logger="pod_tailor.admission"):
            server.mutate(copy.deepcopy(review))
        records = [r for r in caplog.records if getattr(r, "uid", None) == "log-uid-1"]
        assert len(records) == 1
        line = orjson.loads(JsonFormatter().format(records[0]))
        assert line["namespace"] == "shop"
        assert line["workload"] == "shop/Deployment/guestbook-ui"
        assert line["outcome"] == "patched"
        assert "s3cr3t-value" not in JsonFormatter().format(records[0])
