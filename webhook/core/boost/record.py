"""The start-up boost's record on the Pod, and when to give the CPU back (pure).

The webhook writes what each boosted container must return to into the annotation `pod-tailor.io/boost`
and labels the Pod `pod-tailor.io/boosted: "true"`; the boost controller watches that label. All
state lives in the Pod, so a controller that restarts, or a new leader, picks up where the last left.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.core.model.timestamps import unstamp

__all__ = [
    "BOOSTED_LABEL",
    "BOOST_ANNOTATION",
    "BoostRecord",
    "Due",
    "SteadyCpu",
    "read_record",
    "revert_due",
    "started_at",
]

BOOST_ANNOTATION = "pod-tailor.io/boost"
BOOSTED_LABEL = "pod-tailor.io/boosted"


@dataclass(frozen=True, slots=True)
class SteadyCpu:
    """What one container's CPU returns to once started (the values as the API writes them)."""

    container: str
    request: str
    limit: str | None = None
    boosted: str = ""  # the start-up request, for the record


@dataclass(frozen=True, slots=True)
class BoostRecord:
    containers: tuple[SteadyCpu, ...]
    until: str = "ready"  # "ready": Ready + extra_seconds; "duration": extra_seconds after the start
    extra_seconds: int = 30
    max_seconds: int = 600  # give the CPU back by then, ready or not
    outcome: str = ""  # set by the controller: "reverted after 95s", "failed: ..."

    def dumps(self) -> str:
        body: dict[str, Any] = {
            "containers": {
                steady.container: {"cpu": {"request": steady.request, "boosted": steady.boosted,
                                           **({"limit": steady.limit} if steady.limit else {})}}
                for steady in self.containers
            },
            "until": self.until,
            "extraSeconds": self.extra_seconds,
            "maxSeconds": self.max_seconds,
        }  # fmt: skip
        if self.outcome:
            body["outcome"] = self.outcome
        return json.dumps(body, separators=(",", ":"))


def read_record(annotations: Mapping[str, Any]) -> BoostRecord | None:
    """The record in a Pod's annotations; None when absent or unreadable (never raises)."""
    text = annotations.get(BOOST_ANNOTATION)
    try:
        body: Any = json.loads(text) if isinstance(text, str) else None
        if not isinstance(body, dict):
            return None
        containers = tuple(
            SteadyCpu(name, str(values["cpu"]["request"]),
                      str(values["cpu"]["limit"]) if values["cpu"].get("limit") else None,
                      str(values["cpu"].get("boosted", "")))
            for name, values in body["containers"].items()
        )  # fmt: skip
        return BoostRecord(
            containers, until=str(body.get("until", "ready")), extra_seconds=int(body.get("extraSeconds", 0)),
            max_seconds=int(body.get("maxSeconds", 600)), outcome=str(body.get("outcome", "")),
        )  # fmt: skip
    except (TypeError, KeyError, ValueError, AttributeError):
        return None


def started_at(pod: Mapping[str, Any]) -> float | None:
    """When the Pod started (the kubelet's `status.startTime`, else its creation), in Unix seconds."""
    return unstamp(_section(pod, "status").get("startTime")) or unstamp(
        _section(pod, "metadata").get("creationTimestamp")
    )


def _section(pod: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = pod.get(key)
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True, slots=True)
class Due:
    """Whether to give the CPU back now; `at` is when it will be due when not yet (None: not known)."""

    now: bool
    why: str
    at: float | None = None


def revert_due(pod: Mapping[str, Any], record: BoostRecord, *, now: float) -> Due:
    """When a boosted Pod gets its steady CPU back: Ready (for `until: ready`) plus the extra seconds,
    or the start plus the extra seconds (`until: duration`), and at the latest `maxSeconds` after it
    started, ready or not."""
    status = _section(pod, "status")
    started = started_at(pod)
    if started is None:
        return Due(False, "not started yet")
    deadline = started + record.max_seconds
    if now >= deadline:
        return Due(True, f"deadline: {record.max_seconds}s after the start")
    if record.until == "duration":
        at = started + record.extra_seconds
        return Due(now >= at, f"{record.extra_seconds}s after the start", at=min(at, deadline))
    ready = [c for c in status.get("conditions") or () if isinstance(c, Mapping) and c.get("type") == "Ready"]
    ready_true = ready and ready[0].get("status") == "True"
    ready_at = unstamp(ready[0].get("lastTransitionTime")) if ready_true else None
    if ready_at is None:
        return Due(False, "not Ready yet", at=deadline)
    at = ready_at + record.extra_seconds
    return Due(now >= at, f"Ready + {record.extra_seconds}s", at=min(at, deadline))
