"""Shared helpers for the cluster tests."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from tests.tools import free_port
from webhook.config.settings import Settings
from webhook.refreshers.cluster import ClusterRefresher
from webhook.refreshers.state import State


def wait_until(condition: Callable[[], object], *, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll until `condition()` is truthy: the watches run in threads, so results arrive asynchronously."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def namespace(name: str, mode: str | None = None) -> dict[str, object]:
    """A Namespace as the API server lists it, opted in with `pod-tailor.io/mode` when `mode` is given."""
    metadata: dict[str, object] = {"name": name}
    if mode is not None:
        metadata["labels"] = {"pod-tailor.io/mode": mode}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


@contextlib.contextmanager
def refreshing(kubeconfig: Path, state: State, *, resync: float = 300) -> Iterator[ClusterRefresher]:
    """A cluster refresher on the fake API server, synced once. A short `resync` asks for absent CRDs
    that often (and rebuilds the snapshot that often while every watch is connected)."""
    refresher = ClusterRefresher(Settings(kubeconfig=str(kubeconfig), resync_seconds=resync), env={})
    refresher.start(state)
    try:
        wait_until(lambda: not state.pending, what="first sync")
        yield refresher
    finally:
        refresher.stop()


@contextlib.contextmanager
def pod_tailor_serve(*, cert: Path, key: Path, kubeconfig: Path, extra: Sequence[str] = ()) -> Iterator[int]:
    """A real `pod-tailor serve` process on a free loopback port; yields the port once it accepts."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POD_TAILOR_", "KUBERNETES_"))}
    env |= {"POD_TAILOR_CERT_FILE": str(cert), "POD_TAILOR_KEY_FILE": str(key)}
    process = subprocess.Popen(
        [sys.executable, "-m", "webhook", "serve", "--host", "127.0.0.1", "--port", str(port),
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


def usable_kubectl(minimum: tuple[int, int] = (1, 27)) -> str | None:
    """kubectl on PATH if it is recent enough (kustomize v5 built in, server-side dry run), else None."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    try:
        result = subprocess.run(
            [kubectl, "version", "--client", "-o", "json"], capture_output=True, timeout=30
        )
        client = json.loads(result.stdout)["clientVersion"]
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError):
        return None
    minor = re.match(r"\d+", str(client.get("minor", "")))
    version = (int(client.get("major", 0)), int(minor[0]) if minor else 0)
    return kubectl if version >= minimum else None
