"""Step: the Pod's workload class and its containers' (`webhook.core.policy.classes`); runs first.

Reads the policy's `classes`, the workload's kind (or the Pod's owner), the Pod's images, container
names, priorityClassName, labels and its StatefulSet's volumeClaimTemplates (`claim_templates`).
Sets `workload_class` and, when the class changes the policy, `policy` and `features`; a hands-off
class skips the Pod. A class that needs a Service leaves
every container non-serving until one selects the Pod. Container classes take a container out of
`sizeable` (hands-off) or give it the policy's minimum requests (`container_policies`).
"""

from __future__ import annotations

import dataclasses

from webhook.core.model.decision import Note
from webhook.core.model.workload import claim_templates, pod_workload
from webhook.core.policy.classes import container_class, pod_class
from webhook.core.policy.policies import Policy
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _minimum(policy: Policy) -> Policy:
    """`policy` with each resource's request at its minimum (a pause container's real need)."""
    resources = {name: dataclasses.replace(rule, request=rule.min) for name, rule in policy.resources.items()}
    return dataclasses.replace(policy, resources=resources)


def _run(ctx: Context) -> None:
    classes = ctx.policy.classes
    if not classes:
        return
    if ctx.workload is not None:
        kind = ctx.workload.kind
    else:
        kind = pod_workload(ctx.pod, str((ctx.pod.get("metadata") or {}).get("namespace") or "")).kind
    claims = claim_templates(ctx.pod)
    matched = pod_class(classes, ctx.pod, kind=kind, claims=claims)
    ctx.workload_class = matched
    if matched is not None:
        if matched.hands_off:
            ctx.skipped = f"class {matched.name} ({matched.reason}) is left alone"
            return
        if matched.policy is not None:
            ctx.policy = matched.policy
            ctx.features = matched.policy.features - ctx.excluded
        if matched.needs_service and ctx.served is None:
            ctx.served = {}  # no Service sends to it: no container serves
    kept = []
    for ref in ctx.sizeable:
        own = container_class(classes, ctx.pod, ref, kind=kind, claims=claims)
        if own is None:
            kept.append(ref)
        elif own.hands_off:
            ctx.notes.append(Note(ref.name, f"class {own.name} ({own.reason}): left alone"))
        else:
            kept.append(ref)
            if own.minimum_requests:
                ctx.container_policies[ref.name] = _minimum(ctx.policy)
                ctx.notes.append(Note(ref.name, f"class {own.name} ({own.reason}): minimum requests"))
    ctx.sizeable = kept


STEP = Step("workload class", _run)
