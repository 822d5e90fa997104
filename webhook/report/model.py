"""The report's data: per workload and container, what is set now, what pod-tailor would set, and why.

Plain frozen values: the renderers (text, json, csv, html) and the dashboard read them, nobody
changes them. Quantities stay `Decimal` until a renderer writes them as Kubernetes strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from webhook.core.model.profile import ContainerProfile
from webhook.profiles.summary import UsageSummary

__all__ = [
    "ORIGINS",
    "RESOURCE_FIELDS",
    "Added",
    "ContainerReport",
    "Origin",
    "Report",
    "Resources",
    "Totals",
    "WorkloadReport",
]

# Where a value comes from, in the order a person asks about them.
ORIGINS = ("author", "history", "policy", "limitrange", "held", "unset")
RESOURCE_FIELDS = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory")

Resources = Mapping[str, Mapping[str, Decimal]]  # "requests" | "limits" -> resource -> quantity


@dataclass(frozen=True, slots=True)
class Origin:
    """Where one resource value comes from: `kind` is one of ORIGINS, `detail` the engine's own words."""

    kind: str
    detail: str = ""
    confidence: float | None = None  # history: the profile's evidence
    samples: int | None = None
    hours: float | None = None
    window: str | None = None


@dataclass(frozen=True, slots=True)
class Added:
    """A probe, preStop hook or grace period pod-tailor would add (the engine's Injection, as text)."""

    field: str
    value: str
    source: str


@dataclass(frozen=True, slots=True)
class ContainerReport:
    name: str
    role: str  # "container" | "init" | "sidecar"
    current: Resources  # what the Pod gets without pod-tailor (author, API defaults, LimitRanger)
    recommended: Resources  # after pod-tailor's patch
    sources: Mapping[str, Origin]  # "requests.cpu" -> where the recommended value comes from
    adds: tuple[Added, ...] = ()
    warnings: tuple[str, ...] = ()
    serving: bool = False  # a serving container of a long-running Pod: probes and preStop apply
    readiness: tuple[bool, bool] = (False, False)  # (now, after)
    pre_stop: tuple[bool, bool] = (False, False)
    profile: ContainerProfile | None = None
    summary: UsageSummary | None = None  # drawable usage, when the store has one

    def value(self, which: str, key: str) -> Decimal | None:
        """`value("current", "requests.cpu")`."""
        section, resource = key.split(".", 1)
        return (self.current if which == "current" else self.recommended).get(section, {}).get(resource)

    @property
    def changed(self) -> bool:
        return bool(self.adds) or self.current != self.recommended

    @property
    def origins(self) -> str:
        """Where the requests come from (`history`, or `history/policy` for cpu and memory), and where
        the limits do when that is elsewhere (`history (limits: policy)`): a limit the policy made must
        not read as sized from history."""

        def kinds(section: str) -> list[str]:
            keys = [f"{section}.{resource}" for resource in ("cpu", "memory")]
            return list(dict.fromkeys(self.sources[key].kind for key in keys if key in self.sources))

        requests, limits = kinds("requests"), kinds("limits")
        text = "/".join(requests) or "-"
        return text + (f" (limits: {'/'.join(limits)})" if limits and limits != requests else "")

    @property
    def traffic_path(self) -> str:
        """The path the preStop pause pod-tailor adds was sized for (`behind Service web type ...`), or ""."""
        for added in self.adds:
            if added.field == "preStop" and added.source.startswith(("behind ", "no Service")):
                return added.source.split("; ", 1)[0]
        return ""


@dataclass(frozen=True, slots=True)
class WorkloadReport:
    kind: str
    namespace: str
    name: str
    replicas: int  # Pods running at once (totals multiply per-Pod values by it)
    mode: str  # the namespace's mode as labelled: enforce | dry-run | off
    policy: str
    containers: tuple[ContainerReport, ...]
    profile_key: str = ""  # the workload the engine looked profiles up under, e.g. shop/Deployment/web
    pod_adds: tuple[Added, ...] = ()  # terminationGracePeriodSeconds
    warnings: tuple[str, ...] = ()
    skipped: str | None = None  # the engine left the Pod alone, and why
    assumed: bool = False  # evaluated as if opted in (--all-namespaces on a namespace that is not)
    requests: tuple[Mapping[str, Decimal], Mapping[str, Decimal]] = ({}, {})  # per Pod (now, after)
    limits: tuple[Mapping[str, Decimal], Mapping[str, Decimal]] = ({}, {})
    source: str = ""  # the file it was read from ("" for a cluster): same-named workloads of two files

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.kind}/{self.name}" + (f" ({self.source})" if self.source else "")

    @property
    def changed(self) -> bool:
        return bool(self.pod_adds) or any(c.changed for c in self.containers)


@dataclass(frozen=True, slots=True)
class Totals:
    """Sums over a set of workloads; quantities are per running Pod x replicas."""

    workloads: int = 0
    changed: int = 0  # workloads pod-tailor would change
    pods: int = 0
    containers: int = 0
    requests_now: Mapping[str, Decimal] = field(default_factory=dict)  # cpu cores, memory bytes
    requests_after: Mapping[str, Decimal] = field(default_factory=dict)
    limits_now: Mapping[str, Decimal] = field(default_factory=dict)
    limits_after: Mapping[str, Decimal] = field(default_factory=dict)
    without_requests: tuple[int, int] = (0, 0)  # containers lacking a cpu or memory request (now, after)
    serving: int = 0  # serving containers of long-running Pods (where probes and preStop apply)
    without_readiness: tuple[int, int] = (0, 0)  # of those
    without_pre_stop: tuple[int, int] = (0, 0)
    origins: Mapping[str, int] = field(default_factory=dict)  # recommended values by origin kind


@dataclass(frozen=True, slots=True)
class Report:
    workloads: tuple[WorkloadReport, ...]
    namespaces: Mapping[str, Totals]
    cluster: Totals
    generated_at: float
    source: str  # what was read: "manifests deploy.yaml", "cluster https://..."
    profiles: str = "none"  # the profile snapshot's source
    profiles_at: float = 0.0  # when the profiles were built (0: none)
    problems: tuple[str, ...] = ()  # what could not be read (RBAC, store), each naming what is missing
    modes: Mapping[str, str] = field(default_factory=dict)  # namespace -> mode as labelled
    policies: Mapping[str, str] = field(default_factory=dict)  # namespace -> policy
    in_place: Mapping[str, str] = field(default_factory=dict)  # workload -> its Pods resized in place

    @property
    def changed(self) -> bool:
        return any(w.changed for w in self.workloads)
