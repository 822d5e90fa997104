"""Screenshots land in the test run's own directory; docs/images gets them only when a run asks
(`pytest tests/dashboard --screenshots docs/images`, as docs/report-and-dashboard.md says)."""

from __future__ import annotations

from pathlib import Path

from tests.dashboard.browser import Shots, screenshot


class Camera:
    """Stands in for the browser: writes what a screenshot would be."""

    def save_screenshot(self, path: str) -> bool:
        Path(path).write_bytes(b"\x89PNG")
        return True


def test_a_normal_run_writes_its_screenshots_under_its_own_directory_only(tmp_path: Path) -> None:
    shot = screenshot(Camera(), Shots(tmp_path / "run"), "dashboard-namespaces-light")
    assert shot == tmp_path / "run" / "dashboard-namespaces-light.png"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == [
        Path("run"), Path("run/dashboard-namespaces-light.png")
    ]


def test_a_run_asked_for_them_copies_them_where_it_was_told(tmp_path: Path) -> None:
    screenshot(Camera(), Shots(tmp_path / "run", tmp_path / "images"), "report-html-light")
    assert (tmp_path / "images" / "report-html-light.png").read_bytes() == b"\x89PNG"
