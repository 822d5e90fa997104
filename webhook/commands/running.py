"""What the controller verbs (`rightsize`, `reports`) share: start-up, leader election, shutdown.

Both read the facts the webhook reads, the same way: the cluster snapshot (a `ClusterRefresher`) and
the profile store (its refresher, on a thread of its own); both write only while they lead (a Lease
with `--leader-elect`, else at once), stop on SIGTERM, and may serve their metrics over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from webhook.commands.failures import UNREACHABLE
from webhook.commands.logs import json_logs
from webhook.commands.options import DAEMON, POLICY, STORE, cluster_found, store_from
from webhook.commands.parser import exits, take
from webhook.config.policies import load_policy_file
from webhook.config.settings import Settings
from webhook.refreshers.state import State

if TYPE_CHECKING:
    from webhook.refreshers.cluster import ClusterRefresher

__all__ = ["RUNNING", "Running", "configure", "running_options", "start"]

RUNNING = (*STORE, *POLICY, *DAEMON)


class _Metrics(Protocol):
    leader: Any  # a Gauge: 1 while leading

    def serve(self, port: int, host: str = ...) -> tuple[Any, Any]: ...


def running_options(command: argparse.ArgumentParser, *names: str, lease_name: str, tick: float) -> None:
    """The verb's own options `names`, then the profile store, the policy, metrics, logs and leader
    election (`--lease-name` defaults to `lease_name`, `--tick` to `tick`)."""
    take(command, *names, *RUNNING, defaults={"lease_name": lease_name, "tick": tick})
    exits(command, {UNREACHABLE: "no Kubernetes API to read"})


def configure(args: argparse.Namespace) -> Settings:
    """The policy file parsed, the store opened and the cluster's configuration found: a controller
    needs the API server, so without one it stops here (exit 3)."""
    if args.policy_file:
        load_policy_file(args.policy_file)
    store_from(args)
    cluster_found(args, why=f"pod-tailor {args.command} works on the cluster's Pods")
    return _settings(args)


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
            namespace = args.lease_namespace or args.pod_tailor_namespace
            lease = LeaseConfig(namespace, args.lease_name, identity())
            elector = LeaderElector(self.api, lease, on_started=started, on_stopped=stopped)
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


def start(args: argparse.Namespace, settings: Settings) -> Running:
    """Logging (JSON lines, as `serve`), the API client and the refreshers of a controller verb."""
    from webhook.cluster.config import discover
    from webhook.refreshers.cluster import ClusterRefresher

    json_logs(args.log_level)
    found = discover(kubeconfig=args.kubeconfig)
    assert found.config is not None  # `configure` checked
    state = State()
    state.pending.add("profiles")
    cluster = ClusterRefresher(settings)
    running = Running(args, found.config.api_client, state, cluster)
    cluster.start(state)
    threading.Thread(
        target=_keep_profiles, args=(settings, state, running.stop), name="profiles", daemon=True
    ).start()
    return running
