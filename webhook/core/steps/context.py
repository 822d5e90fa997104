"""One Pod's decision in progress: what every step reads, and what the steps add to it.

`open_context` reads the Pod once for the facts several steps need (its opt-outs, whether it serves,
its traffic path, the autoscalers around it); each step then reads those and adds patch operations,
injections, warnings and notes. A step that must end the decision (the Pod is left alone) sets
`skipped`, and no later step runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

from webhook.core.facts import ClusterFacts
from webhook.core.fit.caps import CreatedTotals
from webhook.core.model.autoscalers import Autoscalers
from webhook.core.model.decision import Cap, Injection, Note
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import (
    PROBE_PATH_ANNOTATION,
    ContainerRef,
    Exclusions,
    containers,
    is_long_running,
    serving_port,
)
from webhook.core.model.profile import WorkloadProfiles
from webhook.core.model.resourcequota import RoomReading
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.policies import FEATURES, Policy, WorkloadClass
from webhook.core.serving.ports import served_ports
from webhook.core.serving.shutdown import is_windows
from webhook.core.serving.traffic import TrafficPath, traffic_path
from webhook.core.sizing.holds import Hold

__all__ = ["Context", "Step", "open_context"]

_FEATURES = frozenset(FEATURES)


@dataclass(slots=True, eq=False)
class Context:
    """The inputs of one decision, the facts read from them, and what the steps have added so far."""

    # The inputs, as `tailor` got them (the Pod already within the annotation limits).
    pod: Mapping[str, Any]
    policy: Policy
    profiles: WorkloadProfiles
    facts: ClusterFacts
    workload: WorkloadKey | None
    # Read from the Pod once, for every step.
    features: frozenset[str]  # the policy's features less the Pod's `pod-tailor.io/exclude`
    excluded: frozenset[str]  # the features the Pod's `pod-tailor.io/exclude` turns off
    annotations: Mapping[str, Any]
    path_annotation: str | None  # a usable `pod-tailor.io/probe-path`, else None
    serving_pod: bool  # long-running (not a Job's, restartPolicy Always)
    windows: bool
    path: TrafficPath | None  # the Services and routes to the Pod; None: not known (no cluster watch)
    sizeable: list[ContainerRef]  # init and regular containers less `pod-tailor.io/exclude-containers`
    pod_level: frozenset[str]  # resources the author sized for the Pod as a whole (spec.resources)
    scalers: Autoscalers  # the HPAs and VPAs around the workload
    # container -> the port a selecting Service sends to; None: no Service with ports selects the Pod
    served: Mapping[str, int] | None
    # Added by the steps.
    patch: PatchBuilder
    warnings: list[str]
    injections: list[Injection] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    holds: dict[str, Mapping[str, Hold]] = field(default_factory=dict)  # container -> resource -> Hold
    sleeps: list[int] = field(default_factory=list)  # preStop sleeps added, in seconds
    skipped: str | None = None  # set by a step that leaves the whole Pod alone: no later step runs
    workload_class: WorkloadClass | None = None  # the Pod's class (`classify`), with its reason
    container_policies: dict[str, Policy] = field(default_factory=dict)  # a container class's policy
    caps: list[Cap] = field(default_factory=list)  # values node fit and quota lowered
    # "requests.cpu" / "limits.cpu" -> how much more the Pod may ask (the node, the quotas): the boost's room
    room: dict[str, tuple[Decimal, str]] = field(default_factory=dict)
    boosted: list[Injection] = field(default_factory=list)  # the boosted cpu values, as requests/limits
    room_reading: RoomReading | None = None  # how the quota step read its quotas' room (None: not at all)
    # The Pod's totals as created, per set of injected values (node fit, quota and the charges share them).
    created_totals: CreatedTotals | None = None

    def totals_of(self) -> CreatedTotals:
        """The decision's `CreatedTotals` (made on first use)."""
        if self.created_totals is None:
            self.created_totals = CreatedTotals(self.pod)
        return self.created_totals

    @property
    def targeted(self) -> frozenset[int | str]:
        """Container ports (numbers or names) the Services selecting the Pod send to."""
        return self.path.targeted() if self.path is not None else frozenset()

    def serves(self, ref: ContainerRef) -> bool:
        """Whether `ref` serves traffic, in a long-running Pod: when a Service selects the Pod, a
        container it sends to (`webhook.core.serving.ports`); else a regular container with a TCP port."""
        if ref.group != "containers" or not self.serving_pod:
            return False
        if self.served is not None:
            return ref.name in self.served
        return serving_port(ref.body) is not None


class Step(NamedTuple):
    """One feature of the engine: its name (in docs and errors) and what it does to a `Context`."""

    name: str
    run: Callable[[Context], None]


def _pod_level_resources(pod: Mapping[str, Any]) -> frozenset[str]:
    """Resources the author sized for the Pod as a whole (spec.resources): containers share that budget."""
    pod_resources = pod["spec"].get("resources")
    if not isinstance(pod_resources, dict):
        return frozenset()
    names: set[str] = set()
    for section in ("requests", "limits"):
        if isinstance(pod_resources.get(section), dict):
            names.update(str(key) for key in pod_resources[section])
    return frozenset(names)


def open_context(
    pod: Mapping[str, Any],
    *,
    policy: Policy,
    profiles: WorkloadProfiles,
    facts: ClusterFacts,
    workload: WorkloadKey | None,
    opt_out: Exclusions,
    warnings: list[str],
) -> Context:
    """The context for one Pod that is not opted out as a whole; `warnings` so far are kept."""
    unknown = opt_out.features - _FEATURES
    if unknown:
        warnings.append(f"unknown feature(s) in pod-tailor.io/exclude: {', '.join(sorted(unknown))}")
    metadata = pod.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    path_annotation = annotations.get(PROBE_PATH_ANNOTATION)
    if path_annotation is not None and not (
        isinstance(path_annotation, str) and path_annotation.startswith("/")
    ):
        warnings.append(f"ignored {PROBE_PATH_ANNOTATION}={path_annotation!r}: not an absolute path")
        path_annotation = None
    serving_pod = is_long_running(pod)
    labels = metadata.get("labels") or {}
    path = traffic_path(facts.traffic, labels) if serving_pod else None
    targets = path.targeted() if path is not None else frozenset()
    regular = [ref for ref in containers(pod) if ref.group == "containers"]
    return Context(
        pod=pod,
        policy=policy,
        profiles=profiles,
        facts=facts,
        workload=workload,
        features=policy.features - opt_out.features,
        excluded=opt_out.features,
        annotations=annotations,
        path_annotation=path_annotation,
        serving_pod=serving_pod,
        windows=is_windows(pod),
        path=path,
        sizeable=[ref for ref in containers(pod) if ref.name not in opt_out.containers],
        pod_level=_pod_level_resources(pod),
        scalers=facts.around(pod, workload),
        served=served_ports(regular, targets) if targets else None,
        patch=PatchBuilder(pod),
        warnings=warnings,
    )
