"""Step: the start-up CPU boost (`webhook.core.boost.pod_wide`), when the policy turns it on.

Reads the injections so far (the sized requests), `holds`, `pod_level`, the profiles, the server
version and the `room` node fit and quota left (the boost stays on a node the Pod fits and within
its quotas). Adds the boosted requests, `resizePolicy`, the boost label and record, and notes for what
was not boosted, and `boosted` (the boosted values, for what the Pod charges its quotas).
"""

from __future__ import annotations

from webhook.core.boost.pod_wide import apply_boost
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _run(ctx: Context) -> None:
    if not (ctx.policy.startup_boost.enabled and "resources" in ctx.features and ctx.serving_pod):
        return
    if ctx.windows:
        return
    ctx.injections += apply_boost(
        ctx.pod, ctx.sizeable, policy=ctx.policy, profiles=ctx.profiles, injections=ctx.injections,
        limit_ranges=ctx.facts.limit_ranges, server_version=ctx.facts.server_version, holds=ctx.holds,
        pod_level=ctx.pod_level, patch=ctx.patch, notes=ctx.notes, room=dict(ctx.room),
        boosted_values=ctx.boosted,
    )


STEP = Step("start-up boost", _run)
