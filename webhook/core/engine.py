"""The engine: one Pod in, the patch that fills in what its author left out (and why) out.

Pure: no I/O, no clock, no framework. Run on its own output it returns an empty patch, so the API
server may reinvoke it (reinvocationPolicy IfNeeded).

A decision is a pipeline: `open_context` reads the Pod once into a `Context`
(`webhook.core.steps.context`), then each step of `STEPS` runs in order, reading what the context
and the steps before it hold and adding patch operations, injections, warnings and notes; the
explanation annotation is written last, from everything the steps added.

Adding a rule or a feature is one place: write a module in `webhook/core/steps/` whose docstring
says what it reads and adds, with `STEP = Step("name", run)` where `run(ctx)` adds to the context
(keep the decision itself in a pure module of the part of the core it concerns, `core/sizing/`,
`core/serving/`, `core/fit/`, ...: the step only wires it in, passing the facts the rule reads), and
put its `STEP` into `STEPS` below where what it reads is ready: a step sees everything the steps
before it added (`ctx.injections` holds the requests sized so far), and one that sets `ctx.skipped`
leaves the Pod alone and stops the pipeline. Data the step needs from outside comes through
`ClusterFacts` (`webhook.core.facts`), filled by the snapshot. Which part may import which is the
table in docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from typing import Any

from webhook.core.facts import ClusterFacts
from webhook.core.fit.quota import charges
from webhook.core.model.annotations import within_limits
from webhook.core.model.decision import POD_TARGET, Decision
from webhook.core.model.explain import explanation
from webhook.core.model.namespace import Mode, NamespaceSettings
from webhook.core.model.pod import INJECTED_ANNOTATION, containers, exclusions, malformed
from webhook.core.model.profile import WorkloadProfiles
from webhook.core.model.qos import qos_class
from webhook.core.model.workload import WorkloadKey, pod_workload
from webhook.core.policy.policies import Policy
from webhook.core.policy.statistic import for_workload
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.core.steps import check_headroom, classify, fit, hold, probe, quota, shut_down, size, start_boost
from webhook.core.steps.context import Context, Step, open_context

__all__ = ["STEPS", "decide", "tailor"]

# The engine's steps, in the order they run (see the module docstring).
STEPS: tuple[Step, ...] = (
    classify.STEP,  # the workload class: datastore, node-agent, batch, web, ...
    hold.STEP,  # which resources an autoscaler owns
    size.STEP,  # requests and limits
    fit.STEP,  # held to the largest node the Pod may land on
    quota.STEP,  # within the namespace's ResourceQuotas; what they require supplied
    probe.STEP,  # readiness, startup and liveness probes
    shut_down.STEP,  # preStop sleep and grace period
    start_boost.STEP,  # start-up CPU boost, within the room node fit and quota left
    check_headroom.STEP,  # HPA warnings
)


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
    """`tailor` for a Pod that passed `malformed`: the steps, then the explanation."""
    label = str(workload) if workload else ""
    pod, warnings = within_limits(pod)
    opt_out = exclusions(pod)
    if opt_out.skip_pod:
        return Decision(skipped="pod label pod-tailor.io/skip=true", policy=policy.name, workload=label)
    ctx = open_context(
        pod, policy=policy, profiles=profiles, facts=facts, workload=workload, opt_out=opt_out,
        warnings=warnings,
    )
    for step in STEPS:
        step.run(ctx)
        if ctx.skipped is not None:
            return Decision(
                skipped=ctx.skipped, warnings=tuple(ctx.warnings), policy=ctx.policy.name, workload=label,
                room_reading=ctx.room_reading,
            )
    return _decision(ctx, label=label)


def _charges(ctx: Context) -> dict[str, dict[str, Decimal]]:
    """What the Pod, as it will be created, counts against each of the namespace's quotas: only where
    the policy respects quotas, since only then does a decision read them back (`facts.pending`)."""
    if not ctx.facts.quotas or not ctx.policy.quota.respect:
        return {}
    values = [*ctx.injections, *ctx.boosted]
    return charges(ctx.pod, values, ctx.facts.quotas, used=lambda: ctx.totals_of().of(values))


def _decision(ctx: Context, *, label: str) -> Decision:
    """The steps' work as a `Decision`, with the explanation annotation when anything was injected."""
    policy = ctx.policy.name
    caps, charged = tuple(ctx.caps), _charges(ctx)
    # Steps add feature by feature; people read container by container (the Pod's order, `pod` last).
    order = {ref.name: index for index, ref in enumerate(containers(ctx.pod))}
    order.setdefault(POD_TARGET, len(order))
    notes = sorted(ctx.notes, key=lambda note: order.get(note.target, len(order)))
    if not ctx.injections:
        return Decision(
            warnings=tuple(ctx.warnings), policy=policy, workload=label, notes=tuple(notes), caps=caps,
            charges=charged, room_reading=ctx.room_reading,
        )
    injections = sorted(ctx.injections, key=lambda injection: order.get(injection.target, len(order)))
    previous = ctx.annotations.get(INJECTED_ANNOTATION)
    text = explanation(
        injections,
        policy=policy,
        workload=label,
        previous=previous if isinstance(previous, str) else None,
        notes=notes,
        qos=qos_class(ctx.pod, injections),
        order=order,
        workload_class=(
            f"{ctx.workload_class.name} ({ctx.workload_class.reason})" if ctx.workload_class else None
        ),
    )
    ctx.patch.set(("metadata", "annotations", INJECTED_ANNOTATION), text)
    return Decision(
        ops=ctx.patch.ops,
        injections=tuple(injections),
        warnings=tuple(ctx.warnings),
        policy=policy,
        workload=label,
        notes=tuple(notes),
        caps=caps,
        charges=charged,
        room_reading=ctx.room_reading,
    )


def decide(
    pod: Mapping[str, Any],
    *,
    namespace: str,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    workload: WorkloadKey | None = None,
    checked: bool = False,
    pending: Mapping[str, Mapping[str, Decimal]] | None = None,
) -> tuple[NamespaceSettings, Decision]:
    """Resolve the namespace's settings, facts and the workload's profiles from snapshots, then `tailor`.

    `workload` defaults to the Pod's own owner chain; the preview passes the manifest's workload.
    `checked`: the caller found `malformed(pod)` None already (the admission path refuses such a Pod
    with a 400 before deciding), so it is not checked twice. `pending`: what Pods admitted in the
    last seconds charge the namespace's quotas that their status does not show yet (the server's
    ledger; `webhook.core.model.resourcequota`).
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
    facts = cluster.facts_for(namespace)
    if pending:
        facts = replace(facts, pending=pending)
    decision = _tailor_checked(pod, policy=policy, profiles=sized, facts=facts, workload=workload)
    if notes:
        decision = replace(decision, warnings=(*notes, *decision.warnings))
    return settings, decision
