"""`pod-tailor boost-controller`: give boosted Pods their steady CPU back once started, until stopped.

With `--leader-elect` several replicas run and only the one holding the Lease resizes (see
`webhook.controllers.boost`); the others watch, ready to take over.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from webhook.commands.failures import quiet_http_clients
from webhook.commands.options import add_cluster_options
from webhook.commands.parser import group, typed
from webhook.config import values
from webhook.controllers.boost import BoostController
from webhook.controllers.boostmetrics import BoostMetrics
from webhook.controllers.leader import LeaderElector, LeaseConfig, followers, identity

__all__ = ["register"]


def register(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "boost-controller",
        help="give boosted Pods their steady CPU back by in-place resize (Kubernetes 1.33+)",
        description="Watches Pods labelled pod-tailor.io/boosted=true and resizes each back to the steady "
        "CPU in its pod-tailor.io/boost record once it is Ready (or its time is up).",
    )
    command.add_argument(
        "--tick", type=typed(values.seconds), default=1.0, help="seconds between passes over the Pods [1]"
    )
    add_cluster_options(command)
    served = group(command, "server")
    served.add_argument(
        "--metrics-port", type=typed(values.port_or_off), default=0,
        help="serve /metrics over HTTP on this port [0: not at all]",
    )
    served.add_argument("--metrics-host", default="0.0.0.0", help="address for --metrics-port [0.0.0.0]")
    election = group(command, "leader election", "several replicas, one resizes")
    election.add_argument(
        "--leader-elect", action=argparse.BooleanOptionalAction, default=False,
        help="resize only while holding a coordination.k8s.io Lease [off]",
    )  # fmt: skip
    election.add_argument(
        "--lease-name", default="pod-tailor-boost-controller", help="[pod-tailor-boost-controller]"
    )
    election.add_argument("--lease-namespace", default="pod-tailor", help="[pod-tailor]")
    command.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    from webhook.cluster.config import discover

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    quiet_http_clients()
    found = discover(kubeconfig=args.kubeconfig)
    if found.config is None:
        print(f"pod-tailor boost-controller: no Kubernetes API: {found.reason}", file=sys.stderr)
        return 1
    api = found.config.api_client
    metrics, leading, stop = BoostMetrics(), threading.Event(), threading.Event()
    elector = None
    if args.leader_elect:
        started, stopped = followers(leading, metrics.leader)
        config = LeaseConfig(args.lease_namespace, args.lease_name, identity())
        elector = LeaderElector(api, config, on_started=started, on_stopped=stopped)
        elector.start()
    else:
        metrics.leader.set(1)
        leading.set()
    if threading.current_thread() is threading.main_thread():  # SIGTERM: stop, give the Lease up
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = metrics.serve(args.metrics_port, args.metrics_host)[0] if args.metrics_port else None
    try:
        BoostController(api, leading=leading, stop=stop, metrics=metrics, tick=args.tick).run()
    except KeyboardInterrupt:
        return 130
    finally:
        if elector is not None:
            elector.stop()
        if server is not None:
            server.shutdown()
    return 0
