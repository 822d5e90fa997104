"""What a candidate does with a `coordination.k8s.io/v1` Lease it has just read (pure, no I/O).

The rules are client-go's leader election (tools/leaderelection): a Lease held by someone else is
theirs until `leaseDurationSeconds` have passed *on this candidate's own clock* since it last saw
the record change (clocks of different nodes are never compared); an expired or empty Lease is
taken, with `acquireTime` and `leaseTransitions` moving on; the holder renews by writing
`renewTime`. Every write carries the resourceVersion it was based on, so of two candidates that
try at once the API server lets one through and answers the other 409 Conflict.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Observed", "Plan", "micro_time", "plan", "released"]

Obj = dict[str, Any]


def micro_time(at: float) -> str:
    """A MicroTime as the API server writes it: RFC 3339 with microseconds, in UTC."""
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True, slots=True)
class Observed:
    """The Lease's spec as last seen, and when (this candidate's monotonic clock) it last changed."""

    spec: str  # the spec as canonical JSON: any change of it restarts the holder's lease duration
    at: float

    @classmethod
    def of(cls, lease: Obj | None, *, now: float, before: Observed | None) -> Observed:
        spec = json.dumps((lease or {}).get("spec") or {}, sort_keys=True)
        if before is not None and before.spec == spec:
            return before
        return cls(spec, now)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to write (a whole Lease, `create` or `replace`), or nothing because another holds it."""

    action: str  # "create", "replace" or "wait"
    body: Obj | None = None
    holder: str = ""  # who holds it when waiting


def _spec(identity: str, *, lease_seconds: int, acquired: str, renewed: str, transitions: int) -> Obj:
    return {
        "holderIdentity": identity,
        "leaseDurationSeconds": lease_seconds,
        "acquireTime": acquired,
        "renewTime": renewed,
        "leaseTransitions": transitions,
    }


def plan(
    lease: Obj | None,
    *,
    namespace: str,
    name: str,
    identity: str,
    lease_seconds: int,
    observed: Observed,
    now: float,
    wall: float,
) -> Plan:
    """The next write for `identity`, given the Lease as read (None: there is none yet).

    `observed` comes from `Observed.of` for this read; `now` is the monotonic clock, `wall` the time
    written into the record.
    """
    stamp = micro_time(wall)
    if lease is None:
        spec = _spec(identity, lease_seconds=lease_seconds, acquired=stamp, renewed=stamp, transitions=0)
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace}, "spec": spec}  # fmt: skip
        return Plan("create", body)
    current = lease.get("spec") or {}
    holder = str(current.get("holderIdentity") or "")
    duration = current.get("leaseDurationSeconds") or lease_seconds
    if holder and holder != identity and observed.at + float(duration) > now:
        return Plan("wait", holder=holder)
    transitions = int(current.get("leaseTransitions") or 0)
    if holder == identity:
        acquired = str(current.get("acquireTime") or stamp)
    else:
        acquired, transitions = stamp, transitions + 1
    spec = _spec(identity, lease_seconds=lease_seconds, acquired=acquired, renewed=stamp,
                 transitions=transitions)
    metadata = {"name": name, "namespace": namespace,
                "resourceVersion": (lease.get("metadata") or {}).get("resourceVersion")}  # fmt: skip
    return Plan("replace", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
                            "spec": spec})


def released(lease: Obj, *, wall: float) -> Obj:
    """The Lease given up on a clean shutdown: no holder, so another candidate takes it at once."""
    spec = dict(lease.get("spec") or {})
    stamp = micro_time(wall)
    spec |= {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": stamp, "renewTime": stamp}
    meta = lease.get("metadata") or {}
    metadata = {"name": meta.get("name"), "namespace": meta.get("namespace"),
                "resourceVersion": meta.get("resourceVersion")}  # fmt: skip
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}
