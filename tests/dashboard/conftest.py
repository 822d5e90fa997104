"""A running dashboard over the shared fake API server, a profile store and a real Prometheus; a browser.

Module-scoped: one cluster, one server and one Chromium serve every test of a module.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

_TESTS = Path(__file__).resolve().parents[1]
for _path in (_TESTS, _TESTS / "profiles"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from kubefake import FakeKube  # noqa: E402
from promserver import PromServer, backfill  # noqa: E402
from selenium.webdriver import Chrome  # noqa: E402

from tests.dashboard import demo  # noqa: E402
from tests.dashboard.browser import Shots, start_browser  # noqa: E402
from tests.tools import free_port  # noqa: E402
from webhook.dashboard.app import create_dashboard  # noqa: E402
from webhook.dashboard.fleet import FleetConfig, FleetKeeper, load_fleet  # noqa: E402
from webhook.profiles.prometheus import Prometheus  # noqa: E402
from webhook.profiles.store import FileStore  # noqa: E402


@dataclass(frozen=True)
class Dashboard:
    url: str
    kube: FakeKube
    kubeconfig: Path
    store: Path
    keeper: FleetKeeper


@pytest.fixture(scope="module")
def demo_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeKube, Path]]:
    with FakeKube() as kube:
        for obj in demo.objects():
            kube.put(obj)
        yield kube, kube.write_kubeconfig(tmp_path_factory.mktemp("kube") / "kubeconfig")


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.write_store(tmp_path_factory.mktemp("store") / "profiles.json")


@pytest.fixture(scope="module")
def dry_run_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromServer]:
    """A real Prometheus holding the webhook's dry-run counters of the last three hours."""
    root = tmp_path_factory.mktemp("prometheus")
    with (root / "dry-run.om").open("w") as out:
        demo.write_dry_run_history(out, end=time.time())
    backfill(root / "dry-run.om", root / "data")
    with PromServer(root / "data") as server:
        yield server


@contextlib.contextmanager
def serving(keeper: FleetKeeper, *, wait: str = "/readyz") -> Iterator[str]:
    """The dashboard under uvicorn on a free loopback port, once `wait` answers 200 (by default: once
    its first fleet is loaded)."""
    port = free_port()
    config = uvicorn.Config(
        create_dashboard(keeper),
        host="127.0.0.1",
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}{wait}", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError(f"the dashboard did not become ready: {keeper.error}")
            time.sleep(0.05)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture(scope="module")
def dashboard(
    demo_cluster: tuple[FakeKube, Path], demo_store: Path, dry_run_prometheus: PromServer
) -> Iterator[Dashboard]:
    kube, kubeconfig = demo_cluster
    config = FleetConfig(
        store=FileStore(demo_store),
        kubeconfig=str(kubeconfig),
        prometheus=lambda: Prometheus(dry_run_prometheus.url, timeout=30),
    )
    keeper = FleetKeeper(lambda: load_fleet(config), interval=3600)
    with serving(keeper) as url:
        yield Dashboard(url, kube, kubeconfig, demo_store, keeper)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chrome]:
    driver = start_browser(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Shots:
    """Where the screenshots go: the test run's output directory, and the --screenshots directory."""
    asked = pytestconfig.getoption("screenshots")
    return Shots(tmp_path_factory.getbasetemp() / "screenshots", Path(asked) if asked else None)
