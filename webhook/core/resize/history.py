"""What in-place right-sizing leaves on a Pod, and how far a resize has got (pure).

The record `pod-tailor.io/resized` is the Pod's resize history, newest last, bounded in entries and
bytes: each entry says what changed (from, to), why and when, and what came of asking (`asked`,
`refused: ...`, `infeasible: ...`, `reverted: ...`). It is the controller's memory too: a change once
refused or found infeasible is never asked again, and a new leader reads the same facts. Progress
comes from the kubelet's own report: the `PodResizePending` / `PodResizeInProgress` conditions and the
actual resources in `status.containerStatuses[].resources`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from webhook import PREFIX
from webhook.core.fit.nodefree import cpu_memory
from webhook.core.model.timestamps import stamp, unstamp
from webhook.core.model.workload import pod_workload

__all__ = [
    "RESIZED_ANNOTATION",
    "RIGHTSIZE_LABEL",
    "Change",
    "Entry",
    "Progress",
    "history_text",
    "read_history",
    "resize_progress",
    "resized_in_place",
]

RESIZED_ANNOTATION = PREFIX + "resized"
RIGHTSIZE_LABEL = PREFIX + "rightsize"  # on a namespace: "off" stops every in-place resize there
MAX_ENTRIES = 8
MAX_BYTES = 4096  # the record stays small: every watch event of the Pod carries it


@dataclass(frozen=True, slots=True)
class Change:
    container: str
    field: str  # "requests.cpu", "limits.memory"
    before: str
    after: str

    @property
    def resource(self) -> str:
        return self.field.partition(".")[2]

    def describe(self) -> str:
        return f"{self.field} {self.before} -> {self.after}"


@dataclass(frozen=True, slots=True)
class Entry:
    at: float
    changes: tuple[Change, ...]
    why: str
    result: str = "asked"  # asked | refused: ... | infeasible: ... | reverted: ...

    def same_change(self, changes: Sequence[Change]) -> bool:
        return {(c.container, c.field, c.after) for c in self.changes} == {
            (c.container, c.field, c.after) for c in changes
        }


def _entry_json(entry: Entry) -> dict[str, Any]:
    before: dict[str, dict[str, str]] = {}
    after: dict[str, dict[str, str]] = {}
    for change in entry.changes:
        before.setdefault(change.container, {})[change.field] = change.before
        after.setdefault(change.container, {})[change.field] = change.after
    return {"at": stamp(entry.at), "from": before, "to": after, "why": entry.why, "result": entry.result}


def history_text(history: Sequence[Entry], added: Entry) -> str:
    """The record with `added` last, the oldest entries dropped to stay within the bounds."""
    entries = [_entry_json(entry) for entry in (*history, added)][-MAX_ENTRIES:]
    entries[-1]["why"] = entries[-1]["why"][:400]
    while True:
        text = json.dumps(entries, separators=(",", ":"))
        if len(text) <= MAX_BYTES or len(entries) == 1:
            return text
        entries.pop(0)


def read_history(annotations: Mapping[str, Any]) -> tuple[Entry, ...]:
    """The record's entries, oldest first; an unreadable record or entry reads as none (never raises)."""
    text = annotations.get(RESIZED_ANNOTATION)
    try:
        raw = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return ()
    entries = []
    for item in raw if isinstance(raw, list) else ():
        at = unstamp(item.get("at")) if isinstance(item, dict) else None
        if at is None:
            continue
        before, after = item.get("from") or {}, item.get("to") or {}
        try:
            changes = tuple(
                Change(str(container), str(field), str(before.get(container, {}).get(field, "")), str(value))
                for container, fields in after.items()
                for field, value in fields.items()
            )
        except AttributeError:
            continue
        entries.append(Entry(at, changes, str(item.get("why", "")), str(item.get("result", "asked"))))
    return tuple(entries)


class Progress(StrEnum):
    IDLE = "idle"  # the kubelet runs what the spec says
    IN_PROGRESS = "in progress"  # asked, not yet actual
    DEFERRED = "deferred"  # PodResizePending/Deferred: the kubelet retries when room frees up
    INFEASIBLE = "infeasible"  # PodResizePending/Infeasible: never on this node
    ERROR = "error"  # PodResizeInProgress/Error: the kubelet retries (e.g. memory limit below usage)
    UNKNOWN = "unknown"  # no actual resources reported: the Pod cannot be resized (not running)


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if not isinstance(condition, Mapping):
            continue
        if (condition.get("type"), condition.get("status")) == (kind, "True"):
            return condition
    return None


def resize_progress(pod: Mapping[str, Any]) -> tuple[Progress, str]:
    """Where the Pod's last resize stands, from the kubelet's conditions and actual resources."""
    pending = _condition(pod, "PodResizePending")
    if pending is not None:
        kind = Progress.INFEASIBLE if pending.get("reason") == "Infeasible" else Progress.DEFERRED
        return kind, str(pending.get("message", ""))[:300]
    going = _condition(pod, "PodResizeInProgress")
    if going is not None:
        kind = Progress.ERROR if going.get("reason") == "Error" else Progress.IN_PROGRESS
        return kind, str(going.get("message", ""))[:300]
    status = pod.get("status") or {}
    actual = {s.get("name"): s.get("resources") for s in status.get("containerStatuses") or ()
              if isinstance(s, Mapping)}  # fmt: skip
    for container in (pod.get("spec") or {}).get("containers") or ():
        running = actual.get(container.get("name"))
        if not isinstance(running, Mapping):
            return Progress.UNKNOWN, f"{container.get('name')}: no actual resources reported"
        wanted = container.get("resources") or {}
        for section in ("requests", "limits"):
            if cpu_memory(wanted.get(section)) != cpu_memory(running.get(section)):
                return Progress.IN_PROGRESS, f"{container.get('name')}: {section} not yet actual"
    return Progress.IDLE, ""


def resized_in_place(pods: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """workload (`ns/Kind/name`) -> what in-place right-sizing did to its running Pods, for the report:
    "2 of 3 Pods resized in place, 1 pending (deferred)"; workloads none of whose Pods was resized are
    left out."""
    counts: dict[str, list[int]] = {}
    pending: dict[str, list[str]] = {}
    for pod in pods:
        metadata = pod.get("metadata") or {}
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        key = str(pod_workload(pod, str(metadata.get("namespace") or "default")))
        seen = counts.setdefault(key, [0, 0])
        seen[1] += 1
        history = read_history(metadata.get("annotations") or {})
        if not history:
            continue
        seen[0] += 1
        progress, _ = resize_progress(pod)
        if progress is not Progress.IDLE:
            pending.setdefault(key, []).append(progress.value)
    out = {}
    for key, (resized, total) in sorted(counts.items()):
        if not resized:
            continue
        text = f"{resized} of {total} Pods resized in place"
        waiting = pending.get(key)
        if waiting:
            kinds = ", ".join(sorted(set(waiting)))
            text += f", {len(waiting)} pending ({kinds})"
        out[key] = text
    return out
