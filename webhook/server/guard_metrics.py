"""Metrics of the server's limits and of background sources, read from their counters at scrape time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from webhook.admission import VerdictCache
from webhook.refreshers.health import Health
from webhook.server.overload import Gate, ShedReason
from webhook.server.protocol import ConnectionGuard

__all__ = ["LimitCounts", "ServerCollector"]

_CUTS = ("header_timeout", "body_timeout", "evicted", "refused")


@dataclass
class LimitCounts:
    """Plain counters the request path bumps (no locks: the event loop's one thread)."""

    disconnects: int = 0  # clients gone before their body was read


class ServerCollector(Collector):
    def __init__(self, *, gate: Gate, cache: VerdictCache, health: Health, counts: LimitCounts,
                 guard: ConnectionGuard | None) -> None:
        self.gate, self.cache, self.health, self.counts, self.guard = gate, cache, health, counts, guard

    def collect(self) -> Iterator[Metric]:
        shed = CounterMetricFamily("pod_tailor_shed", "Requests allowed unchanged, undecided.",
                                   labels=["reason"])
        for reason in ShedReason:
            shed.add_metric([reason.value], self.gate.shed[reason])
        yield shed
        yield GaugeMetricFamily("pod_tailor_in_flight_requests", "Requests being read or decided.",
                                value=self.gate.in_flight)
        yield GaugeMetricFamily("pod_tailor_in_flight_bytes", "Declared body bytes of requests in flight.",
                                value=self.gate.in_flight_bytes)
        yield CounterMetricFamily("pod_tailor_client_disconnects",
                                  "Clients that went away before their request was read.",
                                  value=self.counts.disconnects)
        if self.guard is not None:
            yield GaugeMetricFamily("pod_tailor_open_connections", "Open client connections.",
                                    value=self.guard.open)
            cut = CounterMetricFamily("pod_tailor_connections_closed",
                                      "Connections the server closed, by reason.", labels=["reason"])
            for cause in _CUTS:
                cut.add_metric([cause], self.guard.cut[cause])
            yield cut
        yield GaugeMetricFamily("pod_tailor_verdict_cache_entries", "Verdicts kept.", value=len(self.cache))
        yield GaugeMetricFamily("pod_tailor_verdict_cache_bytes", "Bytes the verdict cache counts as held.",
                                value=self.cache.bytes)
        lookups = CounterMetricFamily("pod_tailor_verdict_cache_lookups", "Verdict cache lookups, by result.",
                                      labels=["result"])
        lookups.add_metric(["hit"], self.cache.hits)
        lookups.add_metric(["miss"], self.cache.misses)
        lookups.add_metric(["oversized"], self.cache.oversized)
        yield lookups
        yield CounterMetricFamily(
            "pod_tailor_verdict_cache_resumed",
            "Cache hits decided again: the room the namespace's quotas leave moved out of the verdict's"
            " bands since it was decided.", value=self.cache.decided_again)
        up = GaugeMetricFamily("pod_tailor_refresher_up",
                               "1 if the last refresh worked; 0: the last good snapshot is served.",
                               labels=["refresher"])
        failures = CounterMetricFamily("pod_tailor_refresher_failures", "Failed refreshes, by source.",
                                       labels=["refresher"])
        restarts = CounterMetricFamily("pod_tailor_refresher_restarts",
                                       "Refreshers started again after a crash.", labels=["refresher"])
        for name, entry in self.health.items():
            up.add_metric([name], 1 if entry.up else 0)
            failures.add_metric([name], entry.failures)
            restarts.add_metric([name], entry.restarts)
        yield up
        yield failures
        yield restarts
