"""`pod-tailor reports`: the OpenReports controller, until stopped (`webhook.controllers.reports`).

Keeps one OpenReports `Report` (openreports.io/v1alpha1) per workload of the namespaces labelled dry-run
(and enforce, with `--include-enforce`), for Policy Reporter and whatever else reads policy reports. It
reads the facts the webhook reads (the cluster snapshot and the profile store) and decides with the
same engine as the webhook and `pod-tailor report`. Off unless run: manifests/components/reports.
With `--leader-elect` several replicas run and only the one holding the Lease writes.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from webhook.commands.failures import quiet_http_clients
from webhook.commands.options import add_policy_options, add_store_options
from webhook.commands.parser import group, typed
from webhook.config import values
from webhook.controllers.leader import LeaderElector, LeaseConfig, followers, identity
from webhook.controllers.reportmetrics import ReportMetrics
from webhook.controllers.reports import ReportsController
from webhook.refreshers.state import State

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
    add_store_options(command)
    add_policy_options(command)
    served = group(command, "server")
    served.add_argument(
        "--metrics-port", type=typed(values.port_or_off), default=0,
        help="serve /metrics over HTTP on this port [0: not at all]",
    )  # fmt: skip
    served.add_argument("--metrics-host", default="0.0.0.0", help="address for --metrics-port [0.0.0.0]")
    election = group(command, "leader election", "several replicas, one writes")
    election.add_argument(
        "--leader-elect", action=argparse.BooleanOptionalAction, default=False,
        help="write only while holding a coordination.k8s.io Lease [off]",
    )  # fmt: skip
    election.add_argument("--lease-name", default="pod-tailor-reports", help="[pod-tailor-reports]")
    election.add_argument("--lease-namespace", default="pod-tailor", help="[pod-tailor]")
    command.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from webhook.cluster.config import discover
    from webhook.commands.rightsize import _profiles, _settings
    from webhook.refreshers.cluster import ClusterRefresher

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    quiet_http_clients()
    settings = _settings(args)
    found = discover(kubeconfig=args.kubeconfig)
    if found.config is None:
        print(f"pod-tailor reports: no Kubernetes API: {found.reason}", file=sys.stderr)
        return 1
    api = found.config.api_client
    metrics, leading, stop = ReportMetrics(), threading.Event(), threading.Event()
    state = State()
    state.pending.add("profiles")
    cluster = ClusterRefresher(settings)
    cluster.start(state)
    threading.Thread(target=_profiles, args=(settings, state, stop), name="profiles", daemon=True).start()
    controller = ReportsController(
        api, cluster=lambda: state.cluster, profiles=lambda: state.profiles,
        ready=lambda: not state.pending, leading=leading, stop=stop, metrics=metrics,
        own_namespace=args.pod_tailor_namespace, include_enforce=args.include_enforce, tick=args.tick,
        writes_per_second=args.max_writes_per_second, batch=args.burst, absent_retry=args.crd_check_seconds,
    )  # fmt: skip
    elector = None
    if args.leader_elect:
        started, stopped = followers(leading, metrics.leader)
        elector = LeaderElector(api, LeaseConfig(args.lease_namespace, args.lease_name, identity()),
                                on_started=started, on_stopped=stopped)  # fmt: skip
        elector.start()
    else:
        metrics.leader.set(1)
        leading.set()
    if threading.current_thread() is threading.main_thread():  # SIGTERM: stop, give the Lease up
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = metrics.serve(args.metrics_port, args.metrics_host)[0] if args.metrics_port else None
    try:
        controller.run()
    except KeyboardInterrupt:
        return 130
    finally:
        stop.set()
        cluster.stop()
        if elector is not None:
            elector.stop()
        if server is not None:
            server.shutdown()
    return 0
