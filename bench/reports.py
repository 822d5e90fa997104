"""The reports controller at scale: 10,000 workloads -> each Report written once, then no writes at rest.

Runs `pod-tailor reports` as its own process (so its memory is its own) against the fake API server of
tests/kubefake.py serving the OpenReports CRD, with N workloads (70 % Deployments, 10 % StatefulSets,
5 % DaemonSets, 10 % CronJobs, 5 % standalone Pods) in 20 dry-run namespaces. Prints the Reports applied
until every workload had one (and how long that took at the given write rate), then the writes during
`--rest` seconds with nothing changing and the passes the controller made meanwhile (each a full walk
that found nothing to write), then one template change (one write), and the controller's resident
memory (now and peak).

    .venv/bin/python bench/reports.py [--workloads 10000] [--rest 180] [--rate 500]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kubefake import FakeKube

from tests.report.fleet import container, namespace, resources, workload
from tests.reports.kit import report_crd

ROOT = Path(__file__).resolve().parents[1]
NAMESPACES = 20
MIX = (("Deployment", 70), ("StatefulSet", 10), ("DaemonSet", 5), ("CronJob", 10), ("Pod", 5))


def fleet(count: int) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        kind = next(k for k, share in _cumulative() if i % 100 < share)
        ns = f"team-{i % NAMESPACES}"
        app = container("app", port=8080 if i % 3 else None,
                        resources=resources({"cpu": "100m"}) if i % 4 == 0 else {})  # fmt: skip
        containers = [app, container("sidecar")] if i % 5 == 0 else [app]
        if kind == "Pod":
            out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"job-{i}", "namespace": ns},
                        "spec": {"containers": containers}})  # fmt: skip
        else:
            out.append(workload(kind, f"{kind.lower()}-{i}", *containers, namespace=ns))
    return out


def _cumulative() -> list[tuple[str, int]]:
    total, out = 0, []
    for kind, share in MIX:
        total += share
        out.append((kind, total))
    return out


def applied(kube: FakeKube) -> int:
    with kube._cond:
        return sum(1 for method, path, _ in kube.mutations if method == "PATCH" and "/reports/" in path)


def metric(port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def memory(pid: int) -> tuple[float, float]:
    """(resident MiB now, peak resident MiB) of a process, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    values = {k: float(v.split()[0]) / 1024 for k, v in re.findall(r"^(VmRSS|VmHWM):\s+(.+)$", status, re.M)}
    return values["VmRSS"], values["VmHWM"]


def wait(condition: Any, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--rest", type=float, default=180.0, help="seconds at rest to count writes over")
    parser.add_argument("--rate", type=float, default=500.0, help="the controller's --max-writes-per-second")
    parser.add_argument("--port", type=int, default=18093, help="the controller's --metrics-port")
    parser.add_argument("--log", help="write the controller's log to this file")
    args = parser.parse_args()
    with FakeKube(token="", garbage_collection=True) as kube, tempfile.TemporaryDirectory() as tmp:
        kube.serve_version(1, 33)
        kube.install_crd(report_crd())
        for i in range(NAMESPACES):
            kube.put(namespace(f"team-{i}", "dry-run"))
        objects = fleet(args.workloads)
        for obj in objects:
            kube.put(obj)
        kubeconfig = kube.write_kubeconfig(Path(tmp) / "kubeconfig")
        command = [sys.executable, "-m", "webhook", "reports", "--kubeconfig", str(kubeconfig),
                   "--profiles-path", str(Path(tmp) / "profiles.json"), "--tick", "5",
                   "--max-writes-per-second", str(args.rate), "--burst", str(int(args.rate)),
                   "--metrics-port", str(args.port)]  # fmt: skip
        started = time.monotonic()
        log = open(args.log, "w") if args.log else subprocess.DEVNULL  # noqa: SIM115
        process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=log)
        try:
            wait(lambda: applied(kube) >= args.workloads, timeout=3600, what="every Report")
            first = time.monotonic() - started
            wait(lambda: metric(args.port, "pod_tailor_report_passes_total") > 0, timeout=60, what="metrics")
            time.sleep(10)  # the last pass of the initial writes ends; the watch catches up
            written = applied(kube)
            passes = metric(args.port, "pod_tailor_report_passes_total")
            time.sleep(args.rest)
            at_rest = applied(kube) - written
            rest_passes = metric(args.port, "pod_tailor_report_passes_total") - passes
            changed = objects[0]
            changed["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "300m"}}
            kube.put(changed)
            wait(lambda: applied(kube) > written + at_rest, timeout=120, what="the changed workload's write")
            time.sleep(10)
            after_change = applied(kube) - written - at_rest
            now, peak = memory(process.pid)
        finally:
            process.terminate()
            process.wait(30)
    print(f"workloads: {args.workloads} in {NAMESPACES} dry-run namespaces ({', '.join(k for k, _ in MIX)})")
    print(f"Reports applied until each workload had one: {written} "
          f"({written / args.workloads:.2f} per workload) in {first:.0f}s at --max-writes-per-second "
          f"{args.rate:g}")  # fmt: skip
    print(f"at rest for {args.rest:.0f}s: {at_rest} writes ({at_rest / args.rest * 60:.1f}/min) over "
          f"{rest_passes:.0f} full passes")  # fmt: skip
    print(f"one template changed: {after_change} write(s)")
    print(f"controller memory: {now:.0f} MiB resident, {peak:.0f} MiB peak")
    return 0


if __name__ == "__main__":
    sys.exit(main())
