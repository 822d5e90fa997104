"""The webhook over real HTTPS, called as the API server calls it: POST /mutate?timeout=10s, CA verified."""

from __future__ import annotations

import copy
import ssl
import subprocess
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
import kubernetes_validate
import orjson
import pytest

from tests.reviews import review_for
from tests.server.answers import SAMPLE_UID, answer_of, metric, patch_of
from tests.server.conftest import RunningServer, corpus_files, make_tls_files, running_server
from tests.shared import corpus_params, needs_shared
from tests.tools import require_programs
from webhook.core.model.profile import Evidence, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import ProfileSnapshot


class TestEveryCorpusReview:
    @pytest.mark.parametrize("path", corpus_params(corpus_files(), ids=lambda p: p.stem))
    def test_the_answer_echoes_the_uid_and_its_patch_applies_and_validates(
        self, server: RunningServer, path: Path
    ) -> None:
        review = orjson.loads(path.read_bytes())
        answer = answer_of(server.mutate(path.read_bytes()), review["request"]["uid"])
        patched = jsonpatch.apply_patch(review["request"]["object"], patch_of(answer))
        kubernetes_validate.validate(patched, "1.30", strict=True)

    @needs_shared
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
        (promtool,) = require_programs("promtool", package="prometheus")
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


class TestTheVerdictCacheThroughTheServer:
    def test_a_swapped_profile_snapshot_changes_the_next_replicas_answer(self, tmp_path: Path) -> None:
        """Two replicas fill the cache; a profile swap must reach the third.

        Kills: dropping the profile snapshot from the verdict cache's key (`cache.VerdictCache.key`
        comparing only the cluster snapshot), which answered the third replica with the policy's 100m.
        """
        key = WorkloadKey("shop", "Deployment", "guestbook-ui")
        evidence = Evidence("14d", 4032, 336.0, 95.0, 0.15, 0.9)
        measured = {"guestbook-ui": Recommendation(Decimal("0.321"), Decimal(300 * 2**20), evidence)}
        with running_server(tmp_path) as running:

            def cpu_request(uid: str) -> object:
                ops = patch_of(answer_of(running.mutate(review_for(namespace="shop", uid=uid)), uid))
                patched = jsonpatch.apply_patch(review_for(namespace="shop")["request"]["object"], ops)
                return patched["spec"]["containers"][0]["resources"]["requests"]["cpu"]

            assert cpu_request("one") == cpu_request("two") == "100m"  # the second from the cache
            assert metric(running, "pod_tailor_verdict_cache_lookups_total", result="hit") == 1
            running.state.swap_profiles(ProfileSnapshot({key: measured}, taken_at=time.time(), source="test"))
            assert cpu_request("three") == "321m"
