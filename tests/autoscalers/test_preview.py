"""The offline preview reads the HPAs and VPAs shipped beside a Deployment and shows their reasons."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from tests.autoscalers.kit import hpa, recommendation, utilization, vpa
from webhook.commands import main
from webhook.core.model.profile import UsageTotals
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [
                {"name": "app", "image": "example/web:1", "ports": [{"containerPort": 8080}]},
                {"name": "proxy", "image": "example/proxy:1"},
            ]},
        },
    },
}  # fmt: skip


def manifest(tmp_path: Path, *objects: dict[str, object]) -> Path:
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump_all([DEPLOYMENT, *objects]))
    return path


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    """A store where web's app has a confident profile and a peak total of 9 cores."""
    path = tmp_path / "profiles.json"
    app = recommendation("0.3", 400 * 2**20, totals=UsageTotals(cpu=Decimal(9), memory=Decimal(8 * 2**30)))
    key = WorkloadKey("shop", "Deployment", "web")
    FileStore(path).write(ProfileDocument({key: WorkloadEntry({"app": app})}, 1.0, "test"))
    return path


def preview(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    assert main(["preview", *args]) == 0
    out, err = capsys.readouterr()
    return out, err


def test_the_diff_shows_the_hpa_reason_and_the_headroom_warning(
    tmp_path: Path, profiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = manifest(tmp_path, hpa(metrics=[utilization("cpu", 70)], max_replicas=10))
    out, err = preview(capsys, "-f", str(path), "--diff", "--profiles-path", str(profiles))
    assert 'requests.cpu=100m (from policy "default"; hpa web scales on cpu utilization 70 %)' in out
    assert "requests.memory=400Mi (profile: peak +15%" in out  # memory still from history
    assert (
        "Warning: pod-tailor: hpa web: at maxReplicas 10 x 200m x 70 % = 1.4 cores < observed peak 9 cores; "
        "it will saturate" in err
    )


def test_dry_run_warnings_carry_the_hpa_and_vpa_reasons(
    tmp_path: Path, profiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = manifest(
        tmp_path,
        hpa(metrics=[utilization("cpu", 70, container="app")]),
        vpa(policies=[{"containerName": "app", "mode": "Off"}]),
    )
    _, err = preview(
        capsys,
        "-f",
        str(path),
        "--patch",
        "--profiles-path",
        str(profiles),
        "--namespace-label",
        "pod-tailor.io/mode=dry-run",
    )
    assert (
        'Warning: pod-tailor would set app: requests.cpu=100m (from policy "default"; hpa web scales on '
        "cpu utilization 70 %)" in err
    )
    assert "Warning: pod-tailor left proxy: cpu, memory left to vpa web (Auto)" in err


def test_an_hpa_for_another_workload_or_namespace_changes_nothing(
    tmp_path: Path, profiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = manifest(tmp_path, hpa("api", target=("apps/v1", "Deployment", "api")), hpa(namespace="elsewhere"))
    out, _ = preview(capsys, "-f", str(path), "--diff", "--profiles-path", str(profiles))
    assert "hpa" not in out
    assert "requests.cpu=300m (profile: p95 usage" in out
