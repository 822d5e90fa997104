"""Fast versions of the attack suite (bench/attack.py) against the real TLS server: behaviour, not timings."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.reviews import review_for
from tests.server.answers import answer_of, metric, patch_of
from tests.server.conftest import RunningServer, make_tls_files, running_server
from tests.tools import free_port
from webhook.core.engine import decide
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry
from webhook.refreshers.profiles import ProfileRefresher
from webhook.server.deadline import request_timeout

PROBE_PATH = "pod-tailor.io/probe-path"


def raw(server: RunningServer) -> ssl.SSLSocket:
    """A TLS connection to the server, with nothing sent yet."""
    port = int(server.base_url.rsplit(":", 1)[1])
    plain = socket.create_connection(("127.0.0.1", port), timeout=10)
    return server.tls_files.client_context().wrap_socket(plain, server_hostname="127.0.0.1")


def closed_by_server(connection: ssl.SSLSocket, *, within: float = 15.0) -> bool:
    """Whether the server ends the connection (EOF or reset) before `within` seconds pass."""
    connection.settimeout(within)
    try:
        return connection.recv(1) == b""
    except (ConnectionError, ssl.SSLError):
        return True
    except TimeoutError:
        return False


def eventually(check: Callable[[], bool], *, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def body_of(review: dict[str, Any]) -> bytes:
    return orjson.dumps(review)


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(tmp_path, header_timeout_seconds=0.5, body_timeout_seconds=0.5, max_connections=8,
                        max_in_flight=2) as running:
        yield running


class TestSlowClients:
    def test_connections_slow_to_send_their_headers_are_closed_while_others_are_answered(
        self, guarded: RunningServer
    ) -> None:
        client = guarded.client()
        assert guarded.mutate(review_for(), client).status_code == 200  # kept alive, as the API server does
        slow = [raw(guarded) for _ in range(5)]
        for connection in slow:
            connection.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\n")
        assert guarded.mutate(review_for(), client).status_code == 200
        assert all(closed_by_server(connection) for connection in slow)
        assert metric(guarded, "pod_tailor_connections_closed_total", reason="header_timeout") >= 5
        assert guarded.mutate(review_for(), client).status_code == 200

    def test_a_body_slower_than_its_timeout_is_cut_quietly(
        self, guarded: RunningServer, caplog: pytest.LogCaptureFixture
    ) -> None:
        connection = raw(guarded)
        connection.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"kind\":")
        assert closed_by_server(connection)
        assert metric(guarded, "pod_tailor_connections_closed_total", reason="body_timeout") >= 1
        assert eventually(lambda: metric(guarded, "pod_tailor_client_disconnects_total") >= 1)
        assert "Exception in ASGI application" not in caplog.text

    def test_past_the_connection_cap_the_oldest_slow_connection_makes_room(self, tmp_path: Path) -> None:
        with running_server(tmp_path, max_connections=3, header_timeout_seconds=30) as running:
            slow = [raw(running) for _ in range(3)]
            for connection in slow:
                connection.sendall(b"POST /mutate HTTP/1.1\r\n")
            assert running.mutate(review_for()).status_code == 200
            assert closed_by_server(slow[0])
            assert metric(running, "pod_tailor_connections_closed_total", reason="evicted") >= 1


class TestOverload:
    def test_past_max_in_flight_a_request_is_answered_at_once_allowed_without_a_patch(
        self, guarded: RunningServer
    ) -> None:
        waiting = [raw(guarded) for _ in range(2)]
        for connection in waiting:  # two requests whose bodies are still on their way
            connection.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
        time.sleep(0.2)
        answer = answer_of(guarded.mutate(review_for(uid="shed-me")), "shed-me")
        assert patch_of(answer) == []
        assert answer["warnings"] == [
            "pod-tailor: overloaded (too many requests at once); the Pod was admitted unchanged"
        ]
        assert metric(guarded, "pod_tailor_shed_total", reason="in_flight") == 1
        assert metric(guarded, "pod_tailor_admission_requests_total", outcome="shed") == 1

    @pytest.mark.parametrize(
        ("body", "status"),
        [
            (orjson.dumps({"apiVersion": "admission.k8s.io/v1", **review_for(uid="reordered")}), 200),
            (orjson.dumps(review_for(uid="pretty"), option=orjson.OPT_INDENT_2), 200),
            (b"not a review", 400),
        ],
        ids=["keys in another order", "indented", "garbage"],
    )
    def test_a_shed_body_not_written_as_the_api_server_writes_it_is_read_whole(
        self, guarded: RunningServer, body: bytes, status: int
    ) -> None:
        waiting = [raw(guarded) for _ in range(2)]
        for connection in waiting:
            connection.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
        time.sleep(0.2)
        response = guarded.default_client.post("/mutate?timeout=10s", content=body)
        assert response.status_code == status
        if status == 200:
            assert "admitted unchanged" in response.json()["response"]["warnings"][0]

    def test_a_request_whose_deadline_has_passed_is_shed_and_one_in_time_is_decided(
        self, server: RunningServer
    ) -> None:
        client = server.client()
        late = client.post("/mutate?timeout=1ns", content=body_of(review_for(uid="late")))
        answer = answer_of(late, "late")
        assert patch_of(answer) == []
        assert "not decided within the request's deadline" in answer["warnings"][0]
        in_time = client.post("/mutate?timeout=2s", content=body_of(review_for(uid="in-time")))
        assert patch_of(answer_of(in_time, "in-time"))

    @pytest.mark.parametrize(
        ("share", "shed_expected"),
        [pytest.param(0.9, True, id="90% of its timeout behind another decision: shed"),
         pytest.param(0.5, False, id="50% of its timeout: still decided")],
    )
    def test_a_request_waiting_behind_a_decision_is_shed_only_past_80_percent_of_its_timeout(
        self, tmp_path: Path, share: float, shed_expected: bool
    ) -> None:
        """A request arrives, then waits on the event loop while another Pod's decision takes `share` of
        its 8 s timeout; it is shed when that is past the budget of docs/hardening.md (80 %), not before.

        Kills: `deadline.BUDGET` set to 1.0 (or anything above 0.9: the 90 % row is then decided) and
        set to 0.5 or below (the 50 % row is then shed); `>=` turned into `<` in the deadline check.
        """
        # 8 s, not less: the 10 % between 80 % and 100 % must outlast the waiting request's own delays on a
        # loaded machine, or BUDGET = 1.0 sheds the 90 % row too (it did at 2 s).
        timeout, started = 8.0, threading.Event()

        def engine(pod: Any, *, namespace: str, **kwargs: Any) -> Any:
            if namespace == "slow":
                started.set()
                time.sleep(share * timeout)  # a decision holding the event loop, as a heavy one would
            return decide(pod, namespace=namespace, **kwargs)

        body = body_of(review_for(uid="waiting"))
        with running_server(tmp_path, engine=engine) as running:
            waiting = raw(running)
            head = b"POST /mutate?timeout=8s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
            waiting.sendall(head + body[:1])
            assert eventually(lambda: metric(running, "pod_tailor_in_flight_requests") == 1)  # it has arrived
            slow_body = body_of(review_for(namespace="slow", uid="slow"))
            client = running.client()
            slow = threading.Thread(target=lambda: client.post("/mutate?timeout=30s", content=slow_body))
            slow.start()
            assert started.wait(10)
            waiting.sendall(body[1:])  # the rest arrives while the loop is busy deciding the slow Pod
            slow.join(30)
            waiting.settimeout(10)
            answer = b""
            while b'"uid"' not in answer or not answer.endswith(b"}"):
                answer += waiting.recv(65536)
            waiting.close()
        response = orjson.loads(answer.partition(b"\r\n\r\n")[2])["response"]
        assert response["uid"] == "waiting"
        shed = any("not decided within the request's deadline" in w for w in response.get("warnings", []))
        assert shed is shed_expected
        assert ("patch" in response) is not shed_expected

    @pytest.mark.parametrize(
        ("query", "seconds"),
        [(b"timeout=10s", 10.0), (b"timeout=2.5s", 2.5), (b"timeout=500ms", 0.5), (b"timeout=1m0s", 30.0),
         (b"timeout=1ns", 1e-9), (b"", 3.0), (b"timeout=soon", 3.0), (b"timeout=0s", 3.0),
         (b"timeout=-1s", 3.0), (b"a=1&timeout=4s", 4.0)],
    )
    def test_the_timeout_is_read_as_a_go_duration_else_the_registered_one(
        self, query: bytes, seconds: float
    ) -> None:
        assert request_timeout(query, default=3.0) == pytest.approx(seconds)


def rss_mb() -> float:
    found = re.search(r"VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text())
    return int(found[1]) / 1024 if found else 0.0


class TestAmplification:
    def test_large_annotations_grow_neither_the_answers_nor_the_process(self, server: RunningServer) -> None:
        client = server.client()
        before = rss_mb()
        for index in range(30):
            review = review_for(uid=f"blob-{index}")
            metadata = review["request"]["object"]["metadata"]
            metadata["annotations"] = {"example.com/blob": str(index) * 250_000}
            body = body_of(review)
            response = client.post("/mutate?timeout=10s", content=body)
            assert len(response.content) <= 2 * len(body)
        for index in range(5):
            review = review_for(uid=f"path-{index}")
            path = "/" + str(index) * 2_000_000
            review["request"]["object"]["metadata"]["annotations"] = {PROBE_PATH: path}
            body = body_of(review)
            response = client.post("/mutate?timeout=10s", content=body)
            answer = answer_of(response, f"path-{index}")
            assert len(response.content) <= 2 * len(body)
            assert path not in response.text
            assert any(f"ignored {PROBE_PATH}" in warning for warning in answer["warnings"])
        assert rss_mb() - before < 150  # generous: the test process holds the clients' bodies too


class TestBadState:
    def test_a_corrupt_store_keeps_the_last_profiles_and_readiness_says_which_source_is_down(
        self, tmp_path: Path
    ) -> None:
        from decimal import Decimal

        from webhook.core.model.profile import Evidence, Recommendation

        store = tmp_path / "profiles.json"
        rec = Recommendation(Decimal("0.321"), Decimal(2**28), Evidence("14d", 4000, 300.0, 95.0, 0.15, 0.9))
        key = WorkloadKey("shop", "Deployment", "guestbook-ui")
        FileStore(store).write(ProfileDocument({key: WorkloadEntry({"guestbook-ui": rec})}, time.time(), "t"))
        refresher = ProfileRefresher(FileStore(store), interval=0.05)
        with running_server(tmp_path / "tls", refreshers=(refresher,)) as running:
            client = running.client()
            assert eventually(lambda: client.get("/readyz").json()["sources"].get("profiles", {}).get("up"))
            store.write_text('{"apiVersion": "pod-tailor.io/profiles/v1", "workloads": []}')
            assert eventually(lambda: not client.get("/readyz").json()["sources"]["profiles"]["up"])
            ready = client.get("/readyz")
            assert ready.status_code == 200
            assert ready.json()["degraded"] is True
            assert metric(running, "pod_tailor_refresher_up", refresher="profiles") == 0
            uid = review_for()["request"]["uid"]
            ops = patch_of(answer_of(running.mutate(review_for(namespace="shop")), uid))
            assert "321m" in orjson.dumps(ops).decode()  # still the last good profile


class TestDrain:
    def test_draining_turns_readiness_off_and_closes_each_connection_after_its_answer(
        self, tmp_path: Path
    ) -> None:
        with running_server(tmp_path, drain_seconds=30) as running:
            client = running.client()
            assert client.get("/readyz").status_code == 200
            running.server.drain()
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["draining"] is True
            answer = running.mutate(review_for(), client)
            assert answer.status_code == 200
            assert answer.headers["connection"] == "close"

    def test_sigterm_under_load_loses_no_request(self, tmp_path: Path) -> None:
        files = make_tls_files(tmp_path)
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "webhook", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--cert-file", str(files.cert_file), "--key-file", str(files.key_file), "--no-watch-cluster",
             "--drain-seconds", "1", "--profiles-path", str(tmp_path / "none.json")],
            stdout=subprocess.DEVNULL, stderr=(tmp_path / "serve.log").open("wb"),  # a pipe would fill
        )
        outcomes = {"answered": 0, "lost": 0, "refused": 0, "closing": 0}
        lock = threading.Lock()
        body = body_of(review_for())
        try:
            context = files.client_context()
            assert eventually(lambda: _ready(port, context), seconds=30)

            def load() -> None:
                connection: ssl.SSLSocket | None = None
                while True:
                    if connection is None:
                        try:
                            connection = context.wrap_socket(
                                socket.create_connection(("127.0.0.1", port), timeout=10),
                                server_hostname="127.0.0.1")
                        except OSError:
                            with lock:
                                outcomes["refused"] += 1
                            return
                    result = _post(connection, port, body)
                    with lock:
                        outcomes[result] += 1
                    if result != "answered":
                        with contextlib.suppress(OSError):
                            connection.close()
                        connection = None

            threads = [threading.Thread(target=load) for _ in range(4)]
            for thread in threads:
                thread.start()
            time.sleep(0.5)
            process.send_signal(signal.SIGTERM)
            for thread in threads:
                thread.join(timeout=60)
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
        assert outcomes["lost"] == 0, outcomes
        assert outcomes["answered"] > 0
        assert outcomes["closing"] > 0  # answers during the drain said Connection: close
        assert process.returncode in (0, -signal.SIGTERM)


def _ready(port: int, context: ssl.SSLContext) -> bool:
    import httpx

    try:
        with httpx.Client(verify=context) as client:
            return client.get(f"https://127.0.0.1:{port}/readyz").status_code == 200
    except httpx.HTTPError:
        return False


def _post(connection: ssl.SSLSocket, port: int, body: bytes) -> str:
    """'answered' (kept alive), 'closing' (answered with Connection: close) or 'lost' (no answer)."""
    head = f"POST /mutate HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\n\r\n"
    try:
        connection.sendall(head.encode() + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                return "lost"
            data += chunk
        header, rest = data.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"(?i)content-length: *(\d+)", header)[1])  # type: ignore[index]
        while len(rest) < length:
            chunk = connection.recv(65536)
            if not chunk:
                return "lost"
            rest += chunk
    except OSError:
        return "lost"
    return "closing" if b"connection: close" in header.lower() else "answered"

