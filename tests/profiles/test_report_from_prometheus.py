"""`pod-tailor report --prometheus-url`: profiles built on the spot from the real Prometheus, never stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import History

from webhook.commands import main

BUILD = [
    "--step",
    "5m",
    "--rate-window",
    "10m",
    "--startup-window",
    "1200",
    "--startup-lookback",
    "14d",
    "--no-checkpoint",
    "-q",
]


def _deployment(name: str) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "x", "ports": [{"containerPort": 80}]}]},
            },
        },
    }


@pytest.fixture
def manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(tmp_path / "never-written.json"))
    path = tmp_path / "shop.yaml"
    path.write_text(yaml.safe_dump_all([_deployment("steady"), _deployment("fresh")]))
    return path


def test_the_report_sizes_from_history_built_now_and_writes_no_store(
    history: History, manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "report",
            "-f",
            str(manifests),
            "-n",
            "shop",
            "--prometheus-url",
            history.prometheus.url,
            *BUILD,
            "-o",
            "json",
        ]
    )
    out, _ = capsys.readouterr()
    document = json.loads(out)
    assert (code, document["problems"]) == (0, [])
    steady, fresh = (w["containers"][0]["sources"]["requests.cpu"] for w in document["workloads"][::-1])
    assert steady["from"] == "history"
    assert steady["confidence"] > 0.9
    assert fresh["from"] == "policy"
    assert "no profile: only" in fresh["detail"]
    assert document["profiles"]["source"].startswith(f"built from {history.prometheus.url}")
    assert not (tmp_path / "never-written.json").exists()


def test_a_prometheus_that_cannot_be_reached_leaves_the_policy_and_says_so(
    manifests: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "report",
            "-f",
            str(manifests),
            "-n",
            "shop",
            "--prometheus-url",
            "http://127.0.0.1:9",
            "--prometheus-timeout",
            "5",
            *BUILD,
            "-o",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert "profiles from http://127.0.0.1:9: cannot reach Prometheus" in err
    assert {w["containers"][0]["sources"]["requests.cpu"]["from"] for w in json.loads(out)["workloads"]} == {
        "policy"
    }
