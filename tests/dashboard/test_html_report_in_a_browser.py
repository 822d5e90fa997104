"""`pod-tailor report -o html` opened from a file in a real Chromium: one self-contained page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kubefake import FakeKube
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By

from tests.dashboard.browser import (
    Shots,
    console_errors,
    console_log,
    contrast,
    fits_the_window,
    line_offset,
    luminance,
    screenshot,
    table_rows,
    theme,
)
from webhook.commands import main


@pytest.fixture(scope="module")
def html_report(
    demo_cluster: tuple[FakeKube, Path], demo_store: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    _, kubeconfig = demo_cluster
    target = tmp_path_factory.mktemp("report") / "report.html"
    code = main(
        [
            "report",
            "--kubeconfig",
            str(kubeconfig),
            "--profiles-path",
            str(demo_store),
            "-o",
            "html",
            "--output-file",
            str(target),
        ]
    )
    assert code == 0
    return target


def test_it_needs_nothing_from_the_network(html_report: Path) -> None:
    text = html_report.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert '<link rel="stylesheet"' not in text


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_it_opens_offline_without_errors_and_reads_in_both_themes(
    browser: Chrome, html_report: Path, shots: Shots, scheme: str
) -> None:
    theme(browser, scheme)
    console_log(browser)
    browser.get(html_report.as_uri())
    assert console_errors(browser) == []
    assert fits_the_window(browser)
    body = browser.find_element(By.TAG_NAME, "body")
    background, text = body.value_of_css_property("background-color"), body.value_of_css_property("color")
    assert (luminance(background) < 0.1) is (scheme == "dark")
    assert contrast(background, text) >= 7
    screenshot(browser, shots, f"report-html-{scheme}")


def test_its_tables_hold_every_namespace_and_container(browser: Chrome, html_report: Path) -> None:
    browser.get(html_report.as_uri())
    assert [row[0] for row in table_rows(browser, "namespaces")] == ["shop", "trial"]
    containers = [(row[1], row[2]) for row in table_rows(browser, "containers")]
    assert containers == [
        ("CronJob/nightly", "job"),
        ("Deployment/web", "app"),
        ("Deployment/web", "envoy"),
        ("Deployment/web", "(pod)"),  # the grace period: the Pod's own row, not its first container's
        ("StatefulSet/db", "postgres"),
        ("StatefulSet/db", "(pod)"),
        ("DaemonSet/agent", "agent"),
        ("Deployment/api", "app"),
        ("Deployment/api", "(pod)"),
    ]


def test_a_header_click_sorts_the_table(browser: Chrome, html_report: Path) -> None:
    browser.get(html_report.as_uri())
    header = browser.find_elements(By.CSS_SELECTOR, "table.containers th")[3]  # CPU request
    header.click()
    rows = browser.find_elements(By.CSS_SELECTOR, "table.containers tbody tr")
    keys = [float(r.find_elements(By.TAG_NAME, "td")[3].get_attribute("data-sort") or 0) for r in rows]
    assert keys == sorted(keys)
    header.click()
    rows = browser.find_elements(By.CSS_SELECTOR, "table.containers tbody tr")
    assert [
        float(r.find_elements(By.TAG_NAME, "td")[3].get_attribute("data-sort") or 0) for r in rows
    ] == sorted(keys, reverse=True)


def test_a_workload_link_opens_its_charts_with_the_request_at_its_value(
    browser: Chrome, html_report: Path
) -> None:
    browser.get(html_report.as_uri())
    browser.find_elements(By.LINK_TEXT, "Deployment/web")[0].click()
    details = browser.find_element(By.ID, "w-shop-Deployment-web")
    details.find_element(By.TAG_NAME, "summary").click()
    charts = details.find_elements(By.CSS_SELECTOR, "svg.chart.distribution")
    assert len(charts) == 4
    request = charts[0].find_element(By.CSS_SELECTOR, "line.marker.request-after")
    drawn, expected = line_offset(browser, charts[0], request, "x")
    assert drawn == pytest.approx(expected, abs=1.0)
