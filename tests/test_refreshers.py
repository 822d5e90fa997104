"""Background loops that never die and never lie: a bad source keeps the last good state and says so."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from webhook.cluster import metrics as cluster_metrics
from webhook.cluster.policy_source import PolicySource
from webhook.config.policies import bundled_policies
from webhook.core.model.profile import Evidence, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry
from webhook.refreshers.health import Health, supervise
from webhook.refreshers.profiles import ProfileRefresher
from webhook.refreshers.state import State

KEY = WorkloadKey("shop", "Deployment", "web")


def seed(path: Path) -> None:
    rec = Recommendation(Decimal("0.3"), Decimal(2**28), Evidence("14d", 4000, 300.0, 95.0, 0.15, 0.9))
    FileStore(path).write(ProfileDocument({KEY: WorkloadEntry({"app": rec})}, 1000.0, "seed"))


def loaded(tmp_path: Path) -> tuple[Path, State, ProfileRefresher]:
    path = tmp_path / "profiles.json"
    seed(path)
    state, refresher = State(), ProfileRefresher(FileStore(path), interval=1)
    assert asyncio.run(refresher.refresh_once(state)) is True
    assert state.health.entry("profiles").up
    return path, state, refresher


CORRUPTIONS = {
    "workloads is a list": lambda doc: {**doc, "workloads": []},
    "a workload is a list": lambda doc: {**doc, "workloads": {"shop/Deployment/web": []}},
    "evidence is a list": lambda doc: {**doc, "workloads": {"shop/Deployment/web": {"containers": {
        "app": {"cpu": "1", "memory": "1Gi", "evidence": []}}}}},
    "cpu is NaN": lambda doc: {**doc, "workloads": {"shop/Deployment/web": {"containers": {
        "app": {**doc["workloads"]["shop/Deployment/web"]["containers"]["app"], "cpu": "NaN"}}}}},
    "samples overflow": lambda doc: {**doc, "workloads": {"shop/Deployment/web": {"containers": {
        "app": {**doc["workloads"]["shop/Deployment/web"]["containers"]["app"],
                "evidence": {"window": "1d", "samples": 1e308 * 10, "hours": 1, "cpuPercentile": 95,
                             "memoryMargin": 0.1, "confidence": 1}}}}}},
}


class TestAProfileStoreInABadShape:
    @pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=list(CORRUPTIONS))
    def test_the_last_good_profiles_stay_and_the_failure_is_reported(
        self, tmp_path: Path, corrupt: Any
    ) -> None:
        path, state, refresher = loaded(tmp_path)
        good = state.profiles
        path.write_text(json.dumps(corrupt(json.loads(path.read_text())), allow_nan=True))
        assert asyncio.run(refresher.refresh_once(state)) is False
        assert state.profiles is good
        health = state.health.entry("profiles")
        assert not health.up
        assert "keeping the last profiles" in (health.error or "")
        seed(path)
        assert asyncio.run(refresher.refresh_once(state)) is True
        assert state.health.entry("profiles").up

    def test_a_deleted_store_is_a_source_unavailable_not_no_profiles(self, tmp_path: Path) -> None:
        path, state, refresher = loaded(tmp_path)
        good = state.profiles
        path.unlink()
        assert asyncio.run(refresher.refresh_once(state)) is False
        assert state.profiles is good
        assert "source unavailable, keeping the last 1 workloads" in state.notes["profiles"]
        assert not state.health.entry("profiles").up

    def test_a_store_never_built_is_simply_empty(self, tmp_path: Path) -> None:
        state, refresher = State(), ProfileRefresher(FileStore(tmp_path / "none.json"), interval=1)
        assert asyncio.run(refresher.refresh_once(state)) is True
        assert state.health.entry("profiles").up

    def test_failures_in_a_row_back_off_up_to_eight_intervals(self, tmp_path: Path) -> None:
        path, state, refresher = loaded(tmp_path)
        path.write_text("[]")
        waits = []
        for _ in range(6):
            asyncio.run(refresher.refresh_once(state))
            waits.append(refresher.next_wait())
        assert waits == [1, 2, 4, 8, 8, 8]
        seed(path)
        asyncio.run(refresher.refresh_once(state))
        assert refresher.next_wait() == 1

    def test_a_builder_that_raises_anything_keeps_the_loop_going(self, tmp_path: Path) -> None:
        path = tmp_path / "profiles.json"
        seed(path)

        def build() -> ProfileDocument:
            raise AttributeError("'list' object has no attribute 'items'")

        state = State()
        refresher = ProfileRefresher(FileStore(path), interval=1, builder=build)
        assert asyncio.run(refresher.refresh_once(state)) is True  # the store still loads
        assert "AttributeError" in state.notes["profiles"]
        assert not state.health.entry("profiles").up


class Crashing:
    name = "crashing"

    def __init__(self, crashes: int) -> None:
        self.crashes, self.runs = crashes, 0

    async def run(self, state: State) -> None:
        self.runs += 1
        if self.runs <= self.crashes:
            raise RuntimeError(f"crash {self.runs}")
        state.health.ok(self.name)
        await asyncio.Event().wait()


class TestSupervision:
    def test_a_crashing_refresher_is_started_again_until_it_runs(self) -> None:
        state, refresher = State(), Crashing(crashes=3)

        async def scenario() -> None:
            task = asyncio.create_task(supervise(refresher, state, health=state.health, initial=0.01))
            for _ in range(300):
                await asyncio.sleep(0.01)
                if refresher.runs > 3:
                    break
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())
        entry = state.health.entry("crashing")
        assert (refresher.runs, entry.restarts, entry.failures, entry.up) == (4, 3, 3, True)


class TestHealth:
    def test_the_report_says_what_failed_and_when_it_last_worked(self) -> None:
        health = Health(clock=lambda: 42.0)
        health.ok("cluster")
        health.failed("profiles", "store unreadable")
        assert health.degraded
        assert health.report() == {
            "cluster": {"up": True, "error": None, "failures": 0, "restarts": 0, "lastSuccess": 42.0},
            "profiles": {"up": False, "error": "store unreadable", "failures": 1, "restarts": 0,
                         "lastSuccess": None},
        }


def configmap(version: str, text: str | None) -> dict[str, Any]:
    return {"metadata": {"name": "pod-tailor-policy", "resourceVersion": version},
            "data": {} if text is None else {"policy.yaml": text}}


class TestThePolicyConfigMap:
    BAD = "policies:\n  default:\n    resources:\n      cpu: {request: NaN}\n"

    def test_an_invalid_version_stays_rejected_and_its_metric_stays_zero_on_every_retry(self) -> None:
        source = PolicySource(bundled_policies(), namespace="pod-tailor", name="pod-tailor-policy")
        for _ in range(3):
            outcome = source.update([configmap("7", self.BAD)])
            assert outcome.error is not None
            assert "policies.default.resources.cpu.request" in outcome.error
            assert cluster_metrics.POLICY_CONFIGMAP_VALID._value.get() == 0
        good = source.update([configmap("8", "policies:\n  default:\n    drainSeconds: 10\n")])
        assert good.error is None
        assert good.policies.policies["default"].drain_seconds == 10
        assert cluster_metrics.POLICY_CONFIGMAP_VALID._value.get() == 1

    @pytest.mark.parametrize("data", [None, {"policy.yaml": 5}, {"policy.yaml": "[" * 3000}])
    def test_any_configmap_shape_is_an_error_outcome_never_an_exception(self, data: Any) -> None:
        source = PolicySource(bundled_policies(), namespace="pod-tailor", name="pod-tailor-policy")
        outcome = source.update([{"metadata": {"resourceVersion": "1"}, "data": data}])
        assert outcome.error is not None
        assert outcome.policies is bundled_policies()
