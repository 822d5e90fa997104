"""Finding the cluster, and running on embedded defaults when there is none."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from kubefake import FakeKube

from webhook.cluster.config import discover
from webhook.config.settings import Settings
from webhook.core.model.namespace import Mode
from webhook.refreshers.cluster import ClusterRefresher
from webhook.refreshers.state import State
from webhook.server.certs import make_ca


@pytest.fixture
def no_cluster_env(tmp_path: Path) -> dict[str, str]:
    """An environment without a service account or kubeconfig: HOME is an empty directory."""
    return {"HOME": str(tmp_path / "home")}


class TestDiscovery:
    def test_an_explicit_kubeconfig_wins(self, kube: FakeKube, kubeconfig: Path) -> None:
        found = discover(kubeconfig=str(kubeconfig), env={})
        assert found.config is not None
        assert found.config.host == kube.url
        assert found.config.source == f"kubeconfig {kubeconfig}"

    def test_the_service_account_is_used_inside_a_pod(self, tmp_path: Path, kubeconfig: Path) -> None:
        account = tmp_path / "serviceaccount"
        account.mkdir()
        (account / "token").write_text("in-cluster-token")
        (account / "ca.crt").write_bytes(make_ca().cert_pem)
        env = {
            "KUBERNETES_SERVICE_HOST": "10.96.0.1",
            "KUBERNETES_SERVICE_PORT": "443",
            "KUBECONFIG": str(kubeconfig),
        }
        found = discover(env=env, service_account_dir=account)
        assert found.config is not None
        assert found.config.source == "in-cluster service account"
        assert found.config.host == "https://10.96.0.1:443"

    def test_kubeconfig_from_the_environment_is_used_outside_a_pod(
        self, kube: FakeKube, kubeconfig: Path
    ) -> None:
        found = discover(env={"KUBECONFIG": str(kubeconfig)}, service_account_dir=Path("/nonexistent"))
        assert found.config is not None
        assert found.config.host == kube.url

    def test_the_home_kubeconfig_is_the_last_resort(self, kube: FakeKube, tmp_path: Path) -> None:
        (tmp_path / ".kube").mkdir()
        kube.write_kubeconfig(tmp_path / ".kube" / "config")
        found = discover(env={"HOME": str(tmp_path)}, service_account_dir=Path("/nonexistent"))
        assert found.config is not None
        assert found.config.host == kube.url

    def test_nothing_found_is_an_answer_not_an_error(self, no_cluster_env: dict[str, str]) -> None:
        found = discover(env=no_cluster_env, service_account_dir=Path("/nonexistent"))
        assert found.config is None
        assert found.reason == "no in-cluster service account and no kubeconfig"

    @pytest.mark.parametrize(
        "content",
        ["not: [valid", "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"],
        ids=["unparseable", "no-context"],
    )
    def test_a_broken_kubeconfig_is_reported_not_raised(self, tmp_path: Path, content: str) -> None:
        path = tmp_path / "broken"
        path.write_text(content)
        found = discover(kubeconfig=str(path), env={})
        assert found.config is None
        assert found.reason.startswith(f"kubeconfig {path} unusable: ")


class TestEmbeddedDefaults:
    def test_without_a_cluster_the_refresher_serves_embedded_defaults_and_says_so(
        self, no_cluster_env: dict[str, str], caplog: pytest.LogCaptureFixture
    ) -> None:
        state = State()
        refresher = ClusterRefresher(Settings(default_mode=Mode.DRY_RUN), env=no_cluster_env)
        with caplog.at_level(logging.WARNING, logger="webhook.cluster"):
            refresher.start(state)
        refresher.stop()
        assert not state.pending
        assert state.notes["cluster"].startswith("no cluster configuration")
        assert "serving embedded defaults" in caplog.text
        assert state.cluster.source == "embedded defaults"
        assert state.cluster.namespaces is None
        assert state.cluster.settings_for("anything").mode is Mode.DRY_RUN

    def test_watch_cluster_off_ignores_a_reachable_cluster(self, kube: FakeKube, kubeconfig: Path) -> None:
        state = State()
        ClusterRefresher(Settings(kubeconfig=str(kubeconfig), watch_cluster=False), env={}).start(state)
        assert "watch_cluster is off" in state.notes["cluster"]
        assert kube.requests == []

    def test_the_policy_file_is_the_base_policy_in_embedded_mode(
        self, no_cluster_env: dict[str, str], tmp_path: Path
    ) -> None:
        policy = tmp_path / "policy.yaml"
        policy.write_text("policies:\n  batch:\n    features: {probes: false}\n")
        state = State()
        ClusterRefresher(Settings(policy_file=str(policy)), env=no_cluster_env).start(state)
        assert state.cluster.policies.get("batch") is not None

    def test_an_unreachable_cluster_keeps_readiness_pending_without_crashing(self, tmp_path: Path) -> None:
        with FakeKube() as gone:
            path = gone.write_kubeconfig(tmp_path / "kubeconfig")
        state = State()
        refresher = ClusterRefresher(Settings(kubeconfig=str(path)), env={})

        async def scenario() -> None:
            task = asyncio.create_task(refresher.run(state))
            await asyncio.sleep(0.5)
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(scenario())
        assert "cluster" in state.pending
        assert state.cluster.source == "embedded defaults"  # State's default until a sync succeeds
