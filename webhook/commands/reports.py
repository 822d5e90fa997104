"""`pod-tailor reports`: the OpenReports controller, until stopped (`webhook.controllers.reports`).

Keeps one OpenReports `Report` (openreports.io/v1alpha1) per workload of the namespaces labelled dry-run
(and enforce, with `--include-enforce`), for Policy Reporter and whatever else reads policy reports. It
reads the facts the webhook reads (the cluster snapshot and the profile store) and decides with the
same engine as the webhook and `pod-tailor report`. Off unless run: manifests/components/reports.
With `--leader-elect` several replicas run and only the one holding the Lease writes.
"""

from __future__ import annotations

import argparse
from typing import Any

from webhook.commands.parser import typed
from webhook.commands.running import add_running_options, start
from webhook.config import values

__all__ = ["register"]


def register(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "reports",
        help="keep one OpenReports Report per workload of dry-run namespaces (Policy Reporter reads them)",
        description="The reports controller. Writes, per workload (Deployment, StatefulSet, DaemonSet, "
        "CronJob, standalone Pod) of namespaces labelled dry-run, an openreports.io/v1alpha1 Report owned "
        "by the workload: per container and rule (requests, limits, probes, preStop, grace, boost, fit) "
        "what pod-tailor would set, pass/warn/fail/skip. Needs the Report CRD "
        "(manifests/components/openreports-crd, or Kyverno's or Policy Reporter's).",
    )
    command.add_argument(
        "--include-enforce", action="store_true",
        help="report on enforce namespaces too (what pod-tailor sets at admission) [dry-run only]",
    )  # fmt: skip
    command.add_argument(
        "--tick", type=typed(values.seconds), default=5.0, help="seconds between passes at most [5]"
    )
    command.add_argument(
        "--max-writes-per-second", type=typed(values.at_least(0.01)), default=10.0,
        help="Report writes a second on average, cluster-wide [10]",
    )  # fmt: skip
    command.add_argument(
        "--burst", type=typed(values.positive_count), default=50, help="Report writes at once at most [50]"
    )
    command.add_argument(
        "--crd-check-seconds", type=typed(values.seconds), default=300.0,
        help="without the Report CRD, look for it again this often [300]",
    )  # fmt: skip
    add_running_options(command, lease_name="pod-tailor-reports", duty="writes")
    command.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from webhook.controllers.controller_metrics import ReportMetrics  # where used: the Kubernetes client
    from webhook.controllers.reports import ReportsController

    running = start(args)
    if running is None:
        return 1
    state, metrics = running.state, ReportMetrics()
    controller = ReportsController(
        running.api, cluster=lambda: state.cluster, profiles=lambda: state.profiles,
        ready=lambda: not state.pending, leading=running.leading, stop=running.stop, metrics=metrics,
        own_namespace=args.pod_tailor_namespace, include_enforce=args.include_enforce, tick=args.tick,
        writes_per_second=args.max_writes_per_second, batch=args.burst, absent_retry=args.crd_check_seconds,
    )  # fmt: skip
    return running.until_stopped(controller.run, metrics=metrics)
