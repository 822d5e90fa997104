"""A real Prometheus for tests and the benchmark: backfilled history, a free loopback port, a temp TSDB.

The history is written as OpenMetrics, turned into TSDB blocks by `promtool tsdb create-blocks-from
openmetrics` directly inside the data directory, and only then is `prometheus` started on that
directory, so the blocks are loaded at start-up and lie entirely before the (empty) head.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx

from tests.profiles.metricsserver import MetricsServer
from tests.tools import free_port, require_programs

# A remote-read endpoint that refuses connections, consulted only for selectors with
# namespace="partial": queries for that namespace get real "partial data" warnings from Prometheus.
CONFIG = """\
global:
  scrape_interval: 1m
remote_read:
  - url: http://127.0.0.1:{dead_port}/api/v1/read
    read_recent: true
    remote_timeout: 2s
    required_matchers:
      namespace: partial
"""


def require_binaries() -> None:
    require_programs("prometheus", "promtool", package="prometheus")


def backfill(openmetrics: Path, data_dir: Path) -> float:
    """Create blocks from `openmetrics` in `data_dir`; returns seconds taken."""
    require_binaries()
    data_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=486h",
         str(openmetrics), str(data_dir)],
        check=True, capture_output=True, text=True,
    )
    return time.monotonic() - started


class PromServer(MetricsServer):
    program = "prometheus"
    package = "prometheus"
    ready_path = "/-/ready"

    def __init__(
        self, data_dir: Path, *, max_samples: int | None = None, extra_args: tuple[str, ...] = (),
        web_config: Path | None = None, probe: httpx.Client | None = None,
    ) -> None:
        """`web_config`: Prometheus' --web.config.file (TLS, basic auth); `probe` then asks /-/ready."""
        super().__init__(data_dir, scheme="https" if web_config else "http", probe=probe)
        self.extra_args = extra_args + ((f"--web.config.file={web_config}",) if web_config else ())
        self.max_samples = max_samples

    def arguments(self) -> list[str]:
        config = self.data_dir.parent / "prometheus.yml"
        config.write_text(CONFIG.format(dead_port=free_port()))
        args = [
            f"--config.file={config}",
            f"--storage.tsdb.path={self.data_dir}",
            "--storage.tsdb.retention.time=60d",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        if self.max_samples:
            args.append(f"--query.max-samples={self.max_samples}")
        return args + list(self.extra_args)
