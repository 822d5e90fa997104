"""What the controller verbs (`rightsize`, `reports`) share: start-up, leader election, shutdown.

Both read the facts the webhook reads, the same way: the cluster snapshot (a `ClusterRefresher`) and
the profile store (its refresher, on a thread of its own); both write only while they lead (a Lease
with `--leader-elect`, else at once), stop on SIGTERM, and may serve their metrics over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from webhook.commands.failures import quiet_http_clients
from webhook.commands.options import add_policy_options, add_store_options
from webhook.commands.parser import group, typed
from webhook.config import values
from webhook.config.settings import Settings
from webhook.refreshers.state import State

if TYPE_CHECKING:
    from webhook.refreshers.cluster import ClusterRefresher

__all__ = ["Running", "add_running_options", "start"]


class _Metrics(Protocol):
    leader: Any  # a Gauge: 1 while leading

    def serve(self, port: int, host: str = ...) -> tuple[Any, Any]: ...


def add_running_options(command: argparse.ArgumentParser, *, lease_name: str, duty: str) -> None:
    """The profile store, the policy, `--metrics-port` and leader election (`--lease-name` defaults to
    `lease_name`; `duty` says what only the leader does: "writes", "resizes")."""
    add_store_options(command)
    add_policy_options(command)
    served = group(command, "server")
    served.add_argument(
        "--metrics-port", type=typed(values.port_or_off), default=0,
        help="serve /metrics over HTTP on this port [0: not at all]",
    )  # fmt: skip
    served.add_argument("--metrics-host", default="0.0.0.0", help="address for --metrics-port [0.0.0.0]")
    election = group(command, "leader election", f"several replicas, one {duty}")
    election.add_argument(
        "--leader-elect", action=argparse.BooleanOptionalAction, default=False,
        help=f"{duty.removesuffix('s')} only while holding a coordination.k8s.io Lease [off]",
    )  # fmt: skip
    election.add_argument("--lease-name", default=lease_name, help=f"[{lease_name}]")
    election.add_argument("--lease-namespace", default="pod-tailor", help="[pod-tailor]")


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        kubeconfig=args.kubeconfig,
        policy_file=str(args.policy_file) if args.policy_file else None,
        policy_configmap=args.policy_configmap,
        namespace=args.pod_tailor_namespace,
        profiles_path=str(args.profiles_path) if args.profiles_path else None,
        profiles_store=args.profiles_store,
    )


def _keep_profiles(settings: Settings, state: State, stop: threading.Event) -> None:
    """Keep `state.profiles` fresh, as the webhook does (the same refresher, on its own event loop)."""
    from webhook.refreshers.profiles import profile_refresher

    refresher = profile_refresher(settings)
    while not stop.is_set():
        asyncio.run(refresher.refresh_once(state))
        state.pending.discard(refresher.name)
        stop.wait(refresher.next_wait())


@dataclass
class Running:
    """A started controller verb: its API client, the facts it reads, and its stop and leading events."""

    args: argparse.Namespace
    api: Any
    state: State
    cluster: ClusterRefresher
    stop: threading.Event = field(default_factory=threading.Event)
    leading: threading.Event = field(default_factory=threading.Event)

    def until_stopped(self, work: Callable[[], None], *, metrics: _Metrics) -> int:
        """Lead (`--leader-elect`: while holding the Lease), serve `metrics` (`--metrics-port`), run
        `work` until it returns or SIGTERM sets `stop`; then give the Lease up and stop reading."""
        from webhook.controllers.leader import LeaderElector, LeaseConfig, followers, identity

        args, elector = self.args, None
        if args.leader_elect:
            started, stopped = followers(self.leading, metrics.leader)
            elector = LeaderElector(self.api, LeaseConfig(args.lease_namespace, args.lease_name, identity()),
                                    on_started=started, on_stopped=stopped)  # fmt: skip
            elector.start()
        else:
            metrics.leader.set(1)
            self.leading.set()
        if threading.current_thread() is threading.main_thread():  # SIGTERM: stop, give the Lease up
            signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        server = metrics.serve(args.metrics_port, args.metrics_host)[0] if args.metrics_port else None
        try:
            work()
        except KeyboardInterrupt:
            return 130
        finally:
            self.close()
            if elector is not None:
                elector.stop()
            if server is not None:
                server.shutdown()
        return 0

    def close(self) -> None:
        self.stop.set()
        self.cluster.stop()


def start(args: argparse.Namespace) -> Running | None:
    """Logging, the API client and the refreshers of a controller verb; None (said on stderr) without
    a Kubernetes API."""
    from webhook.cluster.config import discover
    from webhook.refreshers.cluster import ClusterRefresher

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    quiet_http_clients()
    settings = _settings(args)
    found = discover(kubeconfig=args.kubeconfig)
    if found.config is None:
        print(f"pod-tailor {args.command}: no Kubernetes API: {found.reason}", file=sys.stderr)
        return None
    state = State()
    state.pending.add("profiles")
    cluster = ClusterRefresher(settings)
    running = Running(args, found.config.api_client, state, cluster)
    cluster.start(state)
    threading.Thread(
        target=_keep_profiles, args=(settings, state, running.stop), name="profiles", daemon=True
    ).start()
    return running
