"""Builds that cannot destroy: a rate window under two scrape intervals, and a history that vanished."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import scenarios
from conftest import BUILD_COMMAND, History, test_settings

from webhook.commands import main
from webhook.core.model.profile import Evidence, NoRecommendation, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.build import build_profiles
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.queries import safe_rate_window
from webhook.profiles.runner import guard_shrink
from webhook.profiles.store import ProfileDocument, WorkloadEntry

BUILD = [*BUILD_COMMAND, "-q"]
EVIDENCE = Evidence(
    window="14d", samples=4032, hours=336, cpu_percentile=95, memory_margin=0.15, confidence=0.9
)


class TestTheRateWindow:
    @pytest.mark.parametrize(
        ("window", "interval", "expected", "raised"),
        [(300, 30, 300, False), (60, 30, 60, False), (60, 60, 120, True), (300, 300, 600, True),
         (120, 0, 120, False)],
    )  # fmt: skip
    def test_is_raised_to_two_scrape_intervals(
        self, window: int, interval: float, expected: int, raised: bool
    ) -> None:
        found, why = safe_rate_window(window, interval=interval)
        assert found == expected
        assert bool(why) is raised

    def test_a_build_with_a_window_of_one_interval_reads_as_the_build_with_two(
        self, history: History
    ) -> None:
        prom = Prometheus(history.prometheus.url)
        try:
            short = build_profiles(
                prom, test_settings(namespaces=("shop",), rate_window="5m"), end=scenarios.END
            )
            right = build_profiles(
                prom, test_settings(namespaces=("shop",), rate_window="10m"), end=scenarios.END
            )
        finally:
            prom.close()
        assert short.notes == (
            "the rate window 5m is under 2 x the scrape interval (300s): raised to 10m, or CPU usage "
            "would read as near zero",
        )
        assert not right.notes
        assert short.document.workloads == right.document.workloads


def _doc(**containers: Recommendation | NoRecommendation | None) -> ProfileDocument:
    workloads = {
        WorkloadKey("shop", "Deployment", name): WorkloadEntry(containers={"app": profile})
        for name, profile in containers.items()
        if profile is not None
    }
    return ProfileDocument(workloads, 0.0, "test")


REC = Recommendation(cpu=Decimal("0.25"), memory=Decimal(2**28), evidence=EVIDENCE)
NONE = NoRecommendation("only 2.0h and 24 samples of history (needs 24h and 100)")


class TestAShrinkingBuild:
    @pytest.mark.parametrize(
        ("new", "kept", "share"),
        [
            ({"a": REC, "b": REC, "c": REC, "d": REC, "e": REC}, False, 0.0),
            ({"a": REC, "b": REC, "c": REC, "d": REC, "e": NONE}, False, 0.2),  # at the limit: written
            ({"a": REC, "b": REC, "c": REC, "d": NONE, "e": None}, True, 0.4),
            ({}, True, 1.0),  # Prometheus lost its history
        ],
    )
    def test_keeps_the_previous_recommendations_past_the_limit(
        self, new: dict[str, Recommendation | NoRecommendation | None], kept: bool, share: float
    ) -> None:
        old = _doc(a=REC, b=REC, c=REC, d=REC, e=REC)
        found = guard_shrink(old, _doc(**new), max_share=0.2)
        assert found.kept is kept
        assert found.share == pytest.approx(share)
        recommended = sum(isinstance(p, Recommendation) for e in found.document.workloads.values()
                          for p in e.containers.values())  # fmt: skip
        assert recommended == (5 if kept else sum(isinstance(p, Recommendation) for p in new.values()))

    def test_each_loss_says_why(self) -> None:
        found = guard_shrink(_doc(a=REC, b=REC), _doc(a=NONE), max_share=0.2)
        assert found.lost == (
            "shop/Deployment/a app: only 2.0h and 24 samples of history (needs 24h and 100)",
            "shop/Deployment/b app: not in this build's data",
        )

    def test_only_the_namespaces_the_build_covers_count(self) -> None:
        old = ProfileDocument(
            {
                WorkloadKey("other", "Deployment", "x"): WorkloadEntry({"app": REC}),
                WorkloadKey("shop", "Deployment", "a"): WorkloadEntry({"app": REC}),
            },
            0.0,
            "t",
        )
        assert not guard_shrink(old, _doc(a=REC), max_share=0.0, namespaces=["shop"]).kept


def recommended(store: Path | dict[str, Any]) -> dict[tuple[str, str], tuple[str, str]]:
    """(workload, container) -> (cpu, memory) of every recommendation in a store file."""
    document = json.loads(store.read_text()) if isinstance(store, Path) else store
    return {
        (workload, name): (found["cpu"], found["memory"])
        for workload, entry in document["workloads"].items()
        for name, found in entry["containers"].items()
        if "cpu" in found
    }


class TestTheCommand:
    def build(self, history: History, store: Path, *extra: str, rate: str = "10m") -> int:
        where = ["--prometheus-url", history.prometheus.url, "--profiles-path", str(store), "--no-checkpoint"]
        return main([*BUILD, "--rate-window", rate, *where, *extra])

    def test_a_build_that_lost_most_history_keeps_the_store_unless_allowed(
        self, history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store = tmp_path / "profiles.json"
        assert self.build(history, store, "--end", str(scenarios.END)) == 0
        before = json.loads(store.read_text())
        assert len(recommended(before)) == 10
        capsys.readouterr()
        # A window that ends 12 h into the history: every series is there, but too short to recommend.
        early = str(scenarios.START + 12 * 3600)
        assert self.build(history, store, "--end", early) == 0
        err = capsys.readouterr().err
        assert "recommendation(s), 100% of the store's (more than --max-shrink 20%)" in err
        assert "shop/Deployment/steady app: only 11.9h and 288 samples of history (needs 24h and 100)" in err
        assert recommended(store) == recommended(before)
        assert self.build(history, store, "--end", early, "--allow-shrink") == 0
        assert recommended(store) == {}

    def test_a_short_rate_window_is_raised_and_said_even_when_quiet(
        self, history: History, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert self.build(history, tmp_path / "p.json", "--end", str(scenarios.END), rate="5m") == 0
        said = "warning: the rate window 5m is under 2 x the scrape interval (300s): raised to 10m"
        assert said in capsys.readouterr().err
