"""The resize controller's boost duty: gives boosted Pods their steady CPU back, in place, once started.

It watches Pods labelled `pod-tailor.io/boosted=true` (list+watch with a label selector, nothing
else), and for each one whose time has come (`webhook.core.boost.record.revert_due`) asks the `Resizer`
for the steady values in the Pod's own record. It then follows the kubelet's answer: done (the label
goes, the record says so), `PodResizePending` Infeasible (given up, recorded, counted), Deferred or in
progress (waited for; the kubelet retries). What the API server answers means what it means to the
`Resizer`: a resize refused (422) is given up like an Infeasible one, an error (403, 409, 5xx) is tried
again at the next pass, a Pod gone is forgotten. Every fact it acts on is in the Pod, so a restarted
controller, or a new leader, goes on where the last one stopped; only the leader acts.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from kubernetes import client

from webhook.cluster.watch import Watched
from webhook.controllers.controller_metrics import ResizeMetrics
from webhook.controllers.resizer import Resizer, name_of
from webhook.core.boost.record import (
    BOOST_ANNOTATION,
    BOOSTED_LABEL,
    BoostRecord,
    read_record,
    revert_due,
    started_at,
)
from webhook.core.model.quantity import QuantityError, parse

__all__ = ["BoostController"]

log = logging.getLogger("pod_tailor.boost")
Obj = dict[str, Any]


def _cpu(container: Mapping[str, Any], section: str) -> Decimal | None:
    value = ((container.get("resources") or {}).get(section) or {}).get("cpu")
    try:
        return parse(value) if value is not None else None
    except QuantityError:
        return None


def _steady_now(pod: Mapping[str, Any], record: BoostRecord) -> bool:
    """The Pod's spec already holds the steady values (a resize was asked for, by us or anyone)."""
    by_name = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or ()}
    for steady in record.containers:
        container = by_name.get(steady.container)
        if container is None:
            continue
        if _cpu(container, "requests") != parse(steady.request):
            return False
        if steady.limit is not None and _cpu(container, "limits") != parse(steady.limit):
            return False
    return True


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == kind
            and condition.get("status") == "True"
        ):
            return condition
    return None


class BoostController:
    """The resize controller's boost duty: one watch of the boosted Pods, one pass over them a tick."""

    def __init__(
        self,
        api_client: Any,
        *,
        leading: threading.Event,
        stop: threading.Event,
        metrics: ResizeMetrics | None = None,
        clock: Callable[[], float] = time.time,
        tick: float = 1.0,
        watch_seconds: int = 300,
    ) -> None:
        self.leading, self.stop = leading, stop
        self.metrics = metrics or ResizeMetrics()
        self.clock, self.tick = clock, tick
        self.resizer = Resizer(api_client, clock=clock, duty="boost")
        self._wake = threading.Event()
        self._seen: set[str] = set()  # uids counted as started
        self._deferred: set[str] = set()  # uids counted as deferred
        self._done: set[str] = set()  # uids finished, until the watch sees their label gone
        # uid -> the resourceVersion a resize was asked at: until the watch brings a newer version of
        # the Pod, a pass (woken by another Pod's event) must not ask the same resize again.
        self._asked: dict[str, str] = {}
        listing = functools.partial(
            client.CoreV1Api(api_client).list_pod_for_all_namespaces, label_selector=f"{BOOSTED_LABEL}=true"
        )
        self.watched = Watched(
            "pods", listing, on_change=self._wake.set, stop=stop, watch_seconds=watch_seconds, relevant=None
        )

    def run(self) -> None:
        """Watch in a thread; act every `tick` seconds (or at once after an event) while leading."""
        threading.Thread(target=self.watched.run, name="boost-watch", daemon=True).start()
        while not self.stop.is_set():
            self._wake.wait(self.tick)
            self._wake.clear()
            if self.leading.is_set() and self.watched.synced.is_set():
                self.step()
        self.watched.close()

    def step(self) -> None:
        """One pass over every boosted Pod."""
        pods = self.watched.objects()
        uids = {str((pod.get("metadata") or {}).get("uid")) for pod in pods}
        self._done &= uids
        self._asked = {uid: version for uid, version in self._asked.items() if uid in uids}
        self.metrics.boosted.set(len(uids - self._done))
        for pod in pods:
            if self.stop.is_set() or not self.leading.is_set():
                return
            try:
                self.handle(pod)
            except Exception:
                self.metrics.failures.labels("error").inc()
                log.exception("boost: %s: failed; tried again at the next pass", name_of(pod))

    def handle(self, pod: Obj) -> None:
        metadata = pod.get("metadata") or {}
        uid = str(metadata.get("uid"))
        if uid in self._done:
            return
        if uid not in self._seen:
            self._seen.add(uid)
            self.metrics.started.inc()
        record = read_record(metadata.get("annotations") or {})
        if record is None:
            self._finish(pod, None, outcome="failed: unreadable record", failure="unreadable")
            return
        if not _steady_now(pod, record):
            version = str(metadata.get("resourceVersion", ""))
            if version and self._asked.get(uid) == version:
                return  # asked already; the watch has not brought the Pod since
            due = revert_due(pod, record, now=self.clock())
            if due.now and self._resize(pod, record, why=due.why):
                self._asked[uid] = version
            return
        pending = _condition(pod, "PodResizePending")
        if pending is not None and pending.get("reason") == "Infeasible":
            why = f"failed: Infeasible: {pending.get('message', '')}"
            self._finish(pod, record, outcome=why, failure="infeasible")
        elif pending is not None:
            if uid not in self._deferred:
                self._deferred.add(uid)
                self.metrics.deferred.inc()
                log.info("boost: %s: resize deferred by the kubelet; waiting", name_of(pod))
        elif _condition(pod, "PodResizeInProgress") is None:
            started = started_at(pod)
            seconds = max(0.0, self.clock() - started) if started is not None else 0.0
            self._finish(pod, record, outcome=f"reverted after {seconds:.0f}s", seconds=seconds)

    def _resize(self, pod: Obj, record: BoostRecord, *, why: str) -> bool:
        """Ask for the steady values; True when the API server took the resize."""
        outcome, message = self.resizer.resize(pod, _give_back_ops(pod, record))
        if outcome == "refused":
            self._finish(pod, record, outcome=f"failed: resize refused: {message}", failure="refused")
        elif outcome == "error":
            self.metrics.failures.labels("error").inc()
        elif outcome == "resized":
            log.info("boost: %s: CPU given back (%s)", name_of(pod), why)
        return outcome == "resized"  # gone: the watch drops it

    def _finish(
        self, pod: Obj, record: BoostRecord | None, *, outcome: str, failure: str = "", seconds: float = 0.0
    ) -> None:
        """Remove the label (the Pod leaves the watch) and keep the outcome in the record."""
        annotations: dict[str, str | None] = {}
        if record is not None:
            annotations[BOOST_ANNOTATION] = BoostRecord(
                record.containers, until=record.until, extra_seconds=record.extra_seconds,
                max_seconds=record.max_seconds, outcome=outcome,
            ).dumps()  # fmt: skip
        written = self.resizer.mark(pod, annotations, labels={BOOSTED_LABEL: None})
        if written == "error":
            self.metrics.failures.labels("error").inc()
        if written != "written":
            return  # tried again at the next pass, or the Pod is gone
        self._done.add(str(pod["metadata"].get("uid")))
        if not failure:
            self.metrics.reverted.inc()
            self.metrics.seconds.observe(seconds)
        else:
            self.metrics.failures.labels(failure).inc()
            log.warning("boost: %s: %s", name_of(pod), outcome)


def _give_back_ops(pod: Mapping[str, Any], record: BoostRecord) -> list[dict[str, Any]]:
    """The JSON Patch to the record's steady CPU: each request, and each limit the container has."""
    ops = []
    for index, container in enumerate((pod.get("spec") or {}).get("containers") or ()):
        steady = next((s for s in record.containers if s.container == container.get("name")), None)
        if steady is None:
            continue
        base = f"/spec/containers/{index}/resources"
        ops.append({"op": "replace", "path": f"{base}/requests/cpu", "value": steady.request})
        if steady.limit is not None and _cpu(container, "limits") is not None:
            ops.append({"op": "replace", "path": f"{base}/limits/cpu", "value": steady.limit})
    return ops
