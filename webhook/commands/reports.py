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

from webhook.commands.running import configure, running_options, start
from webhook.config.settings import Settings

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
    running_options(command, "include_enforce", "tick", "max_writes_per_second", "burst", "crd_check_seconds",
                    lease_name="pod-tailor-reports", tick=5.0)
    command.set_defaults(func=_main, configure=configure)


def _main(args: argparse.Namespace, settings: Settings) -> int:
    from webhook.controllers.controller_metrics import ReportMetrics  # where used: the Kubernetes client
    from webhook.controllers.reports import ReportsController

    running = start(args, settings)
    state, metrics = running.state, ReportMetrics()
    controller = ReportsController(
        running.api, cluster=lambda: state.cluster, profiles=lambda: state.profiles,
        ready=lambda: not state.pending, leading=running.leading, stop=running.stop, metrics=metrics,
        own_namespace=args.pod_tailor_namespace, include_enforce=args.include_enforce, tick=args.tick,
        writes_per_second=args.max_writes_per_second, batch=args.burst, absent_retry=args.crd_check_seconds,
    )  # fmt: skip
    return running.until_stopped(controller.run, metrics=metrics)
