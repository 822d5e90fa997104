"""The OpenReports controller: one `Report` per workload of the opted-in namespaces, kept current, cheaply.

While leading, each pass walks the Deployments, StatefulSets, DaemonSets, CronJobs and standalone Pods of
namespaces labelled dry-run (and enforce, with `include_enforce`) and makes sure each has its Report
(`webhook.report.openreports`), built from the decision `pod-tailor report` prints and the webhook acts
on (`webhook.report.evaluate` over the same cluster and profile snapshots). Cheap at scale:

- a workload is evaluated again only when its inputs change: its template (the object's
  resourceVersion), its profile, its namespace's mode and policy, or the facts of its namespace;
- a Report is written only when its content's digest differs from the one on the Report in the
  cluster (a new leader evaluates once, compares, and writes nothing that is current);
- writes are server-side applies (field manager `pod-tailor`, forced: the Report is ours) from a
  token bucket (`writes_per_second`, bursts of `batch`); a workload whose write does not fit this pass
  waits for the next, and nothing is queued in memory;
- each Report is owned by its workload, so the garbage collector removes it with the workload; Reports
  of workloads no longer in scope are deleted by the controller.

The Report CRD may not be installed: then the controller says so once, writes nothing, and looks again
every `absent_retry` seconds (the Reports watch is optional). A 409 Conflict or any other failed write is
tried again at the next pass.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from webhook.cluster.watch import Watched
from webhook.controllers.controller_metrics import ReportMetrics
from webhook.core.model.namespace import Mode
from webhook.core.model.workload import WorkloadKey, pod_workload
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.sources import SourceError, pod_sources
from webhook.report.collect import collected
from webhook.report.evaluate import evaluate
from webhook.report.openreports import DIGEST_ANNOTATION, MANAGED_BY, build_report, report_name

__all__ = ["FIELD_MANAGER", "KINDS", "ReportsController"]

log = logging.getLogger("pod_tailor.reports")
Obj = dict[str, Any]
GROUP, VERSION, PLURAL = "openreports.io", "v1alpha1", "reports"
FIELD_MANAGER = "pod-tailor"
EXCLUDED = ("kube-system",)
AWAIT_SECONDS = 60.0  # how long a write of ours may take to show in the watch before it is not trusted
_SELECTOR = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())


@dataclass(frozen=True, slots=True)
class _Kind:
    plural: str
    api_version: str
    kind: str
    api: str
    method: str


KINDS = (
    _Kind("deployments", "apps/v1", "Deployment", "AppsV1Api", "deployment"),
    _Kind("statefulsets", "apps/v1", "StatefulSet", "AppsV1Api", "stateful_set"),
    _Kind("daemonsets", "apps/v1", "DaemonSet", "AppsV1Api", "daemon_set"),
    _Kind("cronjobs", "batch/v1", "CronJob", "BatchV1Api", "cron_job"),
    _Kind("pods", "v1", "Pod", "CoreV1Api", "pod"),
)


def _standalone(pod: Obj) -> bool:
    """A Pod no controller made (its controller's Report covers the others), still running."""
    refs = (pod.get("metadata") or {}).get("ownerReferences") or ()
    phase = (pod.get("status") or {}).get("phase")
    return not any(r.get("controller") for r in refs if isinstance(r, dict)) and phase not in (
        "Succeeded", "Failed",
    )  # fmt: skip


class _Bucket:
    """A token bucket: `rate` writes a second on average, at most `burst` at once."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float]) -> None:
        self.rate, self.burst, self.clock = rate, max(1, burst), clock
        self.tokens, self.at = float(self.burst), clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class ReportsController:
    def __init__(
        self,
        api_client: Any,
        *,
        cluster: Callable[[], ClusterSnapshot],
        profiles: Callable[[], ProfileSnapshot],
        ready: Callable[[], bool],
        leading: threading.Event,
        stop: threading.Event,
        metrics: ReportMetrics,
        own_namespace: str = "pod-tailor",
        include_enforce: bool = False,
        tick: float = 5.0,
        writes_per_second: float = 10.0,
        batch: int = 50,
        watch_seconds: int = 300,
        absent_retry: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster, self.profiles, self.ready = cluster, profiles, ready
        self.leading, self.stop, self.metrics = leading, stop, metrics
        self.own_namespace, self.include_enforce, self.tick = own_namespace, include_enforce, tick
        self.bucket = _Bucket(writes_per_second, batch, clock)
        self.absent_retry = absent_retry
        self.custom = client.CustomObjectsApi(api_client)
        self.installed: bool | None = None  # the CRD, as last seen (None: not looked yet)
        self.passes = 0
        self.writes = 0  # Reports applied or deleted, since start
        # (namespace, report name) -> (inputs digest, content digest) of the last evaluation: unchanged
        # inputs are not evaluated again while the Report in the cluster still carries that content.
        self._done: dict[tuple[str, str], tuple[str, str]] = {}
        self._templates: dict[str, tuple[str, str]] = {}  # uid -> (resourceVersion, template digest)
        self._namespaces: dict[str, str] = {}  # namespace -> digest of its settings and facts
        self._namespaces_of: ClusterSnapshot | None = None  # the snapshot `_namespaces` was made from
        # (namespace, report name) -> (content digest, until when): written by us, not yet seen by the watch
        self._awaiting: dict[tuple[str, str], tuple[str, float]] = {}
        self._tallied: str | None = None  # the Reports' resourceVersion the result gauges were set from
        self.clock = clock
        self._wake = threading.Event()
        wake = self._wake.set
        self.watches: dict[str, Watched] = {}
        for kind in KINDS:
            typed = getattr(client, kind.api)(api_client)
            call = getattr(typed, f"list_{kind.method}_for_all_namespaces")
            self.watches[kind.kind] = Watched(kind.plural, call, on_change=wake, stop=stop,
                                              watch_seconds=watch_seconds, keep=_workload_part)  # fmt: skip
        listing = self.custom.list_cluster_custom_object
        self.reports = Watched(
            "reports.openreports.io",
            lambda **options: listing(GROUP, VERSION, PLURAL, label_selector=_SELECTOR, **options),
            on_change=wake, stop=stop, watch_seconds=watch_seconds, optional=True, absent_retry=absent_retry,
            relevant=_digest_of, keep=_report_part,
        )  # fmt: skip

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> None:
        """Watch in threads; a pass after each change (at most one a `tick`), and every `tick` while
        writes wait for the bucket."""
        for watched in (*self.watches.values(), self.reports):
            threading.Thread(target=watched.run, name=f"reports-{watched.resource}", daemon=True).start()
        while not self.stop.is_set():
            self._wake.wait(self.tick)
            self._wake.clear()
            if self.leading.is_set() and self.synced():
                try:
                    self.step()
                except Exception:  # a bug must not end the loop: said, counted, tried again
                    self.metrics.writes.labels("error").inc()
                    log.exception("reports: the pass failed; tried again at the next")
            self.stop.wait(min(self.tick, 1.0))  # a burst of events makes one pass, not one each
        for watched in (*self.watches.values(), self.reports):
            watched.close()

    def synced(self) -> bool:
        watches = (*self.watches.values(), self.reports)
        return all(w.synced.is_set() for w in watches) and self.ready()

    def crd_installed(self) -> bool:
        """The Report CRD served; said once when that changes."""
        installed = self.reports.served
        if installed != self.installed:
            if installed:
                log.info("reports: the OpenReports Report CRD (reports.%s) is installed", GROUP)
            else:
                log.warning("reports: the OpenReports Report CRD (reports.%s) is not installed: no Reports "
                            "written (install manifests/components/openreports-crd); looking again every "
                            "%.0fs", GROUP, self.absent_retry)  # fmt: skip
            self.installed = installed
            self.metrics.installed.set(1 if installed else 0)
        return installed

    # -- one pass ------------------------------------------------------------------------------------
    def step(self) -> int:
        """One pass; returns the Reports written (applied or deleted)."""
        self.passes += 1
        self.metrics.passes.inc()
        if not self.crd_installed():
            return 0
        cluster, profiles = self.cluster(), self.profiles()
        if self._namespaces_of is not cluster:
            self._namespaces, self._namespaces_of = {}, cluster
        existing = {(str(r["metadata"].get("namespace")), str(r["metadata"].get("name"))): _digest_of(r)
                    for r in self.reports.objects()}  # fmt: skip
        wanted: set[tuple[str, str]] = set()
        written, budget_left = 0, True
        for kind, obj in self._workloads(cluster):
            namespace = str(obj["metadata"]["namespace"])
            key = (namespace, report_name(kind.kind, str(obj["metadata"]["name"])))
            wanted.add(key)
            inputs = self._inputs(obj, kind, cluster, profiles)
            done, seen = self._done.get(key), existing.get(key)
            awaited = self._awaiting.get(key)
            if awaited is not None:
                if seen == awaited[0] or self.clock() >= awaited[1]:
                    del self._awaiting[key]
                elif done is not None and done[0] == inputs:
                    continue  # our write, not yet seen by the watch
            if done is not None and done[0] == inputs and seen == done[1]:
                continue  # evaluated from these inputs, and the cluster holds that content
            if not budget_left:
                continue  # nothing more is written this pass: evaluating it now would be wasted
            report = self._build(kind, obj, cluster, profiles)
            if report is None:
                continue
            digest = report["metadata"]["annotations"][DIGEST_ANNOTATION]
            if existing.get(key) == digest:
                self._done[key] = (inputs, digest)
                continue
            if not self.bucket.take():
                budget_left = False
                continue
            if self._apply(report):
                self._done[key] = (inputs, digest)
                self._awaiting[key] = (digest, self.clock() + AWAIT_SECONDS)
                written += 1
        self._done = {k: v for k, v in self._done.items() if k in wanted}
        self._awaiting = {k: v for k, v in self._awaiting.items() if k in wanted}
        live = {str(o["metadata"].get("uid")) for w in self.watches.values() for o in w.objects()}
        self._templates = {uid: v for uid, v in self._templates.items() if uid in live}
        for key in sorted(set(existing) - wanted):
            if budget_left and self.bucket.take():
                written += self._delete(*key)
        self.metrics.reports.set(len(wanted))
        if self._tallied != self.reports.resource_version:
            self._tallied = self.reports.resource_version
            self.metrics.tally(self.reports.objects())
        self.writes += written
        return written

    def _workloads(self, cluster: ClusterSnapshot) -> Iterable[tuple[_Kind, Obj]]:
        modes = {Mode.DRY_RUN} | ({Mode.ENFORCE} if self.include_enforce else set())
        in_scope: dict[str, bool] = {}
        for kind in KINDS:
            for obj in self.watches[kind.kind].objects():
                namespace = str(obj["metadata"].get("namespace") or "")
                if namespace not in in_scope:
                    in_scope[namespace] = namespace not in (*EXCLUDED, self.own_namespace) and (
                        cluster.settings_for(namespace).mode in modes and cluster.namespaces is not None
                        and namespace in cluster.namespaces
                    )  # fmt: skip
                if in_scope[namespace] and (kind.kind != "Pod" or _standalone(obj)):
                    yield kind, obj

    def _inputs(self, obj: Obj, kind: _Kind, cluster: ClusterSnapshot, profiles: ProfileSnapshot) -> str:
        """The digest of what the workload's decision reads: template, profile, settings, facts."""
        meta = obj["metadata"]
        uid, version = str(meta.get("uid")), str(meta.get("resourceVersion"))
        cached = self._templates.get(uid)
        if cached is None or cached[0] != version:
            body = json.dumps([meta.get("labels"), meta.get("annotations"), obj.get("spec")], sort_keys=True)
            cached = (version, hashlib.sha256(body.encode()).hexdigest())
            self._templates[uid] = cached
        namespace = str(meta.get("namespace"))
        settings = self._namespaces.get(namespace)
        if settings is None:
            labelled = cluster.settings_for(namespace)
            policy = cluster.policies.get(labelled.policy)
            facts = (labelled, policy, cluster.facts_for(namespace), cluster.server_version)
            settings = hashlib.sha256(repr(facts).encode()).hexdigest()
            self._namespaces[namespace] = settings
        workload = pod_workload(obj, namespace) if kind.kind == "Pod" else None
        key = workload or _key(kind, obj)
        profile = repr(sorted(profiles.for_workload(key).items()))
        return hashlib.sha256(f"{cached[1]}|{settings}|{profile}".encode()).hexdigest()

    def _build(
        self, kind: _Kind, obj: Obj, cluster: ClusterSnapshot, profiles: ProfileSnapshot
    ) -> Obj | None:
        meta = obj["metadata"]
        obj = {**obj, "apiVersion": kind.api_version, "kind": kind.kind}
        namespace = str(meta.get("namespace"))
        try:
            (source,) = pod_sources([obj], namespace=namespace)
        except (SourceError, ValueError) as exc:
            log.info("reports: %s %s/%s: %s", kind.kind, namespace, meta.get("name"), exc)
            return None
        row = evaluate(collected(source, origin="cluster"), cluster=cluster, profiles=profiles)
        owner = {"apiVersion": kind.api_version, "kind": kind.kind, "name": str(meta.get("name")),
                 "uid": str(meta.get("uid"))}  # fmt: skip
        return build_report(row, owner=owner, policy=cluster.policies.get(row.policy))

    # -- writes --------------------------------------------------------------------------------------
    def _apply(self, report: Obj) -> bool:
        meta = report["metadata"]
        try:
            self.custom.patch_namespaced_custom_object(
                GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], report, field_manager=FIELD_MANAGER,
                force=True, _content_type="application/apply-patch+yaml", _request_timeout=(5, 30),
                _preload_content=False,
            )  # fmt: skip
        except ApiException as exc:
            outcome = {409: "conflict", 404: "gone", 422: "invalid"}.get(exc.status, "error")
            self.metrics.writes.labels(outcome).inc()
            log.warning("reports: %s/%s: apply refused (HTTP %s %s); tried again at the next pass",
                        meta["namespace"], meta["name"], exc.status, exc.reason)  # fmt: skip
            return False
        except Exception as exc:  # the API server unreachable: the next pass tries again
            self.metrics.writes.labels("error").inc()
            log.warning("reports: %s/%s: %s: %s", meta["namespace"], meta["name"], type(exc).__name__, exc)
            return False
        self.metrics.writes.labels("applied").inc()
        return True

    def _delete(self, namespace: str, name: str) -> int:
        """A Report of ours whose workload is out of scope (its namespace no longer opted in)."""
        try:
            self.custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name,
                                                        _request_timeout=(5, 30))  # fmt: skip
        except ApiException as exc:
            if exc.status != 404:
                self.metrics.writes.labels("error").inc()
                log.warning("reports: %s/%s: delete refused (HTTP %s)", namespace, name, exc.status)
            return 0
        self.metrics.writes.labels("deleted").inc()
        log.info("reports: %s/%s: deleted (its workload is no longer in scope)", namespace, name)
        return 1


def _key(kind: _Kind, obj: Obj) -> WorkloadKey:
    return WorkloadKey(str(obj["metadata"]["namespace"]), kind.kind, str(obj["metadata"]["name"]))


def _workload_part(obj: Obj) -> Obj:
    """What a decision reads of a workload: its metadata but managedFields, its spec, a Pod's phase."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    kept = {"metadata": meta, "spec": obj.get("spec") or {}}
    phase = (obj.get("status") or {}).get("phase")
    if phase:
        kept["status"] = {"phase": phase}
    return kept


def _report_part(report: Obj) -> Obj:
    """What the controller reads of its Reports: where, the digest, and the results for the gauges."""
    meta = report.get("metadata") or {}
    tally: dict[str, int] = {}
    for result in report.get("results") or ():
        key = sys.intern("|".join(str(result.get(k)) for k in ("policy", "rule", "result", "source")))
        tally[key] = tally.get(key, 0) + 1
    return {"metadata": {"name": meta.get("name"), "namespace": meta.get("namespace"),
                         "resourceVersion": meta.get("resourceVersion"),
                         "annotations": {DIGEST_ANNOTATION: _digest_of(report)}},
            "tally": tally}  # fmt: skip


def _digest_of(report: Obj) -> str:
    return str(((report.get("metadata") or {}).get("annotations") or {}).get(DIGEST_ANNOTATION) or "")

