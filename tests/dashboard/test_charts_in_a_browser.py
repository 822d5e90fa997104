"""The charts' labels, measured in a real Chromium: no two texts of a chart overlap and none leaves the
chart, for the crowded cases a fleet produces (request and limit a few per cent apart, now and after
close together, everything at the right edge, a start-up peak far above the rest).

The charts are drawn alone on a page of their own (the same `document` the dashboard serves), so the
layout is checked on the cases that are hard, not only on the demo's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium.webdriver import Chrome

from tests.dashboard.browser import crowded_labels
from webhook.report.charts import Marker, distribution, hourly
from webhook.report.page import document

GIB = 2**30
QUANTILES = {"p50": 0.30, "p90": 0.34, "p95": 0.35, "p99": 0.36, "max": 0.40}
CASES: dict[str, list[Marker]] = {
    "request and limit 4 % apart": [
        Marker("request-after", "request after 500m", 0.50),
        Marker("limit-after", "limit after 520m", 0.52),
    ],
    "now and after of both close": [
        Marker("request-now", "request now 400m", 0.40),
        Marker("request-after", "request after 410m", 0.41),
        Marker("limit-now", "limit now 420m", 0.42),
        Marker("limit-after", "limit after 430m", 0.43),
    ],
    "all at the right edge": [
        Marker("request-now", "request now 1.9", 1.9),
        Marker("request-after", "request after 1.95", 1.95),
        Marker("limit-after", "limit after 2", 2.0),
    ],
    "five lines and a start-up peak": [
        Marker("request-now", "request now 100m", 0.10),
        Marker("request-after", "request after 350m", 0.35),
        Marker("limit-now", "limit now 360m", 0.36),
        Marker("limit-after", "limit after 700m", 0.70),
        Marker("startup", "start-up peak 1.2", 1.2),
    ],
}


@pytest.fixture(scope="module")
def chart_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    charts = []
    for name, markers in CASES.items():
        charts.append(distribution("cpu", QUANTILES, markers, title=f"distribution: {name}", unit="cores"))
        curve: list[float | None] = [0.3 + 0.01 * hour for hour in range(24)]
        charts.append(hourly("cpu", curve, markers, title=f"hourly: {name}", unit="cores"))
    memory = [
        Marker("request-after", "request after 600Mi", 600 * 2**20),
        Marker("limit-after", "limit after 640Mi", 640 * 2**20),
    ]
    charts.append(
        distribution("memory", {"p50": 0.5 * GIB, "max": 0.55 * GIB}, memory, title="memory", unit="bytes")
    )
    path = tmp_path_factory.mktemp("charts") / "charts.html"
    path.write_text(document("charts", '<div class="charts">' + "".join(charts) + "</div>"))
    return path.as_uri()


def test_the_hard_cases_have_no_overlapping_label_and_none_outside_its_chart(
    browser: Chrome, chart_page: str
) -> None:
    browser.get(chart_page)
    found = crowded_labels(browser)
    assert found == [], "\n".join(found)


def test_the_check_itself_sees_an_overlap(browser: Chrome, tmp_path: Path) -> None:
    """Two texts drawn at one place must be caught, or the test above could pass on anything."""
    svg = (
        '<svg class="chart" aria-label="t" viewBox="0 0 200 40" width="200" height="40">'
        '<text x="10" y="20">request after 500m</text><text x="30" y="22">limit after 520m</text>'
        '<text x="190" y="38">outside</text></svg>'
    )
    page = tmp_path / "bad.html"
    page.write_text(document("bad", svg))
    browser.get(page.as_uri())
    found = crowded_labels(browser)
    assert "t: 'request after 500m' overlaps 'limit after 520m'" in found
    assert "t: 'outside' leaves the chart" in found
