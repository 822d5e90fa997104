"""The dashboard's data: one whole report of the cluster, rebuilt in the background and swapped whole.

A page never waits on the API server, the profile store or Prometheus: it reads the current `Fleet`
(immutable), which a thread rebuilds every `interval` seconds with the same code as `pod-tailor
report`. A failed rebuild keeps the last fleet and says why on every page.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from webhook.core.policy.policies import PolicySet
from webhook.dashboard.dryrun import DryRunSeen, read_dry_run
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.store import ProfileStore
from webhook.report.document import workload_document
from webhook.report.live import EXCLUDED, read_cluster
from webhook.report.manifests import manifests_report
from webhook.report.model import Report, WorkloadReport
from webhook.report.pipeline import build_report
from webhook.report.usage import Usage, from_store

__all__ = ["Fleet", "FleetConfig", "FleetKeeper", "load_fleet"]

log = logging.getLogger("pod_tailor.dashboard")
Key = tuple[str, str, str]  # namespace, kind, name


@dataclass(frozen=True, slots=True)
class Fleet:
    report: Report
    index: Mapping[Key, WorkloadReport]
    by_namespace: Mapping[str, tuple[WorkloadReport, ...]]
    profiled: frozenset[str]  # namespaces the profile store has profiles for
    dry_run: DryRunSeen
    seconds: float = 0.0  # how long the load took
    not_opted_in: tuple[str, ...] = ()  # namespaces of the cluster left out: not labelled, no -A
    encoded: dict[int, bytes] = field(default_factory=dict)  # id(workload) -> its JSON, made once when asked

    def workload_json(self, workload: WorkloadReport) -> bytes:
        """The workload's document as JSON, encoded on first use: a namespace of thousands is served
        from these pieces instead of being encoded again for every request."""
        found = self.encoded.get(id(workload))  # not by name: two files may hold the same one
        if found is None:
            found = self.encoded[id(workload)] = orjson.dumps(workload_document(workload))
        return found

    def find(self, namespace: str, kind: str, name: str, source: str = "") -> WorkloadReport | None:
        """The workload of that name; with `source`, the one read from that file (same-named workloads
        of different files are different rows)."""
        if source:
            return next(
                (w for w in self.by_namespace.get(namespace, ())
                 if (w.kind, w.name, w.source) == (kind, name, source)),
                None,
            )
        return self.index.get((namespace, kind, name))

    @classmethod
    def of(
        cls, report: Report, *, profiled: frozenset[str], dry_run: DryRunSeen, seconds: float = 0.0,
        not_opted_in: tuple[str, ...] = (),
    ) -> Fleet:
        grouped: defaultdict[str, list[WorkloadReport]] = defaultdict(list)
        for workload in report.workloads:
            grouped[workload.namespace].append(workload)
        index = {(w.namespace, w.kind, w.name): w for w in report.workloads}
        by_namespace = {ns: tuple(ws) for ns, ws in grouped.items()}
        return cls(report, index, by_namespace, profiled, dry_run, seconds, not_opted_in=not_opted_in)


@dataclass(frozen=True, slots=True)
class FleetConfig:
    """What to read: the cluster (kubeconfig or in-cluster) or `manifests`, the profile store, optionally
    Prometheus."""

    store: ProfileStore
    kubeconfig: str | None = None
    manifests: tuple[str, ...] = ()  # files or directories read instead of a cluster (needs `policies`)
    recursive: bool = False  # a directory's subdirectories too (kubectl -R)
    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False
    own_namespace: str = "pod-tailor"
    policy_configmap: str = "pod-tailor-policy"
    policies: PolicySet | None = None
    # Opens a client to the Prometheus that scrapes the webhook (for the dry-run counts); None: none.
    prometheus: Callable[[], Prometheus] | None = None
    dry_run_window: str = "24h"
    api_client: Any = None  # a kubernetes ApiClient; None: found from `kubeconfig`
    host: str = ""


def _dry_run(config: FleetConfig, at: float) -> DryRunSeen:
    if config.prometheus is None:
        return DryRunSeen(config.dry_run_window, error="no Prometheus configured (--prometheus-url)")
    prom = config.prometheus()
    try:
        return read_dry_run(prom, window=config.dry_run_window, at=at)
    finally:
        prom.close()


def _report(config: FleetConfig, usage: Usage) -> tuple[Report, tuple[str, ...]]:
    """The report, and the cluster's namespaces it leaves out (not opted in)."""
    if config.manifests:
        assert config.policies is not None, "manifests are read with a given policy"
        report = manifests_report(
            config.manifests, policies=config.policies, usage=usage, namespaces=config.namespaces,
            recursive=config.recursive,
        )
        return report, ()
    view = read_cluster(
        kubeconfig=config.kubeconfig,
        api_client=config.api_client,
        host=config.host,
        namespaces=config.namespaces,
        all_namespaces=config.all_namespaces,
        own_namespace=config.own_namespace,
        policy_configmap=config.policy_configmap,
        policies=config.policies,
    )
    report = build_report(
        view.workloads,
        cluster=view.cluster,
        profiles=usage.snapshot,
        summaries=usage.summaries,
        source=view.source,
        assume_opted_in=config.all_namespaces,
        problems=[*view.problems, *([usage.problem] if usage.problem else [])],
    )
    left_out = () if config.namespaces or view.scope is None else tuple(
        ns for ns in sorted(view.cluster.namespaces or ())
        if ns not in view.scope and ns not in (*EXCLUDED, config.own_namespace)
    )
    return report, left_out


def load_fleet(config: FleetConfig) -> Fleet:
    """One full read; raises ClusterError when the cluster cannot be read at all."""
    started = time.monotonic()
    usage = from_store(config.store)
    report, left_out = _report(config, usage)
    profiled = frozenset(key.namespace for key in usage.document.workloads)
    dry_run = _dry_run(config, time.time())
    fleet = Fleet.of(
        report, profiled=profiled, dry_run=dry_run, seconds=time.monotonic() - started, not_opted_in=left_out
    )
    for workload in report.workloads:  # here, in the background, not in the first request for them
        fleet.workload_json(workload)
    return fleet


@dataclass
class FleetKeeper:
    """Holds the current fleet; `start()` rebuilds it every `interval` seconds in a thread."""

    load: Callable[[], Fleet]
    interval: float = 60.0
    first_retry: float = 5.0  # until a first fleet is read, a failed read is tried again this soon
    current: Fleet | None = None
    error: str | None = None  # the last failed rebuild, cleared by the next good one
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def refresh(self) -> bool:
        try:
            fleet = self.load()
        except Exception as exc:  # any failure keeps the last fleet; the pages say why
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("dashboard refresh failed, keeping the last data: %s", self.error)
            return False
        self.current, self.error = fleet, None
        return True

    @property
    def retry_seconds(self) -> float:
        """Until the next read: the interval, or sooner while there is nothing to show yet."""
        return self.interval if self.current is not None else min(self.interval, self.first_retry)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(self.retry_seconds)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="dashboard-refresh", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
