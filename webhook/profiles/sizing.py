"""What a build reads first: the scrape interval and the live series per namespace and container.

They size the big passes (shards, the rate window), so they are asked before anything else, in one
query over the last hour of the memory series. Counting every namespace's series touches every
series once; the samples per series that give the scrape interval (their 90th percentile by
namespace: a series that lived the whole hour, which the Pods started within it cannot pull down)
need only a handful of them, yet asked over every series they touch them all a second time, which
at a large fleet is most of what the build's first query costs Prometheus' heap
(docs/benchmarks.md). So with enough Pods (kube-state-metrics' count, asked already by the HPA
query, else the Pod names of the last hour's memory series, an index lookup) the interval reads one
class of Pod names (`shards.Shard`), as many Pods as a few dozen per class; a class that comes back
empty is asked again whole. cAdvisor's series are all scraped from the kubelets at one interval, so
any sizable share of them gives the same interval.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from webhook.profiles import queries
from webhook.profiles.prometheus import Prometheus, PrometheusError, Sample
from webhook.profiles.shards import MAX_CLASSES, Shard

__all__ = ["Live", "Scrape", "interval_pattern", "read_scrape"]

_PODS_PER_CLASS = 64  # the fewest Pods a class should hold for its interval to be the fleet's
_WHOLE_BELOW = 2 * _PODS_PER_CLASS  # fewer Pods: every series is cheap to read


def interval_pattern(pods: float | None) -> str | None:
    """The Pod-name class the scrape interval is read from for a fleet of `pods` Pods (None: every Pod)."""
    if pods is None or pods < _WHOLE_BELOW:
        return None
    classes = min(MAX_CLASSES, 2 ** int(math.log2(pods / _PODS_PER_CLASS)))
    return Shard(last=(classes, 0)).pod_pattern()


Live = dict[str, dict[str, float]]  # namespace -> container -> live series


@dataclass(frozen=True, slots=True)
class Scrape:
    """What the sizing reads found: samples per hour of a live series by namespace, in the newest hour
    and in the window's oldest (a long-term store's downsampled data), and the live series."""

    per_hour: Mapping[str, float]
    live: Live
    oldest: Mapping[str, float] = field(default_factory=dict)

    def interval(self, namespace: str | None = None) -> float:
        """Seconds between samples, the coarsest of both hours (of `namespace`, else of every
        namespace); 0 when unknown."""
        rates = [hour[ns] for hour in (self.per_hour, self.oldest) for ns in hour
                 if (namespace is None or ns == namespace) and hour[ns] > 0]
        if not rates and namespace is not None:
            return self.interval()
        return 3600 / min(rates) if rates else 0.0

    def intervals(self) -> dict[str, float]:
        return {ns: self.interval(ns) for ns in set(self.per_hour) | set(self.oldest) | set(self.live)}

    def total(self) -> float:
        """Live series over every namespace and container."""
        return sum(sum(containers.values()) for containers in self.live.values())


def read_scrape(
    prom: Prometheus, namespaces: Sequence[str], *, end: float, pods: float | None, start: float | None = None
) -> Scrape:
    """Samples per hour of a live series by namespace, and live series per namespace and container.

    `pods`: how many Pods there are, if kube-state-metrics said; else they are listed. `start`: where
    the build's window starts; the samples per hour are asked there too (an hour in), so that data
    a long-term store downsampled is read at its own resolution, never a finer one.
    """
    if pods is None:
        with contextlib.suppress(PrometheusError):  # a backend that cannot list: every Pod is read
            memory = queries.selector(queries.MEMORY_METRIC, namespaces)
            pods = len(prom.label_values("pod", match=memory, start=end - 3600, end=end))
    pattern = interval_pattern(pods)
    per_hour, live = _read(prom.instant(queries.scrape_interval(namespaces, pod_pattern=pattern), at=end))
    if not per_hour and pattern is not None and live:  # the class held no Pod: ask them all
        per_hour, _ = _read(prom.instant(queries.scrape_interval(namespaces), at=end))
    oldest: dict[str, float] = {}
    if start is not None and start + 3600 < end - 3600:
        with contextlib.suppress(PrometheusError):
            at = start + 3600
            query = queries.samples_per_hour(namespaces, pod_pattern=pattern)
            oldest, _ = _read(prom.instant(query, at=at))
            if not oldest and pattern is not None:
                oldest, _ = _read(prom.instant(queries.samples_per_hour(namespaces), at=at))
    return Scrape(per_hour, live, oldest)


def _read(answer: Iterable[Sample]) -> tuple[dict[str, float], Live]:
    per_hour: dict[str, float] = {}
    live = defaultdict[str, dict[str, float]](dict)
    for sample in answer:
        namespace = sample.labels.get("namespace", "")
        if sample.labels.get("stat") == "per_hour":
            if sample.value > 0:
                per_hour[namespace] = sample.value
        elif sample.labels.get("stat") == "series":
            live[namespace][sample.labels.get("container", "")] = sample.value
    return per_hour, dict(live)
