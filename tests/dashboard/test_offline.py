"""`pod-tailor dashboard -f DIR`: the dashboard over manifests, with no cluster, as `report -f` reads them.

The real command in its own process on a free port; the pages are read over HTTP.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from tests.cluster.helpers import free_port
from tests.dashboard import demo

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
