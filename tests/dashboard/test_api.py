"""The dashboard's JSON beside its pages, and what it must never show."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.dashboard.conftest import Dashboard, serving
from webhook.dashboard.fleet import Fleet, FleetKeeper


def get(dashboard: Dashboard, path: str) -> httpx.Response:
    return httpx.get(dashboard.url + path, timeout=10)


class TestTheApi:
    def test_namespaces_are_the_pages_data(self, dashboard: Dashboard) -> None:
        body = get(dashboard, "/api/namespaces").json()
        assert [(n["name"], n["mode"], n["profiles"]) for n in body["namespaces"]] == [
            ("shop", "enforce", True),
            ("trial", "dry-run", False),
        ]
        assert body["cluster"]["withoutReadiness"] == {"now": 3, "after": 0}

    def test_a_namespace_carries_its_workloads_and_the_dry_run_counts(self, dashboard: Dashboard) -> None:
        body = get(dashboard, "/api/namespaces/trial").json()
        assert [w["name"] for w in body["workloads"]] == ["agent", "api"]
        assert body["dryRun"]["error"] is None
        assert abs(body["dryRun"]["pods"] - 40) <= 1

    def test_a_workload_is_the_reports_stable_document(self, dashboard: Dashboard) -> None:
        body = get(dashboard, "/api/namespaces/shop/Deployment/web").json()
        app = body["containers"][0]
        assert app["recommended"]["requests"] == {"cpu": "350m", "memory": "600Mi"}
        assert app["sources"]["requests.cpu"]["confidence"] == 0.93
        assert app["summary"]["cpu"]["p95"] == "330m"
        assert len(app["summary"]["cpuByHour"]) == 24

    @pytest.mark.parametrize(
        "path", ["/api/namespaces/nope", "/api/namespaces/shop/Deployment/nope", "/namespaces/shop/Pod/nope"]
    )
    def test_what_is_not_in_the_report_is_404(self, dashboard: Dashboard, path: str) -> None:
        assert get(dashboard, path).status_code == 404

    def test_the_whole_report_is_there_too(self, dashboard: Dashboard) -> None:
        body = get(dashboard, "/api/report").json()
        assert body["apiVersion"] == "pod-tailor.io/report/v1"
        assert len(body["workloads"]) == 5


class TestNothingSecretAndNothingAllowedIn:
    @pytest.mark.parametrize(
        "path",
        [
            "/",
            "/namespaces/trial",
            "/namespaces/trial/Deployment/api",
            "/api/report",
            "/api/namespaces/trial/Deployment/api",
        ],
    )
    def test_no_environment_value_ever_leaves(self, dashboard: Dashboard, path: str) -> None:
        text = get(dashboard, path).text
        assert "hunter2" not in text
        assert "DB_PASSWORD" not in text

    def test_pages_may_load_no_script_frame_or_outside_resource(self, dashboard: Dashboard) -> None:
        headers = get(dashboard, "/").headers
        assert "default-src 'none'" in headers["content-security-policy"]
        assert "script-src" not in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"


def test_while_the_cluster_cannot_be_read_pages_say_why_and_what_to_do_with_503() -> None:
    tries = []

    def unreachable() -> Fleet:
        tries.append(time.monotonic())
        raise RuntimeError("cannot reach the API server")

    keeper = FleetKeeper(unreachable, interval=3600, first_retry=0.05)
    with serving(keeper, wait="/healthz") as url:
        while len(tries) < 3:  # tried again soon, not after the hour a refresh waits
            time.sleep(0.01)
        page = httpx.get(url + "/", timeout=10)
        assert page.status_code == 503
        assert "<h1>Cannot read the cluster</h1>" in page.text
        assert "cannot reach the API server" in page.text
        assert "<code>kubectl get namespaces</code>" in page.text
        assert "<code>-f DIR</code>" in page.text
        assert '<meta http-equiv="refresh" content="1">' in page.text
        assert httpx.get(url + "/api/namespaces", timeout=10).json() == {
            "detail": "loading",
            "error": "RuntimeError: cannot reach the API server",
        }
        assert httpx.get(url + "/readyz", timeout=10).status_code == 503
