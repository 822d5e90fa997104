"""`pod-tailor dashboard -f DIR`: the dashboard over manifests, with no cluster, as `report -f` reads them.

The real command in its own process on a free port; the pages are read over HTTP.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import orjson
import pytest
import yaml

from tests.dashboard import demo
from tests.tools import free_port
from webhook.config.policies import bundled_policies
from webhook.dashboard.dryrun import DryRunSeen
from webhook.dashboard.fleet import Fleet
from webhook.dashboard.pages import workload_href
from webhook.report.manifests import manifests_report
from webhook.report.usage import without_profiles

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The demo's objects as a directory of manifests, and a dashboard reading it."""
    manifests = tmp_path_factory.mktemp("manifests")
    for number, obj in enumerate(demo.objects()):
        (manifests / f"{number:02d}-{obj['kind'].lower()}.yaml").write_text(yaml.safe_dump(obj))
    store = demo.write_store(tmp_path_factory.mktemp("store") / "profiles.json")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "webhook", "dashboard", "-f", str(manifests), "--port", str(port),
         "--profiles-path", str(store), "--refresh-seconds", "3600"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the dashboard did not become ready in 60 s"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_it_serves_the_manifests_workloads_without_a_cluster(offline: str) -> None:
    body = httpx.get(offline + "/api/namespaces", timeout=10).json()
    assert {n["name"] for n in body["namespaces"]} >= {"shop", "trial"}
    page = httpx.get(offline + "/", timeout=10)
    assert page.status_code == 200
    assert "manifests " in page.text  # the source line says what was read


def test_a_workload_page_of_the_manifests_shows_its_profile(offline: str) -> None:
    page = httpx.get(offline + "/namespaces/shop/Deployment/web", timeout=10)
    assert page.status_code == 200
    assert "350m" in page.text  # the demo store's profile of web/app


def test_same_named_workloads_of_two_files_are_two_pages(tmp_path: Path) -> None:
    """Each keeps its own document and link (`?source=FILE`); without the file, the name finds one."""
    for name, replicas in (("prod.yaml", 3), ("staging.yaml", 1)):
        web = next(o for o in demo.objects() if (o["kind"], o["metadata"]["name"]) == ("Deployment", "web"))
        (tmp_path / name).write_text(yaml.safe_dump({**web, "spec": {**web["spec"], "replicas": replicas}}))
    report = manifests_report([str(tmp_path)], policies=bundled_policies(), usage=without_profiles("none"))
    fleet = Fleet.of(report, profiled=frozenset(), dry_run=DryRunSeen("24h"))
    prod, staging = report.workloads
    assert (prod.source, staging.source) == (str(tmp_path / "prod.yaml"), str(tmp_path / "staging.yaml"))
    assert fleet.find("shop", "Deployment", "web", staging.source) is staging
    assert fleet.find("shop", "Deployment", "web") in (prod, staging)
    assert [orjson.loads(fleet.workload_json(w))["replicas"] for w in (prod, staging)] == [3, 1]
    assert workload_href(staging).endswith("/shop/Deployment/web?source=" + quote(staging.source, safe=""))
