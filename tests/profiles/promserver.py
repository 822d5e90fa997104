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


class PromServer:
    def __init__(
        self, data_dir: Path, *, max_samples: int | None = None, extra_args: tuple[str, ...] = (),
        web_config: Path | None = None, probe: httpx.Client | None = None,
    ) -> None:
        """`web_config`: Prometheus' --web.config.file (TLS, basic auth); `probe` then asks /-/ready."""
        self.data_dir = data_dir
        self.extra_args = extra_args + ((f"--web.config.file={web_config}",) if web_config else ())
        self.probe = probe or httpx.Client(timeout=1.0)
        self.port = free_port()
        self.url = f"{'https' if web_config else 'http'}://127.0.0.1:{self.port}"
        self.max_samples = max_samples
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / "prometheus.log"

    def start(self, timeout: float = 60.0) -> PromServer:
        require_binaries()
        config = self.data_dir.parent / "prometheus.yml"
        config.write_text(CONFIG.format(dead_port=free_port()))
        args = [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={self.data_dir}",
            "--storage.tsdb.retention.time=60d",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        if self.max_samples:
            args.append(f"--query.max-samples={self.max_samples}")
        args += self.extra_args
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log.read_text()[-2000:]}")
            try:
                if self.probe.get(f"{self.url}/-/ready", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"prometheus not ready after {timeout}s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        self.probe.close()

    def __enter__(self) -> PromServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
