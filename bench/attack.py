"""Attack suite: the real `pod-tailor serve` over TLS, attacked as an attacker or an unlucky operator would.

    .venv/bin/python bench/attack.py [--quick] [--only NAME ...]

Scenarios (issue 16), each printing what it measured:
  hostile     malformed, deep, huge and lying bodies: never a 5xx, the server alive, RSS bounded
  amplify     300 distinct Pods with a 250 KB annotation, then 20 with a 2 MB probe path: RSS growth
              (< 150 MB), no answer over twice its request, the long path refused with a warning
  slowloris   1,000 connections sending headers a byte a second: all cut (within 10 s), /mutate
              answered meanwhile (median < 200 ms), RSS peak (< +100 MB)
  overload    300 clients, most opening a new TLS connection per request, `?timeout=2s`: every answer
              within 2.5 s (allowed without a patch when shed); throughput at 1x before and after
  sigterm     SIGTERM under load: requests lost (0), readiness false during the drain
  badstate    corrupt and missing profile store, invalid policy ConfigMap (the fake API server):
              refresher alive, last good state served, /readyz and metrics say so
The server runs on CPU 0, the attackers on CPU 1. Numbers are printed as measured, whatever they are.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from attackkit import HOST, Client, RssSampler, Server, cpu_of, rss_mb, serving
from attackscenarios import badstate

from tests.reviews import review_for
from tests.shared import review_files

PROBE_PATH = "pod-tailor.io/probe-path"


def review(uid: str, *, annotations: dict[str, str] | None = None, name: str | None = None) -> bytes:
    """The sample review (a Deployment Pod) with its own uid, compact as the API server writes it."""
    return orjson.dumps(review_for(uid=uid, annotations=annotations, name=name))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def response_of(body: bytes) -> dict[str, Any]:
    found: dict[str, Any] = orjson.loads(body)["response"]
    return found


# ---------------------------------------------------------------- hostile bodies


def _request(body: bytes) -> bytes:
    head = f"POST /mutate?timeout=10s HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def hostile_requests() -> dict[str, bytes]:
    """Raw HTTP requests, each on its own connection."""
    huge = "x" * 2_000_000
    chunk = b"a" * 65536
    chunked = b"".join(b"%x\r\n" % len(chunk) + chunk + b"\r\n" for _ in range(64)) + b"0\r\n\r\n"
    return {
        "empty body": _request(b""),
        "not JSON": _request(b"not json at all"),
        "100k open brackets": _request(b"[" * 100_000),
        "50k nested objects": _request(b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
        "invalid UTF-8": _request(review("utf8").replace(b'"request":{', b'"request":{"\xff\xfe":1,', 1)),
        "2 MB string in an unread field": _request(review("big", annotations={"example.com/x": huge})),
        "1e400 in an unread field": _request(
            review("num").replace(b'"dryRun":false', b'"dryRun":false,"n":1e400')
        ),
        "uid of 1 MB": _request(review("u" * 1_000_000)),
        "body over 3 MiB": _request(review("over", annotations={"example.com/x": "y" * (3 * 2**20)})),
        "declares 3 MiB + 1, sends 10 bytes": (
            f"POST /mutate HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {3 * 2**20 + 1}\r\n\r\n0123456789"
        ).encode(),
        "chunked, 4 MiB": (
            f"POST /mutate HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n".encode() + chunked
        ),
        "headers of 1 MB": f"POST /mutate HTTP/1.1\r\nHost: {HOST}\r\nX: {huge[:1_000_000]}\r\n\r\n".encode(),
        "not HTTP": b"\x16\x03\x01 hello?\r\n\r\n",
    }


async def _raw(server: Server, payload: bytes) -> int:
    """Send raw bytes after the TLS handshake; the status the server answered (0: it closed without one)."""
    reader, writer = await asyncio.open_connection(
        HOST, server.port, ssl=server.context, server_hostname=HOST
    )
    try:
        writer.write(payload)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 30)
        return int(line.split(b" ", 2)[1]) if line else 0
    except (TimeoutError, OSError, IndexError, ValueError):
        return 0
    finally:
        writer.close()


async def hostile(server: Server) -> dict[str, int]:
    return {name: await _raw(server, payload) for name, payload in hostile_requests().items()}


# ---------------------------------------------------------------- amplification


async def amplify(server: Server, *, pods: int, long_paths: int) -> dict[str, Any]:
    rng = random.Random(16)
    clients = [Client(server.port, server.context) for _ in range(4)]
    ratios: list[float] = []
    refused = 0
    before = rss_mb(server.pid)
    with RssSampler(server.pid) as rss:
        for index in range(pods):
            blob = "".join(rng.choices("abcdefghij", k=250_000))
            body = review(f"amp-{index}", annotations={"example.com/blob": blob}, name=f"web-{index}")
            answer = await clients[index % 4].post(body)
            ratios.append(len(answer.body) / len(body))
        for index in range(long_paths):
            path = "/" + "".join(rng.choices("abcdefghij", k=2_000_000))
            body = review(f"path-{index}", annotations={PROBE_PATH: path})
            answer = await clients[index % 4].post(body)
            ratios.append(len(answer.body) / len(body))
            warnings = response_of(answer.body).get("warnings", [])
            warned = any(f"ignored {PROBE_PATH}" in warning for warning in warnings)
            refused += warned and path.encode() not in answer.body
    for client in clients:
        client.close()
    return {"rss_before": before, "rss_peak": rss.peak, "rss_after": rss_mb(server.pid),
            "max_ratio": max(ratios), "refused": refused, "long_paths": long_paths}


# ---------------------------------------------------------------- slowloris


async def slowloris(server: Server, *, connections: int, seconds: float) -> dict[str, Any]:
    cut_after: list[float] = []
    probe_latency: list[float] = []
    probe = Client(server.port, server.context)
    await probe.connect()  # the API server's kept-alive connection, open before the flood
    stop = asyncio.Event()

    async def slow() -> None:
        try:
            reader, writer = await asyncio.open_connection(HOST, server.port, ssl=server.context,
                                                           server_hostname=HOST)
        except OSError:
            return
        opened = time.monotonic()
        writer.write(b"POST /mutate HTTP/1.1\r\nHost: x\r\n")
        try:
            while not stop.is_set():
                writer.write(b"X")
                await writer.drain()
                try:
                    if await asyncio.wait_for(reader.read(1), 1.0) == b"":
                        break  # the server closed it
                except TimeoutError:
                    continue
        except (OSError, ssl.SSLError):
            pass
        cut_after.append(time.monotonic() - opened)
        writer.close()

    async def prober() -> None:
        index = 0
        while not stop.is_set():
            try:
                answer = await probe.post(review(f"probe-{index}"))
                probe_latency.append(answer.seconds)
            except ConnectionError:
                probe_latency.append(float("inf"))
            index += 1
            await asyncio.sleep(0.1)

    before = rss_mb(server.pid)
    with RssSampler(server.pid) as rss:
        probing = asyncio.create_task(prober())
        tasks = [asyncio.create_task(slow()) for _ in range(connections)]
        await asyncio.wait(tasks, timeout=seconds)
        stop.set()
        await asyncio.gather(*tasks, probing)
    probe.close()
    return {"cut": len([c for c in cut_after if c < seconds]), "connections": connections,
            "max_cut_after": max(cut_after, default=float("nan")),
            "probe_median_ms": statistics.median(probe_latency) * 1000 if probe_latency else float("nan"),
            "probes": len(probe_latency), "rss_before": before, "rss_peak": rss.peak}


# ---------------------------------------------------------------- overload


async def closed_loop(
    server: Server, bodies: list[bytes], *, clients: int, seconds: float
) -> tuple[float, float]:
    """(requests per second, server CPU us per request) from `clients` kept-alive connections in turn."""
    done = 0
    cpu = cpu_of(server.pid)
    end = time.monotonic() + seconds

    async def one(offset: int) -> None:
        nonlocal done
        client = Client(server.port, server.context)
        index = offset
        while time.monotonic() < end:
            await client.post(bodies[index % len(bodies)])
            done += 1
            index += clients
        client.close()

    started = time.monotonic()
    await asyncio.gather(*(one(offset) for offset in range(clients)))
    return done / (time.monotonic() - started), (cpu_of(server.pid) - cpu) / max(1, done) * 1e6


async def overload(server: Server, bodies: list[bytes], *, clients: int, seconds: float,
                   new_connection_share: float) -> dict[str, Any]:
    before = await closed_loop(server, bodies, clients=8, seconds=3)
    latencies: list[float] = []
    shed = errors = 0
    end = time.monotonic() + seconds
    rng = random.Random(2)
    cpu_before = cpu_of(server.pid)

    async def one(offset: int) -> None:
        nonlocal shed, errors
        kept = Client(server.port, server.context)
        index = offset
        while time.monotonic() < end:
            fresh = rng.random() < new_connection_share
            client = Client(server.port, server.context) if fresh else kept
            started = time.monotonic()
            try:
                body = bodies[index % len(bodies)]
                answer = await asyncio.wait_for(client.post(body, path="/mutate?timeout=2s"), 10)
                found = response_of(answer.body)
                shed += "patch" not in found and "admitted unchanged" in " ".join(found.get("warnings", []))
            except (TimeoutError, ConnectionError, OSError):
                errors += 1
            latencies.append(time.monotonic() - started)
            if fresh:
                client.close()
            index += clients
        kept.close()

    await asyncio.gather(*(one(offset) for offset in range(clients)))
    cpu_used = cpu_of(server.pid) - cpu_before
    after = await closed_loop(server, bodies, clients=8, seconds=3)
    return {"answers": len(latencies), "errors": errors, "shed": shed,
            "within": sum(latency <= 2.5 for latency in latencies), "p50": percentile(latencies, 0.5),
            "p99": percentile(latencies, 0.99), "max": max(latencies, default=float("nan")),
            "before": before, "after": after, "cpu": cpu_used, "seconds": seconds}


# ---------------------------------------------------------------- SIGTERM under load


async def sigterm(server: Server, *, clients: int) -> dict[str, Any]:
    answered = lost = refused = closing = 0
    not_ready_seen = False
    stop_at = time.monotonic() + 60

    async def one(offset: int) -> None:
        nonlocal answered, lost, refused, closing
        client = Client(server.port, server.context)
        index = offset
        while time.monotonic() < stop_at:
            try:
                await client.connect() if client.writer is None else None
            except OSError:
                refused += 1
                return  # the server stopped listening: a real API server goes to the other replica
            try:
                answer = await client.post(review(f"term-{index}"))
                answered += 1
                closing += answer.closes
            except ConnectionError:
                lost += 1  # the request was sent and no answer came
            index += clients

    async def terminate() -> None:
        nonlocal not_ready_seen
        await asyncio.sleep(1.0)
        os.kill(server.pid, signal.SIGTERM)
        for _ in range(20):
            await asyncio.sleep(0.1)
            try:
                status = (await asyncio.to_thread(server.get, "/readyz")).status_code
            except Exception:
                break
            not_ready_seen |= status == 503

    await asyncio.gather(terminate(), *(one(offset) for offset in range(clients)))
    server.process.wait(timeout=30)
    return {"answered": answered, "lost": lost, "refused": refused, "closing": closing,
            "not_ready_seen": not_ready_seen, "exit": server.process.returncode}


# ---------------------------------------------------------------- main


def _bodies() -> list[bytes]:
    paths = review_files()
    if not paths:
        return [review(f"sample-{index}") for index in range(64)]
    out = []
    for index, path in enumerate(paths * 4):
        document = orjson.loads(path.read_bytes())
        document["request"]["uid"] = f"{document['request']['uid'][:-4]}{index:04d}"
        out.append(orjson.dumps(document))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller numbers, a few seconds each")
    parser.add_argument("--only", nargs="*", default=None, help="scenarios to run (default: all)")
    args = parser.parse_args(argv)
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    quick = args.quick
    wanted = set(args.only or ["hostile", "amplify", "slowloris", "overload", "sigterm", "badstate"])
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"server on CPU 0, attackers on CPU 1; {'quick' if quick else 'full'} run")
    with tempfile.TemporaryDirectory(prefix="pod-tailor-attack-") as scratch:
        folder = Path(scratch)
        from webhook.server.certs import write_dev_certs

        ca, cert, key = write_dev_certs(folder, dns_names=("localhost",), ip_addresses=(HOST,))
        common = ("--no-watch-cluster", "--profiles-path", str(folder / "none.json"))

        def run(name: str, scenario: Callable[[Server], Any], *extra: str) -> Any:
            with serving(ca, cert, key, *common, *extra, log_dir=folder) as server:
                result = asyncio.run(scenario(server))
                return result, server.process.poll() is None

        if "hostile" in wanted:
            statuses, alive = run("hostile", hostile)
            counts: dict[int, int] = {}
            for status in statuses.values():
                counts[status] = counts.get(status, 0) + 1
            print(f"\nhostile bodies ({len(statuses)}): statuses {dict(sorted(counts.items()))}; "
                  f"5xx {sum(n for s, n in counts.items() if s >= 500)}; server alive {alive}")
            for name, status in statuses.items():
                print(f"  {name:<36} {status}")
        if "amplify" in wanted:
            pods, paths = (60, 5) if quick else (300, 20)
            found, alive = run("amplify", lambda s: amplify(s, pods=pods, long_paths=paths))
            print(f"\namplification ({pods} Pods with a distinct 250 KB annotation, {paths} with a 2 MB "
                  f"probe path): RSS {found['rss_before']:.0f} MB -> peak {found['rss_peak']:.0f} MB "
                  f"(+{found['rss_peak'] - found['rss_before']:.0f} MB; target < +150), after "
                  f"{found['rss_after']:.0f} MB; largest answer/request {found['max_ratio']:.2f} "
                  f"(target <= 2); long path refused with a warning "
                  f"{found['refused']}/{found['long_paths']}; "
                  f"alive {alive}")
        if "slowloris" in wanted:
            count = 200 if quick else 1000
            found, alive = run(
                "slowloris", lambda s: slowloris(s, connections=count, seconds=15.0), "--max-connections",
                str(max(1000, count + 50)))
            print(f"\nslowloris ({found['connections']} connections, a header byte a second): cut "
                  f"{found['cut']}/{found['connections']} within 15 s, the last after "
                  f"{found['max_cut_after']:.1f} s (target within 10 s); /mutate median "
                  f"{found['probe_median_ms']:.1f} ms over {found['probes']} probes (target < 200 ms); RSS "
                  f"{found['rss_before']:.0f} -> peak {found['rss_peak']:.0f} MB "
                  f"(+{found['rss_peak'] - found['rss_before']:.0f}; target < +100); alive {alive}")
        if "overload" in wanted:
            bodies = _bodies()
            clients, seconds = (100, 5.0) if quick else (300, 15.0)
            found, alive = run("overload", lambda s: overload(
                s, bodies, clients=clients, seconds=seconds, new_connection_share=0.8))
            print(f"\noverload ({clients} clients, 80% a new TLS connection per request, ?timeout=2s, "
                  f"{seconds:.0f} s): {found['answers']} requests, {found['within']} answered within 2.5 s "
                  f"({found['within'] / max(1, found['answers']) * 100:.1f}%), errors {found['errors']}, "
                  f"shed {found['shed']}; p50 {found['p50'] * 1000:.0f} ms, "
                  f"p99 {found['p99'] * 1000:.0f} ms, "
                  f"max {found['max'] * 1000:.0f} ms; server CPU {found['cpu']:.1f} s; throughput at 1x "
                  f"(8 clients) before {found['before'][0]:.0f} req/s ({found['before'][1]:.0f} us CPU "
                  f"each), after {found['after'][0]:.0f} req/s ({found['after'][1]:.0f} us CPU each); "
                  f"CPU per request before/after {found['before'][1] / found['after'][1]:.2f}; alive {alive}")
        if "sigterm" in wanted:
            with serving(ca, cert, key, *common, log_dir=folder) as server:
                found = asyncio.run(sigterm(server, clients=32))
            print(f"\nSIGTERM under load (32 kept-alive clients, drain 5 s): answered {found['answered']}, "
                  f"lost {found['lost']} (target 0), refused after the listener closed {found['refused']}, "
                  f"answers with Connection: close {found['closing']}; readiness 503 seen during the drain "
                  f"{found['not_ready_seen']}; exit status {found['exit']}")
        if "badstate" in wanted:
            for line in badstate(ca, cert, key, folder, quick=quick):
                print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
