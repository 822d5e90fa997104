"""Certificate rotation while requests are in flight: no restart, no failed request."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from pathlib import Path

import httpx
from cryptography import x509

from tests.reviews import review_for
from tests.server.conftest import RunningServer, running_server


def served_serial(running: RunningServer) -> int:
    """The serial number of the certificate a brand-new connection is given."""
    port = int(running.base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            running.tls_files.client_context().wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def wait_for(condition: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


class TestRotation:
    def test_a_rotated_certificate_is_served_to_new_connections_without_failing_requests(
        self, tmp_path: Path
    ) -> None:
        with running_server(tmp_path, cert_reload_seconds=0.05) as running:
            first = served_serial(running)
            stop = threading.Event()
            results: list[int | str] = []

            def keep_calling(fresh_connections: bool) -> None:
                client = running.client()
                review = review_for(namespace="shop")
                while not stop.is_set():
                    try:
                        if fresh_connections:  # a new TLS handshake for every request
                            with running.client() as fresh:
                                results.append(running.mutate(review, fresh).status_code)
                        else:  # one kept-alive connection across the rotation
                            results.append(running.mutate(review, client).status_code)
                    except (httpx.HTTPError, ssl.SSLError) as exc:
                        results.append(repr(exc))

            workers = [threading.Thread(target=keep_calling, args=(i % 2 == 0,)) for i in range(4)]
            for worker in workers:
                worker.start()
            try:
                wait_for(lambda: len(results) >= 20)
                serials = []
                for _ in range(2):
                    serials.append(running.tls_files.rotate().cert.serial_number)
                    wait_for(lambda: served_serial(running) == serials[-1])
                    count = len(results)
                    wait_for(lambda: len(results) >= count + 20)  # noqa: B023 - evaluated at once
            finally:
                stop.set()
                for worker in workers:
                    worker.join(timeout=10)
            assert first not in serials
            assert running.tls.reloads >= 2  # a pair seen mid-write may be loaded once more, never missed
            assert [r for r in results if r != 200] == []
            assert len(results) >= 60

    def test_a_half_written_pair_keeps_the_current_certificate_until_both_files_match(
        self, tmp_path: Path
    ) -> None:
        from webhook.server.certs import make_serving_cert, write_pem

        with running_server(tmp_path, cert_reload_seconds=3600) as running:
            first = served_serial(running)
            serving = make_serving_cert(running.tls_files.ca, dns_names=("localhost",),
                                        ip_addresses=("127.0.0.1",))
            write_pem(running.tls_files.key_file, serving.key_pem, private=True)
            assert running.tls.check() is False  # new key, old certificate: not loadable
            assert served_serial(running) == first
            assert running.mutate(review_for()).status_code == 200
            write_pem(running.tls_files.cert_file, serving.cert_pem)
            assert running.tls.check() is True
            assert served_serial(running) == serving.cert.serial_number
            assert running.tls.failures == 1
