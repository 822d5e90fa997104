"""`pod-tailor rightsize` (alias `boost-controller`): the resize controller, until stopped.

One controller, two duties, one leader: it gives boosted Pods their steady CPU back once started
(`webhook.controllers.boost`) and right-sizes running Pods in place where a policy turns it on
(`webhook.controllers.rightsize`). It reads the facts the webhook reads: the cluster snapshot (namespace
labels, policy, LimitRanges, autoscalers, server version) and the profile store. With `--leader-elect`
several replicas run and only the one holding the Lease resizes. `--dry-run` prints what it would
resize, once, then the Pods it resized before (applied or pending), and changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import threading
import time
from typing import Any

from webhook.commands.failures import quiet_http_clients
from webhook.commands.options import add_policy_options, add_store_options
from webhook.commands.parser import group, typed
from webhook.config import values
from webhook.config.settings import Settings
from webhook.controllers.boost import BoostController
from webhook.controllers.boostmetrics import BoostMetrics
from webhook.controllers.leader import LeaderElector, LeaseConfig, followers, identity
from webhook.controllers.resizemetrics import RightsizeMetrics
from webhook.controllers.rightsize import RightsizeController
from webhook.refreshers.state import State

__all__ = ["register"]


def register(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "rightsize",
        aliases=["boost-controller"],
        help="resize running Pods in place: give boosted Pods their steady CPU back, right-size where a "
        "policy turns inPlace on (Kubernetes 1.33+)",
        description="The resize controller. Gives Pods labelled pod-tailor.io/boosted=true their steady CPU "
        "back once Ready, and resizes running Pods of enforce-mode namespaces whose policy sets "
        "inPlace.enabled toward what admission would set now (pods/resize, never the workload).",
    )
    command.add_argument(
        "--tick", type=typed(values.seconds), default=1.0, help="seconds between passes over the Pods [1]"
    )
    command.add_argument(
        "--max-resizes-per-minute", type=typed(values.count), default=30,
        help="in-place right-sizing, cluster-wide [30]",
    )  # fmt: skip
    command.add_argument(
        "--dry-run", action="store_true", help="print what would be resized, once, and change nothing"
    )
    add_store_options(command)
    add_policy_options(command)
    served = group(command, "server")
    served.add_argument(
        "--metrics-port",
        type=typed(values.port_or_off),
        default=0,
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


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        kubeconfig=args.kubeconfig,
        policy_file=str(args.policy_file) if args.policy_file else None,
        policy_configmap=args.policy_configmap,
        namespace=args.pod_tailor_namespace,
        profiles_path=str(args.profiles_path) if args.profiles_path else None,
        profiles_store=args.profiles_store,
    )


def _profiles(settings: Settings, state: State, stop: threading.Event) -> None:
    """Keep `state.profiles` fresh, as the webhook does (the same refresher, on its own event loop)."""
    from webhook.refreshers.profiles import profile_refresher

    refresher = profile_refresher(settings)
    while not stop.is_set():
        asyncio.run(refresher.refresh_once(state))
        state.pending.discard(refresher.name)
        stop.wait(refresher.next_wait())


def _main(args: argparse.Namespace) -> int:
    from webhook.cluster.config import discover
    from webhook.refreshers.cluster import ClusterRefresher

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    quiet_http_clients()
    settings = _settings(args)
    found = discover(kubeconfig=args.kubeconfig)
    if found.config is None:
        print(f"pod-tailor {args.command}: no Kubernetes API: {found.reason}", file=sys.stderr)
        return 1
    api = found.config.api_client
    metrics, leading, stop = BoostMetrics(), threading.Event(), threading.Event()
    state = State()
    state.pending.add("profiles")
    cluster = ClusterRefresher(settings)
    cluster.start(state)
    threading.Thread(target=_profiles, args=(settings, state, stop), name="profiles", daemon=True).start()
    rightsize = RightsizeController(
        api, cluster=lambda: state.cluster, profiles=lambda: state.profiles,
        ready=lambda: "cluster" not in state.pending, leading=leading, stop=stop,
        metrics=RightsizeMetrics(metrics.registry), per_minute=args.max_resizes_per_minute, tick=args.tick,
        dry_run=sys.stdout if args.dry_run else None,
    )  # fmt: skip
    if args.dry_run:
        try:
            return _dry_run(rightsize, state, stop)
        finally:
            stop.set()
            cluster.stop()
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
    boost = BoostController(api, leading=leading, stop=stop, metrics=metrics, tick=args.tick)
    threading.Thread(target=boost.run, name="boost", daemon=True).start()
    try:
        rightsize.run()
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


def _dry_run(
    rightsize: RightsizeController, state: State, stop: threading.Event, timeout: float = 60.0
) -> int:
    """Sync every watch, make one pass that prints instead of asking, and say how it went."""
    for watched in rightsize.watches:
        threading.Thread(target=watched.run, name=f"dry-run-{watched.resource}", daemon=True).start()
    deadline = time.monotonic() + timeout
    while not (rightsize.synced() and not state.pending):
        if time.monotonic() > deadline:
            print("pod-tailor rightsize: the cluster could not be read in time", file=sys.stderr)
            return 1
        time.sleep(0.1)
    if not rightsize.supported():
        print(f"pod-tailor rightsize: {rightsize.unsupported}", file=sys.stderr)
        return 0
    rightsize.step()
    done = rightsize.resized()
    print(f"resized in place so far: {len(done)} Pod(s)" + "".join(f"\n  {line}" for line in done))
    return 0
