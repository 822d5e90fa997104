"""Controller replicas as the controller verbs run them, against the fake API server (tests/kubefake.py):
one in a thread with the facts the webhook reads (`Replica`), several competing for one Lease as
`--leader-elect` runs them (`candidates`). What the boost, rightsize and reports controller tests share."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from kubernetes import client, config

from webhook.config.settings import Settings
from webhook.controllers.leader import LeaderElector, LeaseConfig
from webhook.core.snapshot import ProfileSnapshot
from webhook.refreshers.cluster import ClusterRefresher
from webhook.refreshers.state import State

__all__ = ["Candidate", "Replica", "api", "candidates"]


def api(kubeconfig: Path) -> client.ApiClient:
    """A client of its own for one replica, from the fake API server's kubeconfig."""
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration)


class Candidate(NamedTuple):
    leading: threading.Event  # set while `elector` holds the Lease: the replica's `leading`
    elector: LeaderElector  # not started


def candidates(
    kubeconfig: Path,
    lease_name: str,
    identities: Sequence[str] = ("a", "b"),
    *,
    lease_seconds: int = 10,  # long enough that a loaded test machine does not flip the leader
    renew_deadline: float = 5.0,
    retry_period: float = 0.1,
) -> list[Candidate]:
    """One candidate per identity for the Lease `pod-tailor/<lease_name>`, each on its own client."""
    found = []
    for identity in identities:
        leading = threading.Event()
        lease = LeaseConfig("pod-tailor", lease_name, identity, lease_seconds=lease_seconds,
                            renew_deadline=renew_deadline, retry_period=retry_period)  # fmt: skip
        elector = LeaderElector(api(kubeconfig), lease, on_started=leading.set, on_stopped=leading.clear)
        found.append(Candidate(leading, elector))
    return found


class Replica:
    """One controller replica: its own API client, its stop and leading events (leading at once unless
    given one), and with `settings` the facts the webhook reads (the cluster refresher, `profiles`).
    A subclass builds its controller from `api` and `reads()`, then `start`s its `run` in a thread."""

    def __init__(
        self,
        kubeconfig: Path,
        *,
        leading: threading.Event | None = None,
        settings: Settings | None = None,
        profiles: ProfileSnapshot | None = None,
    ) -> None:
        self.api = api(kubeconfig)
        self.stop, self.leading = threading.Event(), leading or threading.Event()
        if leading is None:
            self.leading.set()
        self.state = State()
        if profiles is not None:
            self.state.swap_profiles(profiles)
        self.refresher = ClusterRefresher(settings) if settings is not None else None
        if self.refresher is not None:
            self.refresher.start(self.state)

    def reads(self) -> dict[str, Any]:
        """The controller's arguments for the facts it reads, its readiness and its events."""
        return {
            "cluster": lambda: self.state.cluster,
            "profiles": lambda: self.state.profiles,
            "ready": lambda: "cluster" not in self.state.pending,
            "leading": self.leading,
            "stop": self.stop,
        }

    def start(self, run: Callable[[], None]) -> None:
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        if self.refresher is not None:
            self.refresher.stop()
