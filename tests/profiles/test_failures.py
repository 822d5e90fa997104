"""Prometheus down, slow, wrong or partial: clear errors, and the last profiles stay in use."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import scenarios
from conftest import History, test_settings

from tests.tools import free_port
from webhook.commands import main
from webhook.core.model.profile import ContainerProfile
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.build import build_profiles
from webhook.profiles.prometheus import Prometheus, PrometheusError
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry
from webhook.refreshers.profiles import ProfileRefresher
from webhook.refreshers.state import State


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A socket that accepts connections and never answers (a hung Prometheus)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def _build(url: str, **settings: object) -> None:
    prom = Prometheus(url, timeout=settings.pop("timeout", 5.0))  # type: ignore[arg-type]
    try:
        build_profiles(prom, test_settings(namespaces=("shop",), **settings), end=scenarios.END)
    finally:
        prom.close()


class TestClearErrors:
    def test_an_unreachable_prometheus_is_named_with_its_url(self) -> None:
        url = f"http://127.0.0.1:{free_port()}"
        with pytest.raises(PrometheusError, match=f"cannot reach Prometheus at {url}"):
            _build(url)

    def test_a_hung_prometheus_times_out_with_the_limit_in_the_message(self, silent_server: str) -> None:
        started = time.monotonic()
        with pytest.raises(PrometheusError, match=r"no answer within 0\.5s"):
            _build(silent_server, timeout=0.5)
        assert time.monotonic() - started < 10

    def test_a_query_prometheus_refuses_carries_its_error_type_and_message(self, history: History) -> None:
        prom = Prometheus(history.prometheus.url)
        with pytest.raises(PrometheusError, match=r"HTTP 400, bad_data: .*parse error"):
            prom.instant("rate(container_cpu_usage_seconds_total[5m]", at=scenarios.END)
        prom.close()

    def test_something_that_is_not_the_prometheus_api_is_recognised(self, history: History) -> None:
        with pytest.raises(PrometheusError, match="not a Prometheus API answer"):
            _build(history.prometheus.url + "/nothing-here")

    def test_partial_data_is_noticed_from_prometheus_warnings(self, history: History) -> None:
        prom = Prometheus(history.prometheus.url)
        result = build_profiles(prom, test_settings(namespaces=("partial",)), end=scenarios.END)
        prom.close()
        assert result.warnings
        assert "remote_read" in result.warnings[0]
        assert "PARTIAL" in result.document.source


def _seed(path: Path) -> ProfileDocument:
    from decimal import Decimal

    from webhook.core.model.profile import Evidence, Recommendation

    rec: ContainerProfile = Recommendation(
        Decimal("0.3"), Decimal(2**28), Evidence("14d", 4000, 300.0, 95.0, 0.15, 0.9)
    )
    key = WorkloadKey("shop", "Deployment", "old")
    document = ProfileDocument({key: WorkloadEntry({"app": rec})}, 1000.0, "old")
    FileStore(path).write(document)
    return document


class TestLastSnapshotKept:
    def test_a_build_against_a_dead_prometheus_leaves_the_store_untouched(self, tmp_path: Path) -> None:
        store = tmp_path / "p.json"
        _seed(store)
        before = store.read_bytes()
        code = main(["profiles", "build", "--prometheus-url", f"http://127.0.0.1:{free_port()}",
                     "--profiles-path", str(store), "-q"])
        assert code == 3  # Prometheus could not be reached
        assert store.read_bytes() == before

    def test_partial_data_is_not_written_unless_allowed(
        self, history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store = tmp_path / "p.json"
        _seed(store)
        before = store.read_bytes()
        args = ["profiles", "build", "--prometheus-url", history.prometheus.url, "--namespace", "partial",
                "--step", "5m", "--rate-window", "10m", "--profiles-path", str(store), "-q"]
        assert main(args) == 1
        assert "partial data" in capsys.readouterr().err
        assert store.read_bytes() == before
        assert main([*args, "--allow-partial"]) == 0
        assert FileStore(store).read().namespaces() == {"shop", "partial"}

    def test_the_refresher_keeps_serving_the_last_profiles_while_prometheus_is_down(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "p.json"
        document = _seed(path)
        dead = f"http://127.0.0.1:{free_port()}"

        def build() -> ProfileDocument:
            prom = Prometheus(dead, timeout=2)
            try:
                return build_profiles(prom, test_settings(), end=scenarios.END).document
            finally:
                prom.close()

        state = State()
        refresher = ProfileRefresher(FileStore(path), interval=1, builder=build)
        asyncio.run(refresher.refresh_once(state))
        assert "cannot reach Prometheus" in state.notes["profiles"]
        assert state.profiles.for_workload(WorkloadKey("shop", "Deployment", "old")) == dict(
            document.workloads[WorkloadKey("shop", "Deployment", "old")].containers
        )
        # The age metric counts from the last good build, so it keeps growing during the outage.
        assert state.ages(now=5000.0)["profiles"] == 4000.0

    def test_a_damaged_store_keeps_the_snapshot_already_loaded(self, tmp_path: Path) -> None:
        path = tmp_path / "p.json"
        _seed(path)
        state = State()
        refresher = ProfileRefresher(FileStore(path), interval=1)
        assert asyncio.run(refresher.refresh_once(state)) is True
        loaded = state.profiles
        path.write_text("{half a docu")
        assert asyncio.run(refresher.refresh_once(state)) is False
        assert state.profiles is loaded
        assert "not valid JSON" in state.notes["profiles"]
        _seed(path)
        assert asyncio.run(refresher.refresh_once(state)) is True
        assert "profiles" not in state.notes

    def test_an_unchanged_store_is_not_read_again(self, tmp_path: Path) -> None:
        path = tmp_path / "p.json"
        _seed(path)
        state = State()
        refresher = ProfileRefresher(FileStore(path), interval=1)
        assert asyncio.run(refresher.refresh_once(state)) is True
        assert asyncio.run(refresher.refresh_once(state)) is False

    def test_the_background_task_marks_readiness_after_its_first_round_and_stops_on_cancel(
        self, tmp_path: Path
    ) -> None:
        _seed(tmp_path / "p.json")
        state = State()

        async def scenario() -> None:
            refresher = ProfileRefresher(FileStore(tmp_path / "p.json"), interval=0.05)
            task = asyncio.create_task(refresher.run(state))
            for _ in range(100):
                await asyncio.sleep(0.01)
                if state.profiles.taken_at:
                    break
            assert "profiles" not in state.pending
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())
        assert state.profiles.taken_at == 1000.0
