"""Shared helpers for the cluster tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path


def wait_until(condition: Callable[[], object], *, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll until `condition()` is truthy: the watches run in threads, so results arrive asynchronously."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def pod_tailor_serve(*, cert: Path, key: Path, kubeconfig: Path, extra: Sequence[str] = ()) -> Iterator[int]:
    """A real `pod-tailor serve` process on a free loopback port; yields the port once it accepts."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POD_TAILOR_", "KUBERNETES_"))}
    env |= {"POD_TAILOR_CERT_FILE": str(cert), "POD_TAILOR_KEY_FILE": str(key)}
    process = subprocess.Popen(
        [sys.executable, "-m", "webhook.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--kubeconfig", str(kubeconfig), "--log-level", "warning", *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        process.stderr.read().decode() if process.stderr else "no output"
                    ) from None
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(10)
