"""What the attack bench (bench/attack.py) and its fast tests share: the real server as a process,
its memory read from /proc, and a raw HTTP/1.1-over-TLS client that shows what a connection did.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.tools import free_port

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"

__all__ = ["HOST", "Answer", "Client", "RssSampler", "Server", "rss_mb", "serving"]


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    context: ssl.SSLContext
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def get(self, path: str) -> httpx.Response:
        with httpx.Client(verify=self.context, timeout=10) as client:
            return client.get(f"https://{HOST}:{self.port}{path}")

    def metric(self, name: str, **labels: str) -> float | None:
        """A sample of the server's /metrics, or None when absent."""
        wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
        pattern = re.escape(name) + (r"\{" + re.escape(wanted) + r"\}" if labels else "") + r" (\S+)"
        found = re.search(r"(?m)^" + pattern, self.get("/metrics").text)
        return float(found[1]) if found else None


@contextlib.contextmanager
def serving(
    ca: Path, cert: Path, key: Path, *args: str, cpu: str | None = "0", ready: bool = True,
    log_dir: Path,
) -> Iterator[Server]:
    """`pod-tailor serve` as a process (pinned to `cpu` when taskset exists), stopped on exit."""
    port = free_port()
    command = [sys.executable, "-m", "webhook", "serve", "--host", HOST, "--port", str(port),
               "--cert-file", str(cert), "--key-file", str(key), "--log-level", "warning", *args]
    if cpu is not None and shutil.which("taskset"):
        command = ["taskset", "-c", cpu, *command]
    log = log_dir / f"serve-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=sink)
    server = Server(port, process, ssl.create_default_context(cafile=str(ca)), log)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                answer = server.get("/readyz")
                if answer.status_code == 200 or not ready:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start; see {log}")
            time.sleep(0.1)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)  # a second signal would skip the drain: one is enough
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (VmRSS)."""
    text = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", text)
    return int(found[1]) / 1024 if found else 0.0


class RssSampler:
    """Samples a process's RSS every 20 ms in a thread; `peak` is the highest seen."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, rss_mb(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            with contextlib.suppress(OSError):
                self.peak = max(self.peak, rss_mb(self.pid))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Answer:
    status: int
    headers: bytes
    body: bytes
    seconds: float

    @property
    def closes(self) -> bool:
        return b"connection: close" in self.headers.lower()


@dataclass
class Client:
    """One TLS connection speaking just enough HTTP/1.1; `post` raises ConnectionError if it ends early."""

    port: int
    context: ssl.SSLContext
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    opened: list[float] = field(default_factory=list)

    async def connect(self) -> None:
        self.close()
        self.reader, self.writer = await asyncio.open_connection(
            HOST, self.port, ssl=self.context, server_hostname=HOST
        )
        self.opened.append(time.monotonic())

    async def post(self, body: bytes, *, path: str = "/mutate?timeout=10s",
                   headers: Sequence[str] = ()) -> Answer:
        if self.writer is None:
            await self.connect()
        assert self.reader is not None
        assert self.writer is not None
        started = time.perf_counter()
        extra = "".join(f"{line}\r\n" for line in headers)
        head = (f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n{extra}"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        try:
            self.writer.write(head + body)
            await self.writer.drain()
            header = await self.reader.readuntil(b"\r\n\r\n")
            status = int(header.split(b" ", 2)[1])
            length = re.search(rb"(?i)content-length: *(\d+)", header)
            payload = await self.reader.readexactly(int(length[1])) if length else b""
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ssl.SSLError) as exc:
            self.close()
            raise ConnectionError(str(exc)) from exc
        answer = Answer(status, header, payload, time.perf_counter() - started)
        if answer.closes:
            self.close()
        return answer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
