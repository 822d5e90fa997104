"""One workload through the engine: the Pod its controller would create, `decide`, and the answer read back.

The decision is the server's own (`webhook.core.engine.decide` over the same snapshots); this module
only reads it: the patched Pod gives the values after, the injections say where each came from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from webhook.core.engine import decide
from webhook.core.model.decision import Basis, Decision, Injection
from webhook.core.model.namespace import MODE_LABEL, Mode
from webhook.core.model.pod import ContainerRef, containers, is_long_running, limit_ranger_marks, serving_port
from webhook.core.model.profile import Recommendation, WorkloadProfiles
from webhook.core.model.quantity import QuantityError, parse
from webhook.core.model.workload import WorkloadKey, pod_workload
from webhook.core.sizing.podlimits import pod_total
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.admitted import as_created
from webhook.profiles.summary import UsageSummary
from webhook.report.collect import Collected
from webhook.report.model import Added, ContainerReport, Origin, Resources, WorkloadReport

Summaries = Mapping[WorkloadKey, Mapping[str, UsageSummary]]  # from the profile document

__all__ = ["evaluate", "everything_opted_in", "origin_of"]

_RESOURCE_FIELDS = ("requests.", "limits.")


def everything_opted_in(cluster: ClusterSnapshot) -> ClusterSnapshot:
    """The cluster as if every namespace were labelled `enforce` (keeping its policy): `--all-namespaces`."""
    labels = {
        name: {**values, MODE_LABEL: Mode.ENFORCE.value}
        for name, values in (cluster.namespaces or {}).items()
        if values.get(MODE_LABEL) not in (Mode.ENFORCE.value, Mode.DRY_RUN.value)
    }
    if cluster.namespaces is None:
        return dataclasses.replace(cluster, default_mode=Mode.ENFORCE)
    merged = {**cluster.namespaces, **labels}
    return dataclasses.replace(cluster, namespaces=merged, default_mode=Mode.ENFORCE)


def origin_of(injection: Injection, recommendation: Recommendation | None) -> Origin:
    """Where an injected resource value comes from: the engine's basis, with its explanation."""
    if injection.basis is Basis.HISTORY and recommendation is not None:
        ev = recommendation.evidence
        return Origin("history", injection.source, ev.confidence, ev.samples, ev.hours, ev.window)
    return Origin(injection.basis.value, injection.source)


def _resources(body: Mapping[str, Any]) -> dict[str, dict[str, Decimal]]:
    out: dict[str, dict[str, Decimal]] = {"requests": {}, "limits": {}}
    resources = body.get("resources") or {}
    for section in out:
        values = resources.get(section) if isinstance(resources, Mapping) else None
        for name, raw in (values or {}).items() if isinstance(values, Mapping) else ():
            try:
                out[section][str(name)] = parse(raw)
            except QuantityError:
                continue
    return out


def _role(ref: ContainerRef) -> str:
    if ref.group == "containers":
        return "container"
    return "sidecar" if ref.is_native_sidecar else "init"


def _added(injections: Sequence[Injection]) -> dict[tuple[str, str, str], Decimal]:
    """The resource values the decision sets, as `pod_total` takes them: (section, container, resource).

    Read from the injections rather than by applying the patch: the engine writes each value to the
    patch and to its injection from the same number, and a report of thousands of workloads would
    spend as long applying patches as deciding them.
    """
    out = {}
    for injection in injections:
        section, _, resource = injection.field.partition(".")
        if section in ("requests", "limits"):
            out[(section, injection.target, resource)] = parse(injection.value)
    return out


def _of(added: Mapping[tuple[str, str, str], Decimal], section: str, name: str) -> dict[str, Decimal]:
    return {
        resource: value
        for (where, target, resource), value in added.items()
        if (where, target) == (section, name)
    }


def _has(body: Mapping[str, Any], field: str) -> bool:
    return body.get(field) is not None


def _resource_injections(injected: Mapping[tuple[str, str], Injection], name: str) -> dict[str, Injection]:
    return {f: i for (t, f), i in injected.items() if t == name and f.startswith(_RESOURCE_FIELDS)}


def _has_pre_stop(body: Mapping[str, Any]) -> bool:
    return isinstance(body.get("lifecycle"), Mapping) and body["lifecycle"].get("preStop") is not None


def _held_or_unset(name: str, resource: str, warnings: Sequence[str], decision: Decision) -> Origin:
    held = next((n for n in decision.notes if n.target == name and resource in n.resources), None)
    if held is not None:
        return Origin("held", held.text)
    mine = [w for w in warnings if w.startswith(f"{name}:") and resource in w]
    if decision.skipped:
        return Origin("unset", decision.skipped)
    return Origin("unset", mine[0] if mine else "not set")


def _sources(
    ref: ContainerRef,
    *,
    now: Resources,
    after: Resources,
    template: Mapping[str, Any] | None,
    injected: Mapping[str, Injection],
    marks: frozenset[tuple[str, str, str]],
    recommendation: Recommendation | None,
    warnings: Sequence[str],
    decision: Decision,
    sized: Sequence[str],
) -> dict[str, Origin]:
    origins: dict[str, Origin] = {}
    written = _resources(template) if template is not None else None
    for section in ("requests", "limits"):
        wanted = set(now[section]) | set(after[section]) | set(sized if section == "requests" else ())
        for resource in sorted(wanted):
            key = f"{section}.{resource}"
            if key in injected:
                origins[key] = origin_of(injected[key], recommendation)
            elif resource not in after[section]:
                origins[key] = _held_or_unset(ref.name, resource, warnings, decision)
            elif (ref.name, section[:-1], resource) in marks:
                origins[key] = Origin("limitrange", "LimitRange default (set by LimitRanger)")
            elif written is not None and section == "requests" and resource not in written["requests"]:
                origins[key] = Origin("author", "= the limit (the API server defaults a request to it)")
            else:
                origins[key] = Origin("author")
    return origins


def evaluate(
    item: Collected,
    *,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    decide_on: ClusterSnapshot | None = None,
    summaries: Summaries | None = None,
) -> WorkloadReport:
    """The engine's decision for `item`'s Pod, as a report row. `decide_on` (default `cluster`) is the
    cluster the decision is made against (`everything_opted_in` for "what if"); `cluster` gives the
    namespace's real mode."""
    real = cluster.settings_for(item.namespace)
    hypothetical = decide_on or cluster
    facts = hypothetical.facts_for(item.namespace)
    created = as_created(item.pod, limit_ranges=facts.limit_ranges)
    settings, decision = decide(created, namespace=item.namespace, cluster=hypothetical, profiles=profiles)
    added = _added(decision.injections)
    key = pod_workload(created, item.namespace)
    workload_profiles: WorkloadProfiles = profiles.for_workload(key)
    drawn = (summaries or {}).get(key, {})
    injected: dict[tuple[str, str], Injection] = {(i.target, i.field): i for i in decision.injections}
    marks = limit_ranger_marks(created)
    long_running = is_long_running(created)
    written = containers(item.pod) if isinstance(item.pod.get("spec"), dict) else ()
    templates = {(ref.group, ref.index): ref.body for ref in written}
    sized = tuple(settings_resources(hypothetical, settings.policy))
    reports = []
    warnings = list(decision.warnings)
    claimed: set[str] = set()
    for ref in containers(created):
        mine = [w for w in warnings if w.startswith(f"{ref.name}:")]
        claimed.update(mine)
        profile = workload_profiles.get(ref.name)
        now = _resources(ref.body)
        later = {section: {**values, **_of(added, section, ref.name)} for section, values in now.items()}
        sources = _sources(
            ref,
            now=now,
            after=later,
            template=templates.get((ref.group, ref.index)),
            injected=_resource_injections(injected, ref.name),
            marks=marks,
            recommendation=profile if isinstance(profile, Recommendation) else None,
            warnings=mine,
            decision=decision,
            sized=sized,
        )
        adds = tuple(
            Added(i.field, i.value, i.source)
            for i in decision.injections
            if i.target == ref.name and not i.field.startswith(_RESOURCE_FIELDS)
        )
        fields = {a.field for a in adds}
        serving = long_running and ref.group == "containers" and serving_port(ref.body) is not None
        reports.append(
            ContainerReport(
                name=ref.name,
                role=_role(ref),
                current=now,
                recommended=later,
                sources=sources,
                adds=adds,
                warnings=tuple(w.removeprefix(f"{ref.name}:").strip() for w in mine),
                serving=serving,
                readiness=(
                    _has(ref.body, "readinessProbe"),
                    _has(ref.body, "readinessProbe") or "readinessProbe" in fields,
                ),
                pre_stop=(_has_pre_stop(ref.body), _has_pre_stop(ref.body) or "preStop" in fields),
                profile=profile,
                summary=drawn.get(ref.name),
            )
        )
    return WorkloadReport(
        kind=item.kind,
        namespace=item.namespace,
        name=item.name,
        replicas=item.replicas,
        mode=real.mode.value,
        policy=decision.policy,
        containers=tuple(reports),
        profile_key=str(key),
        pod_adds=tuple(Added(i.field, i.value, i.source) for i in decision.injections if i.target == "pod"),
        warnings=tuple(w for w in warnings if w not in claimed),
        skipped=decision.skipped,
        assumed=real.mode is Mode.OFF and settings.mode is not Mode.OFF,
        requests=(pod_total(created, "requests", added={}), pod_total(created, "requests", added=added)),
        limits=(pod_total(created, "limits", added={}), pod_total(created, "limits", added=added)),
        source="" if item.origin == "cluster" else item.origin,
    )


def settings_resources(cluster: ClusterSnapshot, policy_name: str) -> list[str]:
    """The resources the namespace's policy sizes (cpu, memory, ...): a missing one is worth a row."""
    policy = cluster.policies.get(policy_name) or cluster.policies.policies.get("default")
    return sorted(policy.resources) if policy is not None else []
