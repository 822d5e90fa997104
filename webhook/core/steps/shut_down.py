"""Step: a clean shutdown (`webhook.core.serving.shutdown`): a preStop sleep for serving containers, then a
grace period that covers the longest sleep plus the drain.

Reads `sizeable`, which containers serve, the traffic path (the pause grows with the furthest hop),
a grace period a person set, the server version (native sleep or exec). Adds `lifecycle.preStop`,
`terminationGracePeriodSeconds`, their injections and warnings, and `sleeps`.
"""

from __future__ import annotations

from webhook.core.model.pod import containers
from webhook.core.serving.shutdown import existing_sleep, grace_period, grace_set_by_person, pre_stop
from webhook.core.serving.traffic import pause_for
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _run(ctx: Context) -> None:
    policy = ctx.policy
    if "preStop" in ctx.features:
        pause = pause_for(ctx.path, default=policy.pre_stop_seconds, sleeps=policy.sleeps_by_path)
        personal_grace = grace_set_by_person(ctx.pod)
        for ref in ctx.sizeable:
            if not ctx.serves(ref):
                continue
            injection, seconds, warning = pre_stop(
                ref, policy=policy, server_version=ctx.facts.server_version, windows=ctx.windows,
                grace=personal_grace, patch=ctx.patch, pause=pause,
            )
            if injection is not None:
                ctx.injections.append(injection)
                ctx.sleeps.append(seconds)
            if warning:
                ctx.warnings.append(warning)
    # A class that changes the policy (a datastore's longer drain) wants its grace even without a pause.
    own_drain = ctx.serving_pod and ctx.workload_class is not None and ctx.workload_class.policy is not None
    if (ctx.sleeps or own_drain) and "gracePeriod" in ctx.features:
        sleeps = ctx.sleeps + [0] + [
            existing for ref in containers(ctx.pod) if (existing := existing_sleep(ref.body)) is not None
        ]
        grace, warning = grace_period(ctx.pod, policy=policy, longest_sleep=max(sleeps), patch=ctx.patch)
        if grace is not None:
            ctx.injections.append(grace)
        if warning:
            ctx.warnings.append(warning)


STEP = Step("shutdown", _run)
