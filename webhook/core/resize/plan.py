"""In-place right-sizing of one running Pod: what to resize it to, and whether that is safe (pure).

What to: exactly what admission would give the Pod now. The Pod is taken back to what its author
wrote (the requests and limits pod-tailor set, read from its own `pod-tailor.io/injected`
annotation, are removed) and run through the same engine with today's profile, policy and facts, so
LimitRanges, autoscaler holds, the policy's bounds and limit rules and the steady step over builds
are the admission rules themselves, never a copy. Only values pod-tailor set are ever moved; a
request or limit is never added or removed.

Whether safe, value by value, each refusal said: a resource an HPA scales on by Utilization or a VPA
controls is never touched; nor one whose `resizePolicy` is `RestartContainer`; nothing before the
workload has `learningHours` of history; nothing smaller than `minChange`; a step no larger than the
policy's `autoscalers.steps` allow a day since the value last changed; memory lowered only while what
the container uses now stays under 80 % of the new value (the kubelet cannot take back memory in
use); the QoS class never changes (the API refuses it); an increase only when it fits what is free on
the Pod's node and under the namespace's quotas.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

from webhook.core.boost.record import BOOSTED_LABEL
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.decision import Injection, PatchOp
from webhook.core.model.namespace import Mode, NamespaceSettings
from webhook.core.model.pod import INJECTED_ANNOTATION, SKIP_LABEL, ContainerRef, containers
from webhook.core.model.profile import Recommendation, WorkloadProfiles
from webhook.core.model.qos import qos_class
from webhook.core.model.quantity import parse, parse_or_none, render
from webhook.core.model.timestamps import unstamp
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.policies import Policy
from webhook.core.policy.sections import BoostPolicy
from webhook.core.resize.history import RIGHTSIZE_LABEL, Change, Entry
from webhook.core.serving.shutdown import is_windows
from webhook.core.sizing.holds import container_holds
from webhook.core.sizing.steady import DAY

__all__ = [
    "MEMORY_HEADROOM",
    "Around",
    "Plan",
    "Resize",
    "namespace_stop",
    "not_eligible",
    "owned_fields",
    "plan_resize",
]

MEMORY_HEADROOM = Decimal("0.8")  # memory is lowered only while usage stays under 80 % of the new value
_FIELDS = ("requests", "limits")
_UNIT = {"cpu": Decimal("0.001"), "memory": Decimal(1)}
_ORDER = {"requests.cpu": 0, "requests.memory": 1, "limits.cpu": 2, "limits.memory": 3}


@dataclass(frozen=True, slots=True)
class Around:
    """What the controller knows around one Pod besides the Pod itself; None is "not known"."""

    now: float
    node_free: Mapping[str, Decimal] | None = None  # cpu/memory free on the Pod's node
    memory_usage: Mapping[str, Decimal] | None = None  # container -> working set bytes, now
    quota_room: Mapping[str, Decimal] | None = None  # "requests.cpu" -> hard - used (tightest quota)
    history: tuple[Entry, ...] = ()  # the Pod's `pod-tailor.io/resized` record


@dataclass(frozen=True, slots=True)
class Resize:
    changes: tuple[Change, ...]
    ops: tuple[PatchOp, ...]  # the JSON Patch for `pods/{name}/resize`
    why: str

    def describe(self) -> str:
        by: dict[str, list[str]] = {}
        for change in self.changes:
            by.setdefault(change.container, []).append(change.describe())
        return "; ".join(f"{name}: {', '.join(parts)}" for name, parts in by.items())


@dataclass(frozen=True, slots=True)
class Plan:
    """A resize to ask for, or None and why not (each value left alone, with its reason)."""

    resize: Resize | None
    reasons: tuple[str, ...] = ()
    needs_usage: bool = False  # memory would be lowered if the containers' usage were known

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


def namespace_stop(settings: NamespaceSettings, labels: Mapping[str, str], policy: Policy) -> str | None:
    """Why no Pod of this namespace is resized, or None: enforce mode, no stop label, the policy on."""
    if settings.mode is not Mode.ENFORCE:
        return f"namespace mode {settings.mode.value}, not enforce"
    if labels.get(RIGHTSIZE_LABEL) == "off":
        return f"namespace label {RIGHTSIZE_LABEL}=off"
    if not policy.in_place.enabled:
        return f'policy "{policy.name}": inPlace.enabled is false'
    return None


def not_eligible(pod: Mapping[str, Any]) -> str | None:
    """Why this Pod cannot be resized in place now, or None."""
    metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    labels = metadata.get("labels") or {}
    if metadata.get("deletionTimestamp"):
        return "terminating"
    if (pod.get("status") or {}).get("phase") != "Running":
        return f"phase {(pod.get('status') or {}).get('phase') or 'unknown'}"
    if not spec.get("nodeName"):
        return "not scheduled"
    if str(labels.get(SKIP_LABEL, "")).lower() == "true":
        return f"pod label {SKIP_LABEL}=true"
    if labels.get(BOOSTED_LABEL) == "true":
        return "its start-up boost is not given back yet"
    if is_windows(pod):
        return "Windows Pods cannot be resized in place"
    return None


def _entries(text: str) -> list[str]:
    """`a=1 (x; y); b=2 (z)` -> ["a=1 (x; y)", "b=2 (z)"]: split at "; " outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0 and text.startswith("; ", index):
            parts.append(text[start:index])
            start = index + 2
    parts.append(text[start:])
    return parts


def owned_fields(pod: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """container -> the `requests.X`/`limits.X` (cpu, memory) pod-tailor set at admission."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(INJECTED_ANNOTATION)
    owned: dict[str, set[str]] = {}
    for line in text.splitlines()[1:] if isinstance(text, str) else ():
        name, _, rest = line.partition(": ")
        for entry in _entries(rest):
            field = entry.partition("=")[0]
            section, _, resource = field.partition(".")
            if section in _FIELDS and resource in _UNIT:
                owned.setdefault(name, set()).add(field)
    return {name: frozenset(fields) for name, fields in owned.items()}


def _read(container: Mapping[str, Any], field: str) -> Decimal | None:
    """The container's `requests.cpu`-like `field`; None when absent or unreadable."""
    section, _, resource = field.partition(".")
    return parse_or_none(((container.get("resources") or {}).get(section) or {}).get(resource))


def _as_authored(pod: Mapping[str, Any], owned: Mapping[str, frozenset[str]]) -> dict[str, Any]:
    """The Pod with the values pod-tailor set taken out: what admission decided on."""
    authored = copy.deepcopy(dict(pod))
    authored.pop("status", None)
    for ref in containers(authored):
        resources = ref.body.get("resources") or {}
        for field in owned.get(ref.name, ()):
            section, _, resource = field.partition(".")
            (resources.get(section) or {}).pop(resource, None)
    return authored


def admission_values(
    pod: Mapping[str, Any],
    owned: Mapping[str, frozenset[str]],
    *,
    policy: Policy,
    profiles: WorkloadProfiles,
    facts: ClusterFacts,
    workload: WorkloadKey,
) -> dict[tuple[str, str], Injection]:
    """(container, field) -> what admission would set now, for the fields pod-tailor owns."""
    steady = dataclasses.replace(policy, startup_boost=BoostPolicy())  # the boost is the start's, not this
    authored = _as_authored(pod, owned)
    decision = tailor(authored, policy=steady, profiles=profiles, facts=facts, workload=workload)
    return {
        (injection.target, injection.field): injection
        for injection in decision.injections
        if injection.field in owned.get(injection.target, ())
    }


def _round(resource: str, value: Decimal) -> Decimal:
    unit = _UNIT[resource]
    return (value / unit).to_integral_value(rounding=ROUND_CEILING) * unit


def _last_change(history: Sequence[Entry], container: str, resource: str) -> float | None:
    for entry in reversed(history):
        if entry.result == "asked" and any(
            c.container == container and c.resource == resource for c in entry.changes
        ):
            return entry.at
    return None


def _stepped(current: Decimal, wanted: Decimal, *, days: Decimal, policy: Policy) -> Decimal:
    """At most one day's step of `autoscalers.steps`, and less when the value changed less than a day ago."""
    steps = policy.autoscalers.steps
    days = min(Decimal(1), max(Decimal(0), days))
    if wanted < current and steps.down_per_day < 1:
        return max(wanted, current * (1 - steps.down_per_day) ** days)
    if wanted > current and steps.up_per_day is not None:
        return min(wanted, current * (1 + steps.up_per_day) ** days)
    return wanted


@dataclass
class _Draft:
    """The values planned so far for one Pod, and what was left out."""

    values: dict[tuple[str, str], Decimal]  # (container, field) -> new value
    current: dict[tuple[str, str], Decimal]
    notes: list[str]
    sources: dict[str, list[str]]  # container -> what admission would set now, as said in the why
    needs_usage: bool = False

    def drop(self, container: str, resource: str, why: str) -> None:
        for key in [k for k in self.values if k[0] == container and k[1].endswith("." + resource)]:
            del self.values[key]
        self.notes.append(f"{container}: {resource} {why}")

    def delta(self, section: str, resource: str) -> Decimal:
        return sum(
            (value - self.current[key] for key, value in self.values.items()
             if key[1] == f"{section}.{resource}"),
            Decimal(0),
        )  # fmt: skip


def _container_values(
    ref: ContainerRef,
    targets: Mapping[tuple[str, str], Injection],
    *,
    policy: Policy,
    profile: object,
    held: Mapping[str, str],
    owned: frozenset[str],
    around: Around,
    started: float,
    draft: _Draft,
) -> None:
    """Plan one container's changes into `draft` (requests lead, an owned limit keeps its ratio)."""
    rules = policy.in_place
    if not isinstance(profile, Recommendation) or profile.evidence.hours < rules.learning_hours:
        hours = profile.evidence.hours if isinstance(profile, Recommendation) else 0.0
        draft.notes.append(
            f"{ref.name}: learning ({hours:.0f}h of history, {rules.learning_hours:g}h needed)"
        )
        return
    for resource in _UNIT:
        request_key, limit_key = (ref.name, f"requests.{resource}"), (ref.name, f"limits.{resource}")
        target = targets.get(request_key)
        current = _read(ref.body, f"requests.{resource}")
        if current is None or f"requests.{resource}" not in owned:
            continue
        if resource in held:
            draft.notes.append(f"{ref.name}: {resource} left alone: {held[resource]}")
            continue
        if ref.restarts_on_resize(resource):
            draft.notes.append(
                f"{ref.name}: {resource} left alone: resizePolicy RestartContainer would restart it"
            )
            continue
        if target is None:
            continue
        wanted = parse(target.value)
        if not rules.min_change.passed(resource, current, wanted):
            continue
        changed_at = _last_change(around.history, ref.name, resource) or started
        stepped = _stepped(current, wanted, days=Decimal(repr(around.now - changed_at)) / DAY, policy=policy)
        new = _round(resource, stepped)
        if not rules.min_change.passed(resource, current, new):
            draft.notes.append(
                f"{ref.name}: {resource} waits for the step limit (history says {render(resource, wanted)})"
            )
            continue
        draft.values[request_key], draft.current[request_key] = new, current
        held_back = "" if new == wanted else ", one step"
        draft.sources.setdefault(ref.name, []).append(f"{resource} {target.value}{held_back}")
        limit, limit_target = _read(ref.body, f"limits.{resource}"), targets.get(limit_key)
        if limit is not None and limit_target is not None:
            scaled = parse(limit_target.value) * new / wanted
            draft.values[limit_key], draft.current[limit_key] = max(new, _round(resource, scaled)), limit
        elif limit is not None and new > limit:
            draft.values.pop(request_key)
            draft.notes.append(
                f"{ref.name}: {resource} stays: its limit {render(resource, limit)} is the author's"
            )


def _memory_safe(draft: _Draft, usage: Mapping[str, Decimal] | None) -> None:
    for container in sorted({k[0] for k, v in draft.values.items() if k[1].endswith(".memory")}):
        lowered = [
            v
            for (name, field), v in draft.values.items()
            if name == container and field.endswith(".memory") and v < draft.current[(name, field)]
        ]
        if not lowered:
            continue
        used = None if usage is None else usage.get(container)
        if used is None:
            draft.needs_usage = draft.needs_usage or usage is None
            draft.drop(container, "memory", "not lowered: current usage unknown")
        elif used > min(lowered) * MEMORY_HEADROOM:
            draft.drop(
                container,
                "memory",
                f"not lowered: uses {render('memory', used)}, above 80 % of {render('memory', min(lowered))}",
            )


def _fits(draft: _Draft, around: Around) -> None:
    """Increases only where the node and the quotas have room for them."""
    for resource in _UNIT:
        grow = draft.delta("requests", resource)
        if grow <= 0:
            continue
        free = None if around.node_free is None else around.node_free.get(resource)
        problem = ""
        if free is None:
            problem = "not raised: free allocatable on the node unknown"
        elif grow > free:
            problem = (
                f"not raised: +{render(resource, grow)} does not fit the node's free "
                f"{render(resource, max(free, Decimal(0)))}"
            )
        for section in _FIELDS:
            room = None if around.quota_room is None else around.quota_room.get(f"{section}.{resource}")
            more = draft.delta(section, resource)
            if not problem and room is not None and more > room:
                problem = f"not raised: +{render(resource, more)} {section} is over the quota's room"
        if problem:
            for container in sorted(
                {
                    k[0]
                    for k, v in draft.values.items()
                    if k[1].endswith("." + resource) and v > draft.current[k]
                }
            ):
                draft.drop(container, resource, problem)


def plan_resize(
    pod: Mapping[str, Any],
    *,
    policy: Policy,
    profiles: WorkloadProfiles,
    facts: ClusterFacts,
    workload: WorkloadKey,
    around: Around,
) -> Plan:
    """The resize to ask for this running Pod now, or why none."""
    owned = owned_fields(pod)
    if not owned:
        return Plan(None, ("no value set by pod-tailor",))
    targets = admission_values(pod, owned, policy=policy, profiles=profiles, facts=facts, workload=workload)
    scalers = facts.around(pod, workload)
    started = unstamp((pod.get("status") or {}).get("startTime")) or around.now
    draft = _Draft({}, {}, [], {})
    resizable = [ref for ref in containers(pod) if ref.group == "containers" or ref.is_native_sidecar]
    for ref in resizable:
        holds = container_holds(scalers, policy.autoscalers, ref) if scalers else {}
        _container_values(
            ref, targets, policy=policy, profile=profiles.get(ref.name),
            held={resource: hold.reason for resource, hold in holds.items()},
            owned=owned.get(ref.name, frozenset()), around=around, started=started, draft=draft,
        )  # fmt: skip
    _memory_safe(draft, around.memory_usage)
    _fits(draft, around)
    if not draft.values:
        return Plan(
            None,
            tuple(draft.notes) or ("within minChange of what admission would set",),
            needs_usage=draft.needs_usage,
        )
    after = [Injection(name, field, render(field.partition(".")[2], value), "")
             for (name, field), value in draft.values.items()]  # fmt: skip
    # The API server compares the class the Pod started with (status.qosClass) with the new shape.
    before = str((pod.get("status") or {}).get("qosClass") or qos_class(pod, []))
    now = qos_class(pod, after)
    if before != now:
        return Plan(None, (*draft.notes, f"would change the QoS class {before} -> {now}"))
    paths = {ref.name: ref.path for ref in resizable}
    ops: list[PatchOp] = []
    changes: list[Change] = []
    for (name, field), value in sorted(draft.values.items(), key=lambda kv: (kv[0][0], _ORDER[kv[0][1]])):
        section, _, resource = field.partition(".")
        text = render(resource, value)
        path = "/" + "/".join(str(part) for part in (*paths[name], "resources", section, resource))
        ops.append({"op": "replace", "path": path, "value": text})
        changes.append(Change(name, field, render(resource, draft.current[(name, field)]), text))
    resize = Resize(tuple(changes), tuple(ops), "")
    said = "; ".join(f"{name} {', '.join(parts)}" for name, parts in sorted(draft.sources.items()))
    why = f"admission would set {said} now, from {_basis(profiles)}"
    for entry in around.history:
        if entry.result != "asked" and entry.same_change(changes):
            return Plan(None, (*draft.notes, f"asked before and {entry.result.partition(':')[0]}: not again"))
    return Plan(
        dataclasses.replace(resize, why=f"{resize.describe()} ({why})"),
        tuple(draft.notes),
        needs_usage=draft.needs_usage,
    )


def _basis(profiles: WorkloadProfiles) -> str:
    for profile in profiles.values():
        if isinstance(profile, Recommendation):
            ev = profile.evidence
            return f"{ev.window} of history ({ev.hours:.0f}h, p{ev.cpu_percentile:g} cpu, peak memory)"
    return "history"
