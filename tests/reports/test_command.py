"""`pod-tailor reports` as a process against the fake API server: writes the Reports, stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from kubefake import FakeKube

from tests.cluster.helpers import wait_until
from tests.report.fleet import container, namespace, workload

from .kit import assert_valid_report, report_crd


def test_the_command_writes_a_report_per_workload_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    with FakeKube(garbage_collection=True) as kube:
        kube.serve_version(1, 33)
        kube.install_crd(report_crd())
        kube.put(namespace("shop", "dry-run"))
        kube.put(workload("Deployment", "web", container(port=8080)))
        store, kubeconfig = tmp_path / "profiles.json", kube.write_kubeconfig(tmp_path / "k")
        process = subprocess.Popen(
            [sys.executable, "-m", "webhook", "reports", "--kubeconfig", str(kubeconfig),
             "--profiles-path", str(store), "--tick", "0.2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_until(lambda: kube.get("reports", "pod-tailor-deployment-web", namespace="shop"),
                       timeout=60, what="the report")  # fmt: skip
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
        report = kube.get("reports", "pod-tailor-deployment-web", namespace="shop")
        assert report is not None
        assert_valid_report(report)
