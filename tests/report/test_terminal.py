"""What a person at a terminal sees: a table that fits, and a progress bar only when stderr is one."""

from __future__ import annotations

import io

import pytest
import yaml

from tests.report.fleet import container, workload
from webhook.config.policies import bundled_policies
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot
from webhook.report.collect import from_manifests
from webhook.report.pipeline import build_report
from webhook.report.progress import Progress
from webhook.report.text import Column, fit, render_table


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestTheProgressBar:
    def test_a_terminal_sees_the_bar_move_and_then_a_clean_line(self) -> None:
        stream = _Terminal()
        progress = Progress(stream, interval=0)
        for done in range(1, 5):
            progress.advance(done, 4, "workloads evaluated")
        progress.done()
        text = stream.getvalue()
        assert "\r[" + "#" * 30 + "] 4/4 workloads evaluated" in text
        assert text.endswith("\r")

    def test_a_pipe_or_a_log_gets_nothing(self) -> None:
        stream = io.StringIO()
        progress = Progress(stream)
        progress.step("listing deployments.apps")
        progress.advance(1, 1, "done")
        progress.done()
        assert stream.getvalue() == ""


class TestFittingTheTerminal:
    COLUMNS = [Column("NAME", cut=True), Column("NOTE", drop=1, cut=True), Column("DETAIL", drop=2, cut=True)]
    ROWS = [["shop/Deployment/web", "a long note about the web workload", "more detail than anyone wants"]]

    @pytest.mark.parametrize(
        ("width", "titles"),
        [
            (None, ["NAME", "NOTE", "DETAIL"]),
            (100, ["NAME", "NOTE", "DETAIL"]),
            (60, ["NAME", "NOTE"]),
            (15, ["NAME"]),
        ],
    )
    def test_optional_columns_go_first_then_long_text_is_cut(
        self, width: int | None, titles: list[str]
    ) -> None:
        lines = fit(self.COLUMNS, self.ROWS, width=width).splitlines()
        assert lines[0].split() == titles
        if width is not None:
            assert max(len(line) for line in lines) <= width
        if width == 15:
            assert lines[1] == "shop/Deploymen…"

    def test_the_report_table_fits_an_80_column_terminal(self) -> None:
        items = from_manifests(
            yaml.safe_dump(workload("Deployment", "a-rather-long-workload-name", container("app", port=80))),
            origin="x",
        )
        report = build_report(
            items,
            cluster=ClusterSnapshot(policies=bundled_policies()),
            profiles=EMPTY_PROFILES,
            source="test",
        )
        assert max(len(line) for line in render_table(report, width=80).splitlines()) <= 80
        assert max(len(line) for line in render_table(report, wide=True, width=80).splitlines()) <= 80
