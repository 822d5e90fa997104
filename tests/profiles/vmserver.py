"""A real VictoriaMetrics (Debian's `victoria-metrics`) for tests: the second Prometheus-compatible backend.

Started on a free loopback port over a temp directory; history is imported through its Prometheus
text import (`/api/v1/import/prometheus`, timestamps in milliseconds) from the same OpenMetrics the
Prometheus tests backfill, then flushed so queries see it. `dedup` (`-dedup.minScrapeInterval`)
keeps one sample per series and interval: VictoriaMetrics' downsampling, as a long-term store serves
older data.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import httpx

from tests.tools import free_port


def require_binary() -> None:
    if shutil.which("victoria-metrics") is None:
        raise RuntimeError("victoria-metrics not installed (scripts/test installs Debian's victoria-metrics)")


class VmServer:
    def __init__(self, data_dir: Path, *, dedup: str | None = None) -> None:
        self.data_dir, self.dedup = data_dir, dedup
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / "victoria-metrics.log"

    def start(self, timeout: float = 60.0) -> VmServer:
        require_binary()
        args = ["victoria-metrics", f"-storageDataPath={self.data_dir}",
                f"-httpListenAddr=127.0.0.1:{self.port}", "-retentionPeriod=100y", "-search.latencyOffset=0s",
                "-search.disableCache", "-loggerLevel=ERROR"]
        if self.dedup:
            args.append(f"-dedup.minScrapeInterval={self.dedup}")
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"victoria-metrics exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"victoria-metrics not ready after {timeout}s")

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

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> VmServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
