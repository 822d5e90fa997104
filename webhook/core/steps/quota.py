"""Step: ResourceQuota (`webhook.core.fit.quota`): supply what a quota requires, fall back where an
injected value would take the namespace past `hard`.

Reads the injections so far, the namespace's quotas and the charges of Pods admitted in the last
seconds (`facts.pending`), the policy's `quota`. Adds supplied values, lowers or leaves out injected
ones, adds `caps`, warnings, the `room` the start-up boost may still take, and how the decision read
that room (`room_reading`, for the verdict cache).
"""

from __future__ import annotations

from webhook.core.fit.quota import quota_pod
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _run(ctx: Context) -> None:
    if "resources" not in ctx.features or not ctx.facts.quotas or not ctx.policy.quota.respect:
        return
    outcome = quota_pod(
        ctx.pod, policy=ctx.policy, quotas=ctx.facts.quotas, pending=ctx.facts.pending,
        limit_ranges=ctx.facts.limit_ranges, sizeable=ctx.sizeable, injections=ctx.injections,
        patch=ctx.patch, boost_reads_room=ctx.policy.startup_boost.enabled and ctx.serving_pod,
        totals_of=ctx.totals_of(),
    )
    ctx.room_reading = outcome.reading
    ctx.caps += outcome.caps
    ctx.warnings += [cap.describe() for cap in outcome.caps]
    ctx.warnings += outcome.warnings
    for key in ("requests.cpu", "limits.cpu"):
        if key in outcome.room and (key not in ctx.room or outcome.room[key] < ctx.room[key][0]):
            ctx.room[key] = (outcome.room[key], "the ResourceQuota")


STEP = Step("resource quota", _run)
