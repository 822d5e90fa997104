"""The engine: one Pod in, the patch that fills in what its author left out (and why) out.

Pure: no I/O, no clock, no framework. Run on its own output it returns an empty patch, so the API
server may reinvoke it (reinvocationPolicy IfNeeded).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from webhook.core.annotations import within_limits
from webhook.core.boostpod import apply_boost
from webhook.core.decision import Decision, Injection, Note
from webhook.core.explain import explanation
from webhook.core.facts import ClusterFacts
from webhook.core.headroom import hpa_warnings
from webhook.core.holds import container_holds, deferral_notes
from webhook.core.namespace import Mode, NamespaceSettings
from webhook.core.patch import PatchBuilder
from webhook.core.pod import (
    INJECTED_ANNOTATION,
    PROBE_PATH_ANNOTATION,
    ContainerRef,
    containers,
    exclusions,
    guessed_requests,
    is_long_running,
    limit_ranger_marks,
    malformed,
    serving_port,
)
from webhook.core.podlimits import Withheld, has_pod_limits, withhold
from webhook.core.policy import FEATURES, LimitMode, Policy
from webhook.core.probes import probe_container
from webhook.core.profile import WorkloadProfiles
from webhook.core.qos import qos_class
from webhook.core.resources import size_container
from webhook.core.shutdown import existing_sleep, grace_period, grace_set_by_person, is_windows, pre_stop
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.core.statistic import for_workload
from webhook.core.traffic import pause_for, readiness_gap, traffic_path
from webhook.core.workload import WorkloadKey, pod_workload

__all__ = ["decide", "tailor"]

_FEATURES = frozenset(FEATURES)


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


def tailor(
    pod: Mapping[str, Any],
    *,
    policy: Policy,
    profiles: WorkloadProfiles,
    facts: ClusterFacts,
    workload: WorkloadKey | None = None,
) -> Decision:
    """Decide what to inject into `pod` under `policy`, using `profiles` (container name -> profile)."""
    problem = malformed(pod)
    if problem is not None:
        return Decision(skipped=f"not a usable Pod: {problem}", policy=policy.name)
    return _tailor_checked(pod, policy=policy, profiles=profiles, facts=facts, workload=workload)


def _tailor_checked(
    pod: Mapping[str, Any],
    *,
    policy: Policy,
    profiles: WorkloadProfiles,
    facts: ClusterFacts,
    workload: WorkloadKey | None,
) -> Decision:
    """`tailor` for a Pod that passed `malformed`."""
    label = str(workload) if workload else ""
    pod, warnings = within_limits(pod)
    opt_out = exclusions(pod)
    if opt_out.skip_pod:
        return Decision(skipped="pod label pod-tailor.io/skip=true", policy=policy.name, workload=label)
    unknown = opt_out.features - _FEATURES
    if unknown:
        warnings.append(f"unknown feature(s) in pod-tailor.io/exclude: {', '.join(sorted(unknown))}")
    features = policy.features - opt_out.features
    patch = PatchBuilder(pod)
    injections: list[Injection] = []
    marks, pod_level = limit_ranger_marks(pod), _pod_level_resources(pod)
    guessed = guessed_requests(pod)
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    path_annotation = annotations.get(PROBE_PATH_ANNOTATION)
    if path_annotation is not None and not (
        isinstance(path_annotation, str) and path_annotation.startswith("/")
    ):
        warnings.append(f"ignored {PROBE_PATH_ANNOTATION}={path_annotation!r}: not an absolute path")
        path_annotation = None
    serving_pod, windows = is_long_running(pod), is_windows(pod)
    labels = (pod.get("metadata") or {}).get("labels") or {}
    path = traffic_path(facts.traffic, labels) if serving_pod else None
    pause = pause_for(path, default=policy.pre_stop_seconds, sleeps=policy.sleeps_by_path)
    targeted = path.targeted() if path is not None else frozenset()
    personal_grace = grace_set_by_person(pod)
    sleeps: list[int] = []

    sizeable = [ref for ref in containers(pod) if ref.name not in opt_out.containers]
    scalers = facts.around(pod, workload)
    holds = {ref.name: container_holds(scalers, policy.autoscalers, ref) for ref in sizeable if scalers}

    def sized(ref: ContainerRef, *, into: PatchBuilder, held: Withheld) -> tuple[list[Injection], list[str]]:
        """The container's resource injections and warnings, with `held` not set (see `podlimits`)."""
        return size_container(
            ref, policy=policy, profile=profiles.get(ref.name), limit_ranges=facts.limit_ranges,
            limit_ranger_marks=marks, pod_level=pod_level, patch=into, withheld=held, guessed_before=guessed,
            holds=holds.get(ref.name),
        )

    withheld: Withheld = frozenset()
    if "resources" in features and has_pod_limits(facts.limit_ranges):
        withheld, held_back = withhold(
            pod,
            facts.limit_ranges,
            sized=lambda held: [
                found for ref in sizeable for found in sized(ref, into=PatchBuilder(pod), held=held)[0]
            ],
        )
        warnings += held_back
    notes: list[Note] = []
    for ref in sizeable:
        profile = profiles.get(ref.name)
        if "resources" in features:
            added, problems = sized(ref, into=patch, held=withheld)
            injections += added
            warnings += problems
            if holds.get(ref.name):
                kept = {r: h for r, h in holds[ref.name].items() if r not in pod_level}
                limited = (r for r, rules in policy.resources.items() if rules.limit is not LimitMode.NONE)
                notes += deferral_notes(ref, kept, limited=frozenset(limited))
        if ref.group != "containers" or not serving_pod or serving_port(ref.body) is None:
            continue
        if "probes" in features:
            injections += probe_container(
                ref, policy=policy, path_annotation=path_annotation, profile=profile, patch=patch,
                targeted=targeted,
            )
        gap = readiness_gap(ref.body, path)
        if gap is not None:
            notes.append(Note(ref.name, gap))
        if "preStop" in features:
            injection, seconds, warning = pre_stop(
                ref, policy=policy, facts=facts, windows=windows, grace=personal_grace, patch=patch,
                pause=pause,
            )
            if injection is not None:
                injections.append(injection)
                sleeps.append(seconds)
            if warning:
                warnings.append(warning)
    if policy.startup_boost.enabled and "resources" in features and serving_pod and not windows:
        injections += apply_boost(
            pod, sizeable, policy=policy, profiles=profiles, injections=injections, facts=facts,
            holds=holds, pod_level=pod_level, patch=patch, notes=notes,
        )
    if sleeps and "gracePeriod" in features:
        sleeps += [found for ref in containers(pod) if (found := existing_sleep(ref.body)) is not None]
        grace, warning = grace_period(pod, policy=policy, longest_sleep=max(sleeps), patch=patch)
        if grace is not None:
            injections.append(grace)
        if warning:
            warnings.append(warning)
    if scalers.hpas:
        warnings += hpa_warnings(scalers, pod=pod, injections=injections, profiles=profiles, policy=policy,
                                 pod_level=pod_level)
    if not injections:
        return Decision(warnings=tuple(warnings), policy=policy.name, workload=label, notes=tuple(notes))
    previous = annotations.get(INJECTED_ANNOTATION)
    text = explanation(
        injections,
        policy=policy.name,
        workload=label,
        previous=previous if isinstance(previous, str) else None,
        notes=notes,
        qos=qos_class(pod, injections),
    )
    patch.set(("metadata", "annotations", INJECTED_ANNOTATION), text)
    return Decision(
        ops=patch.ops,
        injections=tuple(injections),
        warnings=tuple(warnings),
        policy=policy.name,
        workload=label,
        notes=tuple(notes),
    )


def decide(
    pod: Mapping[str, Any],
    *,
    namespace: str,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    workload: WorkloadKey | None = None,
    checked: bool = False,
) -> tuple[NamespaceSettings, Decision]:
    """Resolve the namespace's settings, facts and the workload's profiles from snapshots, then `tailor`.

    `workload` defaults to the Pod's own owner chain; the preview passes the manifest's workload.
    `checked`: the caller found `malformed(pod)` None already (the admission path refuses such a Pod
    with a 400 before deciding), so it is not checked twice.
    """
    settings = cluster.settings_for(namespace)
    policy = cluster.policies.get(settings.policy)
    notes = [settings.note] if settings.note else []
    if policy is None:
        notes.append(f"unknown policy {settings.policy!r}; used default")
        policy = cluster.policies.policies["default"]
    if settings.mode is Mode.OFF:
        return settings, Decision(skipped=f"namespace {namespace} is not opted in", policy=policy.name)
    problem = None if checked else malformed(pod)
    if problem is not None:
        return settings, Decision(skipped=f"not a usable Pod: {problem}", policy=policy.name)
    if workload is None:
        workload = pod_workload(pod, namespace)
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    sized, statistic_notes = for_workload(profiles.for_workload(workload), policy.usage, annotations)
    notes += statistic_notes
    decision = _tailor_checked(
        pod,
        policy=policy,
        profiles=sized,
        facts=cluster.facts_for(namespace),
        workload=workload,
    )
    if notes:
        decision = dataclasses.replace(decision, warnings=(*notes, *decision.warnings))
    return settings, decision
