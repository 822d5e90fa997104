"""`pod-tailor profiles build|show` against the real Prometheus, through the shared default store."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from conftest import BUILD_COMMAND, History

from webhook.commands import main
from webhook.core.model.quantity import parse

BUILD = [*BUILD_COMMAND, "--rate-window", "10m"]


@pytest.fixture
def built_store(history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `profiles build` with no --store: it writes the default location, as `show` reads it."""
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(tmp_path / "shared.json"))
    assert main([*BUILD, "--prometheus-url", history.prometheus.url, "-q"]) == 0
    return tmp_path / "shared.json"


def test_build_reports_progress_and_what_it_wrote(
    history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(tmp_path / "shared.json"))
    assert main([*BUILD, "--prometheus-url", history.prometheus.url]) == 0
    out, err = capsys.readouterr()
    assert "reading 14d of history" in err
    assert "series values from" in err
    assert "wrote 10 workloads (" in out
    assert "Prometheus queries" in out
    assert (tmp_path / "shared.json").is_file()


def test_show_prints_one_row_per_container_with_the_evidence(
    built_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["profiles", "show", "shop"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:6] == ["WORKLOAD", "CONTAINER", "CPU", "MEMORY", "CURRENT", "EVIDENCE"]
    checkout = [line for line in lines if line.startswith("shop/Deployment/checkout ")]
    assert [row.split()[1] for row in checkout] == ["app", "envoy"]
    assert "1/1Gi" in checkout[0]
    assert "p95 +15% over 14d" in checkout[0]
    fresh = next(line for line in lines if line.startswith("shop/Deployment/fresh "))
    assert "none: only" in fresh


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_show_selects_one_workload_as_json_or_yaml(
    built_store: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    capsys.readouterr()
    assert main(["profiles", "show", "shop/Deployment/jvm", "-o", output]) == 0
    text = capsys.readouterr().out
    data = json.loads(text) if output == "json" else yaml.safe_load(text)
    assert list(data["workloads"]) == ["shop/Deployment/jvm"]
    # The CLI reads up to now, off the data's 5-minute grid: rate() extrapolation may add a little.
    startup = parse(data["workloads"]["shop/Deployment/jvm"]["containers"]["app"]["startupCpu"])
    assert Decimal("2") <= startup <= Decimal("2.1")


def test_show_of_an_unknown_workload_fails(built_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "show", "shop/nope"]) == 1
    assert "no profiles matching shop/nope" in capsys.readouterr().err


def test_build_without_a_prometheus_url_says_how_to_give_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("POD_TAILOR_PROMETHEUS_URL", raising=False)
    assert main(["profiles", "build", "--profiles-path", str(tmp_path / "p.json")]) == 2
    assert "pass --prometheus-url URL or set POD_TAILOR_PROMETHEUS_URL" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "value"), [("--window", "fortnight"), ("--step", "0m")])
def test_a_bad_duration_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    store = str(tmp_path / "p.json")
    args = ["profiles", "build", "--prometheus-url", "http://127.0.0.1:9", "--profiles-path", store,
            option, value]
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert f"{option}: not a duration: {value!r}" in capsys.readouterr().err


def test_a_namespace_with_no_data_fails_naming_the_close_one_and_leaves_store_and_checkpoint_alone(
    history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, kept = tmp_path / "p.json", tmp_path / "checkpoint.json"
    store.write_text('{"generatedAt": 1, "workloads": {}}')
    kept.write_text("an earlier build's checkpoint")
    args = ["profiles", "build", "--prometheus-url", history.prometheus.url, "--namespace", "shopp",
            "--profiles-path", str(store), "--checkpoint", str(kept), "-q"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("pod-tailor profiles build: --namespace shopp: no container_memory_working_set")
    assert "did you mean shop? namespaces with data: " in err
    assert store.read_text() == '{"generatedAt": 1, "workloads": {}}'
    assert kept.read_text() == "an earlier build's checkpoint"


def test_a_build_of_some_namespaces_keeps_its_own_checkpoint(
    history: History, tmp_path: Path, private_cache: Path
) -> None:
    store = str(tmp_path / "p.json")
    assert main([*BUILD, "--prometheus-url", history.prometheus.url, "--profiles-path", store, "-q"]) == 0
    assert (private_cache / "pod-tailor" / "build-checkpoint.shop.json").is_file()
    assert not (private_cache / "pod-tailor" / "build-checkpoint.json").exists()  # all namespaces' is kept
