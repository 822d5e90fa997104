"""The scrape interval and live series a build starts from, read over a share of the Pods at scale."""

from __future__ import annotations

import re

import pytest
import scenarios
from conftest import History

from webhook.profiles.prometheus import Prometheus
from webhook.profiles.sizing import interval_pattern, read_scrape


@pytest.mark.parametrize(
    ("pods", "classes"),
    [(None, 1), (0, 1), (127, 1), (128, 2), (2_047, 16), (2_048, 32), (60_000, 32)],
)
def test_the_interval_reads_one_class_of_a_few_dozen_pods_or_more(pods: float | None, classes: int) -> None:
    pattern = interval_pattern(pods)
    if classes == 1:
        assert pattern is None
        return
    assert pattern is not None
    ends = "0123456789abcdefghijklmnopqrstuvwxyz"
    matched = [c for c in ends if re.fullmatch(pattern, f"web-7d4b9c8f6-x7k2{c}")]
    assert len(matched) == -(-len(ends) // classes)  # one class of the last character


@pytest.mark.parametrize(
    ("namespaces", "pods"),
    [(("shop",), 10_000), (("partial",), 10_000)],  # partial: no Pod in the class, asked again whole
    ids=["a-class-with-pods", "an-empty-class"],
)
def test_a_share_of_the_pods_gives_the_same_interval_and_series_as_all_of_them(
    history: History, namespaces: tuple[str, ...], pods: int
) -> None:
    prom = Prometheus(history.prometheus.url)
    try:
        whole = read_scrape(prom, namespaces, end=scenarios.END, pods=None)
        share = read_scrape(prom, namespaces, end=scenarios.END, pods=pods)
    finally:
        prom.close()
    assert whole.interval() == scenarios.STEP
    assert share == whole
