"""Step: node fit (`webhook.core.fit.nodes`): the Pod's injected requests never exceed the largest node it may
be scheduled on.

Reads the injections so far (the sized requests), the nodes, the policy's `fit`. Lowers injected
requests (updating the patch and the injections), adds `caps`, warnings, and the cpu `room` the
start-up boost may still take on that node.
"""

from __future__ import annotations

from webhook.core.fit.nodes import fit_pod
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _run(ctx: Context) -> None:
    if "resources" not in ctx.features:
        return
    outcome = fit_pod(
        ctx.pod, policy=ctx.policy, nodes=ctx.facts.nodes, limit_ranges=ctx.facts.limit_ranges,
        injections=ctx.injections, patch=ctx.patch, workload=ctx.workload, created=ctx.totals_of(),
    )
    ctx.caps += outcome.caps
    ctx.warnings += [cap.describe() for cap in outcome.caps]
    ctx.warnings += outcome.warnings
    if outcome.cpu_room is not None:
        ctx.room["requests.cpu"] = (outcome.cpu_room, "the largest node that fits the Pod")


STEP = Step("node fit", _run)
