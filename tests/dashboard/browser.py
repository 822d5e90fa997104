"""A real headless Chromium driven by selenium, as a person would look at the pages.

Started with the flags this kind of machine needs (no sandbox, no GPU, no background connections:
a closed network refuses them) and a fresh profile directory; console messages are kept so a test can
say "no errors". Debian's `chromium` and `chromium-driver` (scripts/test installs them).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver import Chrome
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
SIZE = (1280, 800)


def start_browser(profile: Path) -> Chrome:
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver is None:
        raise RuntimeError(
            "chromium and chromedriver are needed (scripts/test installs Debian's chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={SIZE[0]},{SIZE[1]}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = Chrome(options=options, service=Service(executable_path=driver))
    browser.set_window_size(*SIZE)
    return browser


def theme(browser: Chrome, scheme: str) -> None:
    """The browser's colour scheme (prefers-color-scheme), as a person's system setting would set it."""
    features = [{"name": "prefers-color-scheme", "value": scheme}]
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "", "features": features})


def console_log(browser: Chrome) -> list[dict[str, object]]:
    """What the page logged since the last call (the driver hands each entry out once)."""
    found: list[dict[str, object]] = browser.get_log("browser")  # type: ignore[no-untyped-call]
    return found


def console_errors(browser: Chrome) -> list[str]:
    return [str(entry["message"]) for entry in console_log(browser) if entry.get("level") == "SEVERE"]


def luminance(css_color: str) -> float:
    """Relative luminance of an `rgb(r, g, b)` / `rgba(...)` colour (WCAG)."""
    parts = css_color[css_color.index("(") + 1 : css_color.index(")")].split(",")

    def channel(value: str) -> float:
        c = float(value) / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(p) for p in parts[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(first: str, second: str) -> float:
    a, b = sorted((luminance(first), luminance(second)), reverse=True)
    return (a + 0.05) / (b + 0.05)


@dataclass(frozen=True)
class Shots:
    """Where screenshots go: the test run's own directory, and `copy_to` (docs/images) only when the run
    was asked to (`pytest --screenshots docs/images`): a normal run never touches tracked images."""

    directory: Path
    copy_to: Path | None = None


def screenshot(browser: Any, shots: Shots, name: str) -> Path:
    """A PNG of the window, in the run's directory (and copied where `shots` says)."""
    shots.directory.mkdir(parents=True, exist_ok=True)
    path = shots.directory / f"{name}.png"
    browser.save_screenshot(str(path))
    if shots.copy_to is not None:
        shots.copy_to.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, shots.copy_to / path.name)
    return path


def table_rows(browser: Chrome, css: str) -> list[list[str]]:
    rows = browser.find_elements(By.CSS_SELECTOR, f"table.{css} tbody tr")
    return [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def fits_the_window(browser: Chrome) -> bool:
    width: Any = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    return int(width) <= 0


def line_offset(browser: Chrome, chart: WebElement, line: WebElement, axis: str) -> tuple[float, float]:
    """(where the line is drawn, where its value says it must be), in the chart's own units.

    Measured on the screen: the line's box relative to the chart's, divided by the chart's scale.
    """
    measured: Any = browser.execute_script(
        "const [svg, line, axis] = arguments; const s = svg.getBoundingClientRect();"
        " const l = line.getBoundingClientRect(); const box = svg.viewBox.baseVal;"
        " return axis === 'x' ? (l.left + l.width / 2 - s.left) * box.width / s.width"
        " : (l.top + l.height / 2 - s.top) * box.height / s.height;",
        chart,
        line,
        axis,
    )
    value, top = (
        float(line.get_attribute("data-value") or 0),
        float(chart.get_attribute("data-axis-max") or 1),
    )
    if axis == "x":
        left, width = (
            float(chart.get_attribute("data-plot-left") or 0),
            float(chart.get_attribute("data-plot-width") or 0),
        )
        return float(measured), left + width * value / top
    plot_top, height = (
        float(chart.get_attribute("data-plot-top") or 0),
        float(chart.get_attribute("data-plot-height") or 0),
    )
    return float(measured), plot_top + height - height * value / top


# Every text of the chart (caption included) as [text, left, top, right, bottom] on the screen, and the
# chart's own box.
_BOXES = """
const svg = arguments[0], frame = svg.getBoundingClientRect();
const texts = Array.from(svg.querySelectorAll('text')).map(t => {
  const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.top, r.right, r.bottom]; });
return [texts, [frame.left, frame.top, frame.right, frame.bottom]];
"""


def _overlaps(texts: list[list[Any]]) -> list[tuple[str, str]]:
    found = []
    for i, (a, *ra) in enumerate(texts):
        for b, *rb in texts[i + 1 :]:
            if ra[0] < rb[2] - 0.5 and rb[0] < ra[2] - 0.5 and ra[1] < rb[3] - 0.5 and rb[1] < ra[3] - 0.5:
                found.append((a, b))
    return found


def _outside(texts: list[list[Any]], frame: list[float]) -> list[str]:
    return [
        t
        for t, left, top, right, bottom in texts
        if left < frame[0] - 0.5 or top < frame[1] - 0.5 or right > frame[2] + 0.5 or bottom > frame[3] + 0.5
    ]


def crowded_labels(browser: Chrome) -> list[str]:
    """Each chart of the page whose texts overlap or leave it, with the texts concerned."""
    problems = []
    for chart in browser.find_elements(By.CSS_SELECTOR, "svg.chart"):
        texts, frame = browser.execute_script(_BOXES, chart)
        title = chart.get_attribute("aria-label")
        problems += [f"{title}: {a!r} overlaps {b!r}" for a, b in _overlaps(texts)]
        problems += [f"{title}: {t!r} leaves the chart" for t in _outside(texts, frame)]
    return problems
