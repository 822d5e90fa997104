"""In-place right-sizing of running Pods: the resize controller's second duty, beside the boost's.

Each pass, while leading, walks the running Pods of opted-in namespaces (enforce mode, policy
`inPlace.enabled`, no `pod-tailor.io/rightsize=off` label) and asks for what
`webhook.core.resize.plan.plan_resize` plans, within the maintenance windows, at most
max(1, maxConcurrentPercent) of a workload's Pods resizing at once and `--max-resizes-per-minute`
across the cluster. It reads the facts admission reads (the cluster and profile snapshots the
webhook's refreshers keep, handed in as callables), plus Pods, Nodes and ResourceQuotas of its own
watches and, before lowering memory, the metrics API. It follows each resize through the kubelet's
report: Deferred and in progress are waited for, Infeasible is given back (the spec returns to what
runs) and never asked again. All it knows is on the Pods, so a new leader carries on.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TextIO

from kubernetes import client

from webhook.cluster.watch import Watched
from webhook.controllers.controller_metrics import ResizeMetrics
from webhook.controllers.resizer import Resizer, name_of
from webhook.core.boost.container import cluster_can_resize
from webhook.core.fit.nodefree import free_allocatable
from webhook.core.model.quantity import QuantityError, parse
from webhook.core.model.resourcequota import Quota, parse_quota, room
from webhook.core.model.timestamps import stamp
from webhook.core.model.workload import WorkloadKey, pod_workload
from webhook.core.policy.inplace import open_window
from webhook.core.resize.history import RESIZED_ANNOTATION, Entry, Progress, read_history, resize_progress
from webhook.core.resize.pacing import RateLimit, workload_room
from webhook.core.resize.plan import Around, Plan, namespace_stop, not_eligible, plan_resize
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot

__all__ = ["RightsizeController"]

log = logging.getLogger("pod_tailor.rightsize")
Obj = dict[str, Any]
_WAITING = (Progress.IN_PROGRESS, Progress.DEFERRED, Progress.ERROR)
REPLAN_SECONDS = 300.0  # an unchanged Pod is planned again after this (usage, node room and steps move)


class RightsizeController:
    def __init__(
        self,
        api_client: Any,
        *,
        cluster: Callable[[], ClusterSnapshot],
        profiles: Callable[[], ProfileSnapshot],
        ready: Callable[[], bool],
        leading: threading.Event,
        stop: threading.Event,
        metrics: ResizeMetrics,
        clock: Callable[[], float] = time.time,
        tick: float = 5.0,
        per_minute: int = 30,
        watch_seconds: int = 300,
        dry_run: TextIO | None = None,
        resize_enabled: Callable[[], bool | None] | None = None,
    ) -> None:
        self.cluster, self.profiles, self.ready = cluster, profiles, ready  # the webhook's snapshots
        self.leading, self.stop = leading, stop
        self.metrics, self.clock, self.tick = metrics, clock, tick
        self.rate = RateLimit(per_minute)
        self.dry_run = dry_run
        self.resizer = Resizer(api_client, clock=clock, duty="rightsize")
        self._resize_enabled = resize_enabled or functools.partial(_serves_resize, api_client)
        self._wake = threading.Event()
        # uid -> (the record just written, until when to wait for it): a Pod is not planned again before
        # the watch shows our record on it (a version between a resize and its record looks never
        # resized), nor a Pod gone meanwhile (None) before the watch drops it.
        self._awaiting: dict[str, tuple[str | None, float]] = {}
        self._asked_at: deque[float] = deque(maxlen=max(1, per_minute))
        self._deferred: set[str] = set()  # uids counted as deferred
        # uid -> (what a "nothing to do" plan was made from, until when it stands): a pass woken by
        # another Pod's event does not plan an unchanged Pod again before `REPLAN_SECONDS`.
        self._quiet: dict[str, tuple[tuple[str, float, float], float]] = {}
        # What each pass starts from: node -> free allocatable (None: unknown), namespace -> what its
        # quotas leave, workload -> its Pods mid-resize. A resize asked takes from the first two.
        self._free: dict[str, dict[str, Decimal] | None] = {}
        self._room: dict[str, dict[str, Decimal]] = {}
        self._resizing: dict[WorkloadKey, int] = {}
        self.unsupported = ""  # why the cluster cannot resize in place, said once when it changes
        self._served: tuple[tuple[int, int] | None, bool | None] | None = None  # (version, discovery)
        core, wake = client.CoreV1Api(api_client), self._wake.set
        self.pods = Watched("pods", core.list_pod_for_all_namespaces, on_change=wake, stop=stop,
                            watch_seconds=watch_seconds, relevant=None)  # fmt: skip
        self.nodes = Watched("nodes", core.list_node, on_change=wake, stop=stop, watch_seconds=watch_seconds)
        self.quotas = Watched("resourcequotas", core.list_resource_quota_for_all_namespaces, on_change=wake,
                              stop=stop, watch_seconds=watch_seconds, relevant=None)  # fmt: skip
        self.watches = (self.pods, self.nodes, self.quotas)

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> None:
        """Watch in threads; one pass every `tick` seconds (or at once after an event) while leading."""
        for watched in self.watches:
            threading.Thread(target=watched.run, name=f"rightsize-{watched.resource}", daemon=True).start()
        while not self.stop.is_set():
            self._wake.wait(self.tick)
            self._wake.clear()
            if self.leading.is_set() and self.synced():
                self.step()
        for watched in self.watches:
            watched.close()

    def synced(self) -> bool:
        return all(w.synced.is_set() for w in self.watches) and self.ready()

    def supported(self) -> bool:
        """In-place resize served by this cluster; said once (and again when it changes) when not."""
        version = self.cluster().server_version
        problem = ""
        if not cluster_can_resize(version):
            shown = f"{version[0]}.{version[1]}" if version else "unknown"
            problem = f"in-place resize needs Kubernetes 1.33+ (cluster {shown}): nothing is resized"
        elif self._discovered(version) is False:
            problem = (
                "the cluster does not serve pods/resize (InPlacePodVerticalScaling off): nothing is resized"
            )
        if problem != self.unsupported:
            self.unsupported = problem
            if problem:
                log.warning("rightsize: %s", problem)
            else:
                log.info("rightsize: in-place resize served by this cluster")
        self.metrics.supported.set(0 if problem else 1)
        return not problem

    def _discovered(self, version: tuple[int, int] | None) -> bool | None:
        """Discovery's `pods/resize`, read once per server version."""
        if self._served is None or self._served[0] != version:
            self._served = (version, self._resize_enabled())
        return self._served[1]

    def step(self) -> None:
        """One pass over the running Pods."""
        if not self.supported():
            return
        pods = self.pods.objects()
        self._forget_all_but({str(p["metadata"].get("uid")) for p in pods})
        sizes = self._take_stock(pods)
        self.metrics.pending.set(sum(self._resizing.values()))
        for pod in pods:
            if self.stop.is_set() or not (self.leading.is_set() or self.dry_run):
                return
            try:
                self.handle(pod, workload_size=sizes[_workload_of(pod)])
            except Exception:
                self.metrics.resizes.labels("error").inc()
                log.exception("rightsize: %s: failed; tried again at the next pass", name_of(pod))

    def _forget_all_but(self, uids: set[str]) -> None:
        """Drop what is kept about Pods the watch no longer has."""
        self._awaiting = {uid: kept for uid, kept in self._awaiting.items() if uid in uids}
        self._deferred &= uids
        self._quiet = {uid: kept for uid, kept in self._quiet.items() if uid in uids}

    def _take_stock(self, pods: list[Obj]) -> dict[WorkloadKey, int]:
        """Each node's free allocatable, each namespace's quota room and each workload's Pods mid-resize,
        for this pass; returns each workload's count of Pods."""
        by_node: dict[str, list[Obj]] = defaultdict(list)
        by_workload: dict[WorkloadKey, list[Obj]] = defaultdict(list)
        for pod in pods:
            by_node[str((pod.get("spec") or {}).get("nodeName") or "")].append(pod)
            by_workload[_workload_of(pod)].append(pod)
        nodes = {str(node["metadata"]["name"]): node for node in self.nodes.objects()}
        self._free = {name: free_allocatable(node, by_node.get(name, ())) for name, node in nodes.items()}
        # Quota admission counts a resize like a create (KEP-1287): a resize up is asked only within
        # what every quota of the namespace has left, the scoped ones too (a resize never changes a
        # Pod's scopes, so counting them can only hold a resize back).
        quotas: dict[str, list[Quota]] = defaultdict(list)
        for quota in self.quotas.objects():
            quotas[str(quota["metadata"].get("namespace"))].append(parse_quota(quota))
        self._room = {namespace: {key: left for key, (left, _) in room(of).items()}
                      for namespace, of in quotas.items()}  # fmt: skip
        self._resizing = {
            key: sum(1 for pod in members if self._in_flight(pod)) for key, members in by_workload.items()
        }
        return {key: len(members) for key, members in by_workload.items()}

    def resized(self) -> list[str]:
        """One line per Pod pod-tailor has resized: its last resize, what came of it and where it stands."""
        lines = []
        for pod in sorted(self.pods.objects(), key=name_of):
            history = read_history((pod.get("metadata") or {}).get("annotations") or {})
            if not history:
                continue
            last, (progress, message) = history[-1], resize_progress(pod)
            state = (
                "applied"
                if progress is Progress.IDLE
                else f"pending ({progress.value}{': ' if message else ''}{message})"
            )
            shown = "; ".join(change.describe() for change in last.changes)
            lines.append(f"{name_of(pod)}: {stamp(last.at)} {shown}: {last.result}, {state}")
        return lines

    def _in_flight(self, pod: Obj) -> bool:
        return resize_progress(pod)[0] in (*_WAITING, Progress.INFEASIBLE) and bool(
            read_history((pod.get("metadata") or {}).get("annotations") or {})
        )

    # -- one Pod -------------------------------------------------------------------------------------
    def handle(self, pod: Obj, *, workload_size: int) -> None:
        metadata = pod["metadata"]
        namespace, uid = str(metadata.get("namespace")), str(metadata.get("uid"))
        snapshot = self.cluster()
        settings = snapshot.settings_for(namespace)
        policy = snapshot.policies.get(settings.policy) or snapshot.policies.policies["default"]
        labels = (snapshot.namespaces or {}).get(namespace) or {}
        if namespace_stop(settings, labels, policy) is not None or not_eligible(pod) is not None:
            return
        if self._awaited(uid, metadata):
            return
        history = read_history(metadata.get("annotations") or {})
        progress, message = resize_progress(pod)
        if progress is Progress.INFEASIBLE and history and history[-1].result == "asked":
            self._give_back(pod, history, message)
            return
        if progress is Progress.DEFERRED and uid not in self._deferred and history:
            self._deferred.add(uid)
            self.metrics.resizes.labels("deferred").inc()
            log.info("rightsize: %s: resize deferred by the kubelet; waiting", name_of(pod))
        if progress is not Progress.IDLE:
            return
        version = str(metadata.get("resourceVersion", ""))
        inputs = (version, snapshot.taken_at, self.profiles().taken_at)
        quiet = self._quiet.get(uid)
        if quiet is not None and quiet[0] == inputs and self.clock() < quiet[1]:
            return  # planned from the same Pod and snapshots a moment ago: nothing to do then
        workload = pod_workload(pod, namespace)
        facts = snapshot.facts_for(namespace)
        profiles = self.profiles().for_workload(workload)
        node = str(pod["spec"].get("nodeName"))
        room = self._room.get(namespace, {})
        around = Around(self.clock(), node_free=self._free.get(node), quota_room=room, history=history)
        plan = plan_resize(
            pod, policy=policy, profiles=profiles, facts=facts, workload=workload, around=around
        )
        if plan.needs_usage:
            usage = _bytes(self.resizer.memory_usage(pod))
            plan = plan_resize(pod, policy=policy, profiles=profiles, facts=facts, workload=workload,
                               around=dataclasses.replace(around, memory_usage=usage))  # fmt: skip
        if plan.resize is None:
            log.debug("rightsize: %s: %s", name_of(pod), plan.reason)
            self._quiet[uid] = (inputs, self.clock() + REPLAN_SECONDS)
            return
        wait = self._wait(policy.in_place, workload, workload_size)
        if self.dry_run is not None:
            self._print(pod, plan, wait)
            return
        if wait:
            log.info(
                "rightsize: %s: would resize (%s), waiting: %s", name_of(pod), plan.resize.describe(), wait
            )
            return
        self._ask(pod, plan, history, node=node, workload=workload)

    def _awaited(self, uid: str, metadata: Mapping[str, Any]) -> bool:
        """Whether the Pod is still waited for: our last record not yet seen on it (and not given up)."""
        awaited = self._awaiting.get(uid)
        if awaited is None:
            return False
        written, until = awaited
        seen = (metadata.get("annotations") or {}).get(RESIZED_ANNOTATION)
        if (written and seen == written) or self.clock() >= until:
            del self._awaiting[uid]
            return False
        return True

    def _wait(self, rules: Any, workload: WorkloadKey, size: int) -> str:
        now = self.clock()
        open_now, closed = open_window(rules, now)
        if not open_now:
            return closed
        busy = workload_room(
            pods=size, resizing=self._resizing.get(workload, 0), allowed=rules.concurrency(size)
        )
        if busy:
            return busy
        if not self.rate.allows(self._asked_at, now=now):
            return f"cluster-wide limit of {self.rate.per_minute} resizes a minute reached"
        return ""

    def _ask(
        self, pod: Obj, plan: Plan, history: tuple[Entry, ...], *, node: str, workload: WorkloadKey
    ) -> None:
        assert plan.resize is not None
        resize, now = plan.resize, self.clock()
        outcome, message = self.resizer.resize(pod, resize.ops)
        self.metrics.resizes.labels(outcome).inc()
        if outcome == "error":
            return  # tried again at the next pass
        uid = str(pod["metadata"].get("uid"))
        if outcome == "gone":
            self._awaiting[uid] = (None, now + REPLAN_SECONDS)  # until the watch drops it
            return
        self._asked_at.append(now)
        if outcome == "refused":
            entry = Entry(now, resize.changes, resize.why, f"refused: {message}")
            self._awaiting[uid] = (self.resizer.record(pod, history, entry), now + REPLAN_SECONDS)
            self.resizer.event(
                pod, reason="ResizeRefused", message=f"{resize.describe()}: {message}", warning=True
            )
            log.warning("rightsize: %s: resize refused: %s", name_of(pod), message)
            return
        self._resizing[workload] = self._resizing.get(workload, 0) + 1
        for change in resize.changes:  # the room this resize takes is not free for the next Pod
            grow = parse(change.after) - parse(change.before)
            if change.field.startswith("requests.") and grow > 0 and self._free.get(node):
                free = dict(self._free[node] or {})
                free[change.resource] -= grow
                self._free[node] = free
        written = self.resizer.record(pod, history, Entry(now, resize.changes, resize.why))
        self._awaiting[uid] = (written, now + REPLAN_SECONDS)
        self.resizer.event(pod, reason="ResizedInPlace", message=resize.why)
        log.info("rightsize: %s: %s", name_of(pod), resize.why)

    def _give_back(self, pod: Obj, history: tuple[Entry, ...], message: str) -> None:
        """Infeasible: the spec returns to what runs, and the change is marked never to be asked again."""
        last = history[-1]
        ops = [{"op": "replace", "path": _path(pod, change.container, change.field), "value": change.before}
               for change in last.changes if _path(pod, change.container, change.field)]  # fmt: skip
        outcome, _ = self.resizer.resize(pod, ops)
        if outcome != "resized":
            return
        self.metrics.resizes.labels("infeasible").inc()
        marked = dataclasses.replace(last, result=f"infeasible: {message}; given back")
        written = self.resizer.record(pod, history[:-1], marked)
        self._awaiting[str(pod["metadata"].get("uid"))] = (written, self.clock() + REPLAN_SECONDS)
        self.resizer.event(pod, reason="ResizeInfeasible", warning=True,
                           message=f"{message}; back to what runs, not asked again")  # fmt: skip
        log.warning("rightsize: %s: resize infeasible (%s); given back", name_of(pod), message)

    def _print(self, pod: Obj, plan: Plan, wait: str) -> None:
        assert plan.resize is not None
        assert self.dry_run is not None
        self.metrics.resizes.labels("dry_run").inc()
        waiting = f" [waiting: {wait}]" if wait else ""
        print(f"{name_of(pod)}: would resize {plan.resize.why}{waiting}", file=self.dry_run)


def _workload_of(pod: Mapping[str, Any]) -> WorkloadKey:
    return pod_workload(pod, str(pod["metadata"].get("namespace")))


def _path(pod: Mapping[str, Any], container: str, field: str) -> str:
    section, _, resource = field.partition(".")
    for index, body in enumerate((pod.get("spec") or {}).get("containers") or ()):
        if body.get("name") == container:
            return f"/spec/containers/{index}/resources/{section}/{resource}"
    for index, body in enumerate((pod.get("spec") or {}).get("initContainers") or ()):
        if body.get("name") == container:
            return f"/spec/initContainers/{index}/resources/{section}/{resource}"
    return ""


def _bytes(usage: Mapping[str, Any] | None) -> dict[str, Decimal] | None:
    if usage is None:
        return None
    out: dict[str, Decimal] = {}
    for name, value in usage.items():
        try:
            out[name] = parse(value)
        except QuantityError:
            continue
    return out


def _serves_resize(api_client: Any) -> bool | None:
    """Whether discovery lists `pods/resize`; None when discovery cannot be read."""
    try:
        listed = client.CoreV1Api(api_client).get_api_resources(_request_timeout=(5, 10))
    except Exception as exc:
        log.warning("rightsize: discovery of /api/v1 failed (%s); assuming pods/resize is served", exc)
        return None
    return any(resource.name == "pods/resize" for resource in listed.resources or ())
