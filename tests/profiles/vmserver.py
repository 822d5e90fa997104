"""A real VictoriaMetrics (Debian's `victoria-metrics`) for tests: the second Prometheus-compatible backend.

Started on a free loopback port over a temp directory; history is imported through its Prometheus
text import (`/api/v1/import/prometheus`, timestamps in milliseconds) from the same OpenMetrics the
Prometheus tests backfill, then flushed so queries see it. `dedup` (`-dedup.minScrapeInterval`)
keeps one sample per series and interval: VictoriaMetrics' downsampling, as a long-term store serves
older data.
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.profiles.metricsserver import MetricsServer


class VmServer(MetricsServer):
    program = "victoria-metrics"
    package = "victoria-metrics"
    ready_path = "/health"

    def __init__(self, data_dir: Path, *, dedup: str | None = None) -> None:
        super().__init__(data_dir)
        self.dedup = dedup

    def arguments(self) -> list[str]:
        args = [f"-storageDataPath={self.data_dir}", f"-httpListenAddr=127.0.0.1:{self.port}",
                "-retentionPeriod=100y", "-search.latencyOffset=0s", "-search.disableCache",
                "-loggerLevel=ERROR"]
        if self.dedup:
            args.append(f"-dedup.minScrapeInterval={self.dedup}")
        return args

    def load(self, openmetrics: Path) -> None:
        """Import an OpenMetrics file (seconds) as Prometheus text (milliseconds), then flush."""
        lines = []
        with openmetrics.open() as source:
            for line in source:
                if not line.strip() or line.startswith("#"):
                    continue
                head, value, stamp = line.rsplit(" ", 2)
                lines.append(f"{head} {value} {int(float(stamp) * 1000)}")
        for start in range(0, len(lines), 50_000):
            body = "\n".join(lines[start:start + 50_000]) + "\n"
            httpx.post(f"{self.url}/api/v1/import/prometheus", content=body, timeout=120).raise_for_status()
        httpx.get(f"{self.url}/internal/force_flush", timeout=60).raise_for_status()
