"""`pod-tailor report` and the dashboard over a 2,000-workload cluster and profile store.

Puts `--workloads` Deployments (x `--containers` containers, spread over `--namespaces` opted-in
namespaces) into the test suite's fake API server, writes a profile store with a profile and a usage
summary for every container, then times in this process:
- `pod-tailor report` end to end (list the cluster, read the store, evaluate, render) for each format;
- the dashboard: one background load, then every page type and its JSON, each asked `--rounds` times
  over HTTP from a running server (median and worst printed).
Targets (issue 14): the report under 5 s, each dashboard page under 300 ms. Printed as measured.

    .venv/bin/python bench/report.py                 # 2,000 x 3 in 40 namespaces
    .venv/bin/python bench/report.py --workloads 200 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "tests"):
    sys.path.insert(0, str(_path))

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from kubefake import FakeKube  # noqa: E402

from tests.dashboard.demo import summary  # noqa: E402
from tests.report.fleet import container, namespace, resources, workload  # noqa: E402
from webhook.commands import main  # noqa: E402
from webhook.commands.report import render  # noqa: E402
from webhook.core.model.profile import Evidence, Recommendation  # noqa: E402
from webhook.core.model.workload import WorkloadKey  # noqa: E402
from webhook.dashboard.app import create_dashboard  # noqa: E402
from webhook.dashboard.fleet import FleetConfig, FleetKeeper, load_fleet  # noqa: E402
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry  # noqa: E402
from webhook.report.live import read_cluster  # noqa: E402
from webhook.report.pipeline import build_report  # noqa: E402
from webhook.report.usage import from_store  # noqa: E402

MIB = 2**20


def _cluster(kube: FakeKube, *, workloads: int, containers: int, namespaces: int) -> list[WorkloadKey]:
    keys = []
    for number in range(namespaces):
        kube.put(namespace(f"team-{number:02d}", "enforce" if number % 4 else "dry-run"))
    for index in range(workloads):
        ns = f"team-{index % namespaces:02d}"
        bodies = [container("app", port=8080)]
        bodies += [
            container(f"side-{c}", port=9000 + c, resources=resources({"cpu": "50m", "memory": "64Mi"}))
            for c in range(1, containers)
        ]
        kube.put(workload("Deployment", f"w-{index:04d}", *bodies, namespace=ns, replicas=1 + index % 5))
        keys.append(WorkloadKey(ns, "Deployment", f"w-{index:04d}"))
    return keys


def _store(path: Path, keys: list[WorkloadKey], *, containers: int) -> None:
    evidence = Evidence(
        window="14d", samples=8018, hours=335.0, cpu_percentile=95.0, memory_margin=0.15, confidence=0.93
    )
    names = ["app", *(f"side-{c}" for c in range(1, containers))]
    entries = {}
    for index, key in enumerate(keys):
        cpu, memory = 0.05 + (index % 40) / 100, (100 + index % 400) * MIB
        entries[key] = WorkloadEntry(
            {
                name: Recommendation(Decimal(f"{cpu:.3f}"), Decimal(int(memory * 1.15)), evidence)
                for name in names
            },
            summaries={name: summary(cpu, memory) for name in names},
        )
    FileStore(path).write(ProfileDocument(entries, time.time() - 3600, "bench", "14d"))


def _serve_cluster(args: argparse.Namespace, directory: Path, ready: Connection, stop: Event) -> None:
    """The fake API server in its own process, as a real API server is: its work is not the report's."""
    with FakeKube() as kube:
        keys = _cluster(
            kube, workloads=args.workloads, containers=args.containers, namespaces=args.namespaces
        )
        ready.send((str(kube.write_kubeconfig(directory / "kubeconfig")), keys))
        stop.wait()


def _breakdown(kubeconfig: Path, store: Path) -> None:
    """Where a report's time goes, each step timed on its own (modules already imported)."""
    started = time.perf_counter()
    view = read_cluster(kubeconfig=str(kubeconfig))
    listed = time.perf_counter()
    usage = from_store(FileStore(store))
    read = time.perf_counter()
    report = build_report(
        view.workloads,
        cluster=view.cluster,
        profiles=usage.snapshot,
        summaries=usage.summaries,
        source="bench",
    )
    evaluated = time.perf_counter()
    render(report, "table")
    rendered = time.perf_counter()
    print(
        f"  of which: list the cluster {listed - started:.2f} s, read the store {read - listed:.2f} s, "
        f"evaluate {evaluated - read:.2f} s ({(evaluated - read) / len(report.workloads) * 1e3:.2f} ms a "
        f"workload), render the table {rendered - evaluated:.2f} s"
    )


def _report(kubeconfig: Path, store: Path, output: str) -> tuple[float, int]:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["report", "--kubeconfig", str(kubeconfig), "--profiles-path", str(store), "-o", output])
    assert code == 0, code
    return time.perf_counter() - started, len(out.getvalue())


@contextlib.contextmanager
def _serving(keeper: FleetKeeper) -> Iterator[str]:
    with contextlib.closing(__import__("socket").socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_dashboard(keeper, background=False),
            host="127.0.0.1",
            port=port,
            log_config=None,
            access_log=False,
        )
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)


def main_bench() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--containers", type=int, default=3)
    parser.add_argument("--namespaces", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        receive, send = multiprocessing.Pipe(duplex=False)
        stop = multiprocessing.Event()
        server = multiprocessing.Process(
            target=_serve_cluster, args=(args, Path(tmp), send, stop), daemon=True
        )
        server.start()
        try:
            kubeconfig, keys = receive.recv()
            _bench(args, Path(kubeconfig), keys, Path(tmp))
        finally:
            stop.set()
            server.join(30)


def _bench(args: argparse.Namespace, kubeconfig: Path, keys: list[WorkloadKey], tmp: Path) -> None:
    store = tmp / "profiles.json"
    _store(store, keys, containers=args.containers)
    print(
        f"{args.workloads} Deployments x {args.containers} containers in {args.namespaces} namespaces "
        f"(the fake API server in its own process); store {store.stat().st_size / MIB:.1f} MiB with a "
        "usage summary per container"
    )
    print("\npod-tailor report (list the API server, read the store, evaluate, render), in this process:")
    for output in ("table", "json", "csv", "html"):
        seconds, size = _report(kubeconfig, store, output)
        print(f"  -o {output:5s} {seconds:6.2f} s  ({size / 1024:,.0f} KiB)   target < 5 s")
    _breakdown(kubeconfig, store)
    config = FleetConfig(store=FileStore(store), kubeconfig=str(kubeconfig))
    started = time.perf_counter()
    fleet = load_fleet(config)
    print(
        f"\ndashboard: one background load {time.perf_counter() - started:.2f} s "
        f"({len(fleet.report.workloads)} workloads)"
    )
    keeper = FleetKeeper(lambda: fleet)
    keeper.current = fleet
    busiest = max(fleet.by_namespace, key=lambda ns: len(fleet.by_namespace[ns]))
    first = fleet.by_namespace[busiest][0]
    pages = {
        "namespaces page": "/",
        f"namespace page ({len(fleet.by_namespace[busiest])} workloads)": f"/namespaces/{busiest}",
        "namespace page sorted by cpu": f"/namespaces/{busiest}?sort=cpu&order=desc",
        "workload page (3 containers, 12 charts)": f"/namespaces/{busiest}/Deployment/{first.name}",
        "/api/namespaces": "/api/namespaces",
        f"/api/namespaces/{busiest}": f"/api/namespaces/{busiest}",
        "/api/.../workload": f"/api/namespaces/{busiest}/Deployment/{first.name}",
    }
    with _serving(keeper) as url, httpx.Client(base_url=url, timeout=30) as client:
        print(f"  each page asked {args.rounds} times over HTTP (median / worst):")
        for label, path in pages.items():
            times = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                response = client.get(path)
                times.append(time.perf_counter() - started)
                assert response.status_code == 200, (path, response.status_code)
            print(
                f"  {label:42s} {statistics.median(times) * 1000:7.1f} ms / {max(times) * 1000:7.1f} ms"
                f"  ({len(response.content) / 1024:,.0f} KiB)   target < 300 ms"
            )
        started = time.perf_counter()
        body = client.get("/api/report")
        print(
            f"  {'/api/report (the whole fleet)':42s} {(time.perf_counter() - started) * 1000:7.1f} ms"
            f"  ({len(body.content) / 1024:,.0f} KiB)"
        )


if __name__ == "__main__":
    main_bench()
