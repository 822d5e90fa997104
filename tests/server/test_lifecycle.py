"""Start-up, readiness and shutdown: refreshers in the lifespan, and `pod-tailor serve` as a process."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import orjson

from tests.reviews import review_for
from tests.server.conftest import make_tls_files, running_server
from tests.tools import free_port
from webhook.core.snapshot import ProfileSnapshot
from webhook.refreshers.state import State


class GatedRefresher:
    """A refresher whose first load completes when the test says so; records its cancellation."""

    name = "gated"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.cancelled = threading.Event()

    async def run(self, state: State) -> None:
        state.pending.add(self.name)
        try:
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            state.swap_profiles(ProfileSnapshot(taken_at=time.time(), source="gated test"))
            state.pending.discard(self.name)
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


class CrashingRefresher:
    name = "crashing"

    async def run(self, state: State) -> None:
        raise RuntimeError("cannot reach anything")


class TestReadiness:
    def test_not_ready_until_every_refresher_has_loaded_and_refreshers_stop_at_shutdown(
        self, tmp_path: Path
    ) -> None:
        gated = GatedRefresher()
        with running_server(tmp_path, refreshers=(gated,)) as running:
            client = running.client()
            not_ready = client.get("/readyz")
            assert not_ready.status_code == 503
            assert not_ready.json()["pending"] == ["gated"]
            assert client.get("/healthz").status_code == 200
            assert running.mutate(review_for()).status_code == 200  # serving does not wait for readiness
            gated.release.set()
            deadline = time.monotonic() + 5
            while client.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            assert client.get("/readyz").json()["snapshots"]["profiles"] == "gated test"
        assert gated.cancelled.is_set()

    def test_a_crashing_refresher_does_not_take_the_server_down(self, tmp_path: Path) -> None:
        with running_server(tmp_path, refreshers=(CrashingRefresher(),)) as running:
            client = running.client()
            assert client.get("/healthz").status_code == 200
            assert client.get("/readyz").json()["pending"] == ["crashing"]
            assert running.mutate(review_for()).status_code == 200


def _serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "webhook", "serve", *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )


class TestServeCommand:
    def test_serve_takes_its_settings_from_the_environment_and_logs_json_lines(self, tmp_path: Path) -> None:
        files = make_tls_files(tmp_path)
        port = free_port()
        process = _serve(
            tmp_path,
            "--host", "127.0.0.1",
            env={
                "POD_TAILOR_PORT": str(port),
                "POD_TAILOR_CERT_FILE": str(files.cert_file),
                "POD_TAILOR_KEY_FILE": str(files.key_file),
                "POD_TAILOR_DEFAULT_MODE": "dry-run",
            },
        )
        try:
            with httpx.Client(base_url=f"https://127.0.0.1:{port}", verify=files.client_context()) as client:
                deadline = time.monotonic() + 30
                while True:
                    try:
                        if client.get("/readyz").status_code == 200:
                            break
                    except httpx.ConnectError:
                        pass
                    assert process.poll() is None, process.stderr.read() if process.stderr else ""
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
                response = client.post("/mutate?timeout=10s", content=orjson.dumps(review_for(uid="env-uid")))
                answer = response.json()["response"]
                assert "patch" not in answer  # the default mode came from POD_TAILOR_DEFAULT_MODE
                assert answer["warnings"][0].startswith("pod-tailor dry-run")
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=30)
        # uvicorn shuts down gracefully, then re-raises the signal so the exit status tells the truth.
        assert process.returncode in (0, -signal.SIGTERM)
        lines = [orjson.loads(line) for line in stderr.decode().splitlines() if line.startswith("{")]
        assert "Application shutdown complete." in [line.get("message") for line in lines]
        admissions = [line for line in lines if line.get("message") == "admission"]
        assert admissions[0]["uid"] == "env-uid"
        assert admissions[0]["outcome"] == "dry-run"
        assert admissions[0]["workload"] == "default/Deployment/guestbook-ui"

    def test_serve_refuses_to_start_with_an_invalid_policy_file(self, tmp_path: Path) -> None:
        files = make_tls_files(tmp_path)
        policy = tmp_path / "policy.yaml"
        policy.write_text("policies: [not, a, mapping]\n")
        process = _serve(
            tmp_path, "--cert-file", str(files.cert_file), "--key-file", str(files.key_file),
            "--policy-file", str(policy), "--port", str(free_port()),
        )
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 2
        said = stderr.decode()  # one line, before any log line
        assert said.startswith(f"pod-tailor serve: {policy}: ")
        assert "must be a mapping" in said
        assert said.count("\n") == 1

    def test_serve_without_certificates_says_how_to_get_them(self, tmp_path: Path) -> None:
        process = _serve(tmp_path, "--port", str(free_port()))
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == 2
        assert b"scripts/run" in stderr
