"""Incremental builds: the answers of past days are kept, and only the edges of the window are asked."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import scenarios
from agreement import assert_agrees
from conftest import History, test_settings

from webhook.core.model.profile import Recommendation
from webhook.profiles import checkpoint
from webhook.profiles.build import BuildResult, IncrementalBuild, build_profiles
from webhook.profiles.checkpoint import SETTLE, Checkpoint
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.prometheus import Prometheus, Sample, Series
from webhook.profiles.queries import GROUP_LABEL
from webhook.profiles.slices import DAY, SliceRecord, SliceRecords, aligned_cut, per_day
from webhook.profiles.strategy import StrategySettings

HOUR = 3600
SHOP = test_settings(namespaces=("shop",))


def _build(history: History, kept: Checkpoint | None, *, end: float = scenarios.END) -> BuildResult:
    prom = Prometheus(history.prometheus.url)
    try:
        return build_profiles(prom, SHOP, end=end, checkpoint=kept)
    finally:
        prom.close()


def rows(*found: SliceRecord, width: int = 2) -> SliceRecords:
    out = SliceRecords(width)
    out.extend(found)
    return out


def _fresh(history: History) -> Checkpoint:
    return Checkpoint(SHOP.checkpoint_key(history.prometheus.url))


@pytest.fixture(scope="module")
def cold(history: History) -> tuple[BuildResult, Checkpoint]:
    kept = _fresh(history)
    return _build(history, kept), kept


class TestTheAlignedGrid:
    @pytest.mark.parametrize(
        ("lo", "hi", "unit", "expected"),
        [
            (0.5 * DAY, 2.25 * DAY, DAY, [(0.5 * DAY, DAY), (DAY, 2 * DAY), (2 * DAY, 2.25 * DAY)]),
            (DAY, 3 * DAY, DAY, [(DAY, 2 * DAY), (2 * DAY, 3 * DAY)]),  # on the grid: no partial slice
            (10 * HOUR, 11 * HOUR, 6 * HOUR, [(10 * HOUR, 11 * HOUR)]),  # inside one cell: one slice
            (5 * HOUR, 13 * HOUR, 6 * HOUR,
             [(5 * HOUR, 6 * HOUR), (6 * HOUR, 12 * HOUR), (12 * HOUR, 13 * HOUR)]),
            # An end a fraction of a second past a boundary: no sliver slice, it joins the day before.
            (DAY + 0.3 - 2 * DAY, DAY + 0.3, DAY, [(-DAY + 0.3, 0.0), (0.0, DAY + 0.3)]),
            (0.0 - 30, 2 * DAY, DAY, [(-30.0, DAY), (DAY, 2 * DAY)]),  # a start 30 s before one
        ],
    )
    def test_slices_fall_on_multiples_of_the_unit_since_the_epoch(
        self, lo: float, hi: float, unit: int, expected: list[tuple[float, float]]
    ) -> None:
        assert sorted(aligned_cut(lo, hi, unit=unit, step=60)) == sorted(expected)

    def test_the_same_days_come_back_whatever_the_hour_of_the_build(self) -> None:
        early = set(aligned_cut(100 * DAY + 3 * HOUR - 14 * DAY, 100 * DAY + 3 * HOUR, unit=DAY, step=60))
        late = set(aligned_cut(100 * DAY + 20 * HOUR - 14 * DAY, 100 * DAY + 20 * HOUR, unit=DAY, step=60))
        assert len(early & late) == 13  # every whole day; only the two edges moved

    @pytest.mark.parametrize(
        ("slices", "expected"),
        [(1, 1), (10, 1), (14, 1), (15, 2), (28, 2), (29, 3), (100, 8), (336, 24), (999, 24)],
    )
    def test_slices_per_day_divide_the_day_into_whole_hours(self, slices: int, expected: int) -> None:
        assert per_day(slices, window=14 * DAY) == expected


class TestRecordsInColumns:
    RECORD = SliceRecord(("ns", "pod", "app"), 0.0, float(DAY), 288, None, 1.0, (0.1, 0.2), 50.0)

    def test_rows_read_back_as_they_were_given_with_none_and_nan(self) -> None:
        other = self.RECORD._replace(start=5.0, memory_peak=None, latest=None, cpu=())
        found = rows(self.RECORD, other)
        assert len(found) == 2
        assert found[0] == self.RECORD
        assert found[-1]._replace(cpu=()) == other
        assert all(math.isnan(v) for v in found[1].cpu)  # no CPU answer: NaN per quantile
        assert list(found[:1]) == [self.RECORD]

    def test_extending_appends_every_column(self) -> None:
        first, second = rows(self.RECORD), rows(self.RECORD._replace(series=("ns", "b", "app"), samples=7))
        first.extend(second)
        assert [r.series[1] for r in first] == ["pod", "b"]
        assert first[1].samples == 7

    def test_a_record_with_another_number_of_quantiles_is_refused(self) -> None:
        with pytest.raises(ValueError, match="3 CPU values for a grid of 2"):
            rows(self.RECORD._replace(cpu=(0.1, 0.2, 0.3)))


class TestWhatIsKept:
    RECORD = SliceRecord(("ns", "pod", "app"), 0.0, float(DAY), 288, None, 1.0, (0.1, 0.2), 50.0)

    @pytest.mark.parametrize(
        ("bounds", "end", "kept"),
        [
            ((DAY, 2 * DAY), 3 * DAY, True),  # a whole day, long over
            ((DAY, 2 * DAY), 2 * DAY + SETTLE, True),  # just settled
            ((DAY, 2 * DAY), 2 * DAY + SETTLE - 1, False),  # late samples may still land
            ((DAY + HOUR, 2 * DAY), 3 * DAY, False),  # the partial slice at the window's start
            ((2 * DAY, 2 * DAY + HOUR), 3 * DAY, False),  # a partial slice at the window's end
        ],
    )
    def test_only_whole_slices_that_ended_a_while_ago_are_kept(
        self, bounds: tuple[float, float], end: float, kept: bool
    ) -> None:
        found = Checkpoint("k")
        found.keep(bounds, rows(self.RECORD), unit=DAY, end=end)
        assert (bounds in found.slices) is kept

    def test_slices_out_of_the_window_are_forgotten(self) -> None:
        found = Checkpoint("k", {(0.0, DAY): rows(self.RECORD), (DAY, 2 * DAY): rows(self.RECORD)})
        found.prune(before=DAY + 1)
        assert list(found.slices) == [(DAY, 2 * DAY)]

    def test_a_saved_checkpoint_reads_back_the_same(self, tmp_path: Path) -> None:
        other = self.RECORD._replace(series=("ns", "pod-2", "app"), start=12.0, memory_peak=None)
        missing = self.RECORD._replace(series=("ns", "pod-3", "app"), cpu=(math.nan, 0.5))  # no p95
        found = Checkpoint("k", {(0.0, DAY): rows(self.RECORD, other, missing)}, unit=DAY)
        checkpoint.save(found, tmp_path / "c.json")
        again = checkpoint.load(tmp_path / "c.json", key="k")
        assert again.note == ""
        assert again.unit == DAY
        (records,) = again.slices.values()
        assert records[:2] == [self.RECORD, other]
        assert math.isnan(records[2].cpu[0])
        assert records[2]._replace(cpu=()) == missing._replace(cpu=())

    @pytest.mark.parametrize(
        ("content", "note"),
        [
            (None, "no checkpoint yet"),
            (b"{not json", "unreadable"),
            (b'{"key": "other settings"}\n[0, 1, []]\n', "other settings"),
            (b'{"key": "k"}\n[0, 1, [["too", "short"]]]\n', "malformed"),
            (b'{"key": "k"}\n[0, 1, [[', "unreadable"),  # cut short by a full disk
        ],
    )
    def test_a_missing_foreign_or_damaged_checkpoint_means_a_full_build(
        self, tmp_path: Path, content: bytes | None, note: str
    ) -> None:
        path = tmp_path / "c.json"
        if content is not None:
            path.write_bytes(content)
        found = checkpoint.load(path, key="k")
        assert found.slices == {}
        assert note in found.note

    @pytest.mark.parametrize(
        "change",
        [{"namespaces": ("other",)}, {"cpu_rate_metric": "recorded"}, {"rate_window": "5m"}, {"step": "1m"}],
    )
    def test_settings_that_change_the_answers_change_the_key(self, change: dict[str, object]) -> None:
        changed = test_settings(**{"namespaces": ("shop",), **change})
        assert changed.checkpoint_key("u") != SHOP.checkpoint_key("u")
        assert SHOP.checkpoint_key("http://a") != SHOP.checkpoint_key("http://b")

    def test_the_window_and_the_strategy_margins_do_not_change_the_key(self) -> None:
        strategy = StrategySettings(startup_window_seconds=scenarios.STARTUP_WINDOW, memory_margin=0.3,
                                    min_hours=48)
        other = test_settings(namespaces=("shop",), window="7d", strategy=strategy)
        assert other.checkpoint_key("u") == SHOP.checkpoint_key("u")

    @pytest.mark.parametrize(
        ("kept", "needed", "used", "still_kept"),
        [
            (DAY, DAY, DAY, True),
            (6 * HOUR, DAY, 6 * HOUR, True),  # fewer live series now: the finer grid stays
            (DAY, 12 * HOUR, 12 * HOUR, False),  # more now: a finer grid, the old days are no use
            (0, DAY, DAY, False),  # nothing kept yet
        ],
    )
    def test_the_grid_stays_while_it_is_fine_enough(
        self, kept: int, needed: int, used: int, still_kept: bool
    ) -> None:
        found = Checkpoint("k", {(0.0, float(kept or DAY)): rows(self.RECORD)}, unit=kept)
        assert found.grid_unit(needed) == used
        assert bool(found.slices) is still_kept


class TestIncrementalBuilds:
    def test_a_cold_build_on_whole_days_agrees_with_the_evenly_cut_build(
        self, cold: tuple[BuildResult, Checkpoint], built: BuildResult
    ) -> None:
        result, kept = cold
        assert result.reused_slices == 0
        assert len(kept.slices) >= 12  # the whole days of a 14-day window that are over
        # Where a life crosses a slice boundary it is placed within half a scrape interval: at most
        # 14 boundaries x 2.5 min apart from the one-slice build. The bound is reached when the build ends at
        # 22:00 UTC and each nightly run crosses midnight (POD_TAILOR_TEST_END_HOUR=22 replays that).
        assert_agrees(result, built, hours_within=14 * 150 / 3600)

    def test_the_next_build_asks_only_for_the_edges_and_gives_the_same_profiles(
        self, history: History, cold: tuple[BuildResult, Checkpoint]
    ) -> None:
        result, kept = cold
        again = _build(history, kept)
        assert again.reused_slices == len(kept.slices)
        assert again.queries <= result.queries - 2 * again.reused_slices  # two big queries a slice saved
        assert again.document.workloads == result.document.workloads

    def test_kept_answers_are_used_rather_than_asked_again(
        self, history: History, cold: tuple[BuildResult, Checkpoint]
    ) -> None:
        result, kept = cold
        doctored = Checkpoint(kept.key, {
            bounds: rows(*(r._replace(memory_peak=(r.memory_peak or 0) * 10) for r in found),
                         width=found.width)
            for bounds, found in kept.slices.items()
        }, unit=kept.unit)
        again = _build(history, doctored)
        grown = [
            (again.document.workloads[key].containers[name], profile)
            for key, entry in result.document.workloads.items()
            for name, profile in entry.containers.items()
            if isinstance(profile, Recommendation)
        ]
        assert grown
        assert all(isinstance(new, Recommendation) and new.memory > old.memory for new, old in grown)

    def test_a_later_build_keeps_the_days_it_shares_and_adds_the_new_ones(
        self, history: History, cold: tuple[BuildResult, Checkpoint]
    ) -> None:
        _, kept = cold
        later = Checkpoint(kept.key, dict(kept.slices), unit=kept.unit)
        result = _build(history, later, end=scenarios.END + DAY)
        assert result.reused_slices == len(kept.slices) - 1  # the oldest day left the window
        assert min(lo for lo, _ in later.slices) > scenarios.END + DAY - 15 * DAY


def _numbers(found: object) -> list[float]:
    """Every number of a summary, in order (None as NaN-free -1: hours without a point)."""
    out: list[float] = []
    for value in dataclasses.asdict(found).values():  # type: ignore[call-overload]
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]
        out += [-1.0 if item is None else float(item) for item in items if not isinstance(item, str)]
    return out


class TestTheOtherDailyReads:
    """The workload totals' daily peaks and the summaries' hourly points are kept per whole UTC day."""

    SETTINGS = test_settings(namespaces=("shop",), summary_days=7)

    def _build(self, history: History, kept: Checkpoint, *, end: float = scenarios.END) -> list[str]:
        """The queries a build asks (their texts), with `kept`; the result is checked by the caller."""
        prom = Prometheus(history.prometheus.url)
        asked: list[str] = []
        instant, ranged, points = prom.instant, prom.range, prom.range_points

        def counted_instant(query: str, **kw: float) -> list[Sample]:
            asked.append(query)
            return instant(query, **kw)

        def counted_range(query: str, **kw: float) -> list[Series]:
            asked.append(query)
            return ranged(query, **kw)  # type: ignore[arg-type]

        def counted_points(query: str, **kw: float) -> list[tuple[Mapping[str, str], Any]]:
            asked.append(query)
            return points(query, **kw)  # type: ignore[arg-type]

        prom.instant, prom.range = counted_instant, counted_range  # type: ignore[method-assign]
        prom.range_points = counted_points  # type: ignore[method-assign]
        try:
            self.result = build_profiles(prom, self.SETTINGS, end=end, checkpoint=kept)
        finally:
            prom.close()
        return asked

    def test_the_next_build_asks_the_totals_and_summaries_of_the_edge_days_only_and_agrees(
        self, history: History
    ) -> None:
        kept = Checkpoint(self.SETTINGS.checkpoint_key(history.prometheus.url))
        first = self._build(history, kept)
        full = self.result
        again = self._build(history, kept)
        totals = [sum(GROUP_LABEL in q for q in asked) for asked in (first, again)]
        summaries = [sum('"controller"' in q for q in asked) for asked in (first, again)]
        assert totals[0] >= 14  # every day of the window asked ...
        assert totals[1] <= 2  # ... then the partial days at its edges only
        # A week in pieces of at most a day (how many per day depends on the data's resolution and the
        # fleet's size) ...
        assert summaries[0] >= 7
        pieces_per_day = -(-summaries[0] // 7)
        assert summaries[1] <= 2 * pieces_per_day  # ... then the two partial days at its edges
        assert summaries[1] < summaries[0]
        for key, entry in full.document.workloads.items():
            again_entry = self.result.document.workloads[key]
            assert again_entry.containers == entry.containers  # the totals included
            # The summaries' days are cut at UTC midnight now, so their hourly means add up in
            # another order: the same to the last bits.
            assert set(again_entry.summaries) == set(entry.summaries)
            for name, drawn in entry.summaries.items():
                assert _numbers(again_entry.summaries[name]) == pytest.approx(_numbers(drawn), rel=1e-12)
        assert any(entry.summaries for entry in full.document.workloads.values())
        assert any(p.totals for e in full.document.workloads.values() for p in e.containers.values()
                   if isinstance(p, Recommendation))

    def test_kept_days_are_used_rather_than_asked_again(self, history: History) -> None:
        kept = Checkpoint(self.SETTINGS.checkpoint_key(history.prometheus.url))
        self._build(history, kept)
        full = self.result
        for kind, days in kept.days.items():  # every kept daily peak ten times higher
            if kind.startswith("totals"):
                for rows in days.values():
                    for row in rows:
                        row[3:] = [None if v is None else v * 10 for v in row[3:]]
        self._build(history, kept)
        grown = [
            (self.result.document.workloads[key].containers[name], profile.totals.cpu)
            for key, entry in full.document.workloads.items()
            for name, profile in entry.containers.items()
            if isinstance(profile, Recommendation) and profile.totals is not None and profile.totals.cpu
        ]
        assert grown
        for new, old in grown:
            assert isinstance(new, Recommendation)
            assert new.totals is not None
            assert new.totals.cpu is not None
            assert new.totals.cpu > old

    def test_damaged_kept_days_are_asked_again_and_the_build_agrees(self, history: History) -> None:
        kept = Checkpoint(self.SETTINGS.checkpoint_key(history.prometheus.url))
        first = self._build(history, kept)
        full = self.result
        damaged = {"totals": [["ns", "group"]], "summaries": [["ns", "web~", "app", "cpu", "not base64!"]]}
        for kind, days in kept.days.items():
            for day in days:
                days[day] = damaged["totals" if kind.startswith("totals") else kind]
        again = self._build(history, kept)
        assert sum(GROUP_LABEL in q for q in again) == sum(GROUP_LABEL in q for q in first)  # every day asked
        assert sum('"controller"' in q for q in again) == sum('"controller"' in q for q in first)
        for key, entry in full.document.workloads.items():
            assert self.result.document.workloads[key].containers == entry.containers

    def test_days_survive_a_save_and_unused_kinds_and_old_days_are_dropped(self, tmp_path: Path) -> None:
        working = Checkpoint("k")
        working.keep_day("totals a", 2 * DAY, [["ns", "web", "app", 0.5, None]], end=3 * DAY)
        working.keep_day("totals a", DAY, [["ns", "web", "app", 0.25, None]], end=3 * DAY)
        working.keep_day("totals a", 3 * DAY, [["ns", "web", "app", 1.0, None]], end=3 * DAY)  # not settled
        working.days["totals b"] = {2 * DAY: []}  # a scope this build did not ask
        kept = Checkpoint("k")
        kept.settle(working, before=1.5 * DAY)
        checkpoint.save(kept, tmp_path / "c.json")
        again = checkpoint.load(tmp_path / "c.json", key="k")
        assert again.days == {"totals a": {2 * DAY: [["ns", "web", "app", 0.5, None]]}}


class TestTheServersOwnBuilds:
    """`serve` with a Prometheus URL rebuilds in the background, keeping the past days in memory."""

    def test_each_build_after_the_first_reuses_the_past_days(self, history: History) -> None:
        builds = IncrementalBuild(PrometheusConnection(history.prometheus.url), SHOP)
        first = builds(end=scenarios.END)
        second = builds(end=scenarios.END)
        assert first.reused_slices == 0
        assert second.reused_slices == len(builds.checkpoint.slices) >= 12
        assert second.queries < first.queries
        assert second.document.workloads == first.document.workloads

    def test_a_build_with_partial_answers_keeps_nothing(self, history: History) -> None:
        partial = test_settings(namespaces=("partial",))
        builds = IncrementalBuild(PrometheusConnection(history.prometheus.url), partial)
        assert builds(end=scenarios.END).warnings
        assert builds.checkpoint.slices == {}


class TestTheCommand:
    ARGS = ["profiles", "build", "--namespace", "shop", "--step", "5m", "--rate-window", "10m", "-q"]

    def test_build_keeps_a_checkpoint_in_the_cache_and_uses_it_next_time(
        self, history: History, tmp_path: Path, private_cache: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        from webhook.commands import main

        args = [*self.ARGS, "--prometheus-url", history.prometheus.url,
                "--profiles-path", str(tmp_path / "p.json")]
        assert main(args) == 0
        first = capsys.readouterr().out
        path = private_cache / "pod-tailor" / "build-checkpoint.shop.json"  # --namespace shop: its own file
        assert checkpoint.load(path, key=SHOP.checkpoint_key(history.prometheus.url)).slices
        assert main(args) == 0
        second = capsys.readouterr().out
        queries = [int(text.split(" using ")[1].split()[0]) for text in (first, second)]
        assert queries[1] < queries[0]

    def test_no_checkpoint_reads_the_whole_window_and_writes_nothing(
        self, history: History, tmp_path: Path, private_cache: Path
    ) -> None:
        from webhook.commands import main

        args = [*self.ARGS, "--prometheus-url", history.prometheus.url,
                "--profiles-path", str(tmp_path / "p.json")]
        assert main([*args, "--no-checkpoint"]) == 0
        assert not (private_cache / "pod-tailor").exists()

    def test_partial_answers_are_never_kept(self, history: History, tmp_path: Path) -> None:
        from webhook.commands import main

        where = tmp_path / "c.json"
        args = ["profiles", "build", "--prometheus-url", history.prometheus.url, "--namespace", "partial",
                "--step", "5m", "--rate-window", "10m", "--profiles-path", str(tmp_path / "p.json"), "-q",
                "--allow-partial", "--checkpoint", str(where)]
        assert main(args) == 0
        assert not where.exists()

