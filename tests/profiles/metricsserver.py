"""A real metrics backend for tests and benchmarks: a child process on a free loopback port, a temp directory.

Prometheus (promserver.py) and VictoriaMetrics (vmserver.py) are started, waited for and stopped the same
way; each says only what differs, as data: its program and Debian package, its command line, and the
path that answers 200 once it serves queries.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import ClassVar, Self

import httpx

from tests.tools import free_port, require_programs

__all__ = ["MetricsServer"]


class MetricsServer:
    program: ClassVar[str]  # the executable; it also names the log file and the errors
    package: ClassVar[str]  # the Debian package scripts/test installs it from
    ready_path: ClassVar[str]  # answers 200 once the backend serves queries

    def __init__(self, data_dir: Path, *, scheme: str = "http", probe: httpx.Client | None = None) -> None:
        """`probe` asks the readiness path (give one that trusts the backend's TLS, or knows its password)."""
        self.data_dir = data_dir
        self.probe = probe or httpx.Client(timeout=1.0)
        self.port = free_port()
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / f"{self.program}.log"

    def arguments(self) -> list[str]:
        """The command line after the program's name, written when the backend starts."""
        raise NotImplementedError

    def start(self, timeout: float = 60.0) -> Self:
        require_programs(self.program, package=self.package)
        args = [self.program, *self.arguments()]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.program} exited: {self.log.read_text()[-2000:]}")
            try:
                if self.probe.get(f"{self.url}{self.ready_path}", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.program} not ready after {timeout}s: {self.log.read_text()[-2000:]}")

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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
