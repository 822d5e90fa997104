"""Step: warnings about the HPAs around the workload (`webhook.core.sizing.headroom`).

Reads `scalers`, the injections (the requests after the patch), the profiles' workload totals and
`pod_level`. Adds warnings only: an HPA that cannot hold its target at the observed peak, a container
an HPA on utilization counts but that has no request.
"""

from __future__ import annotations

from webhook.core.sizing.headroom import hpa_warnings
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _run(ctx: Context) -> None:
    if ctx.scalers.hpas:
        ctx.warnings += hpa_warnings(
            ctx.scalers, pod=ctx.pod, injections=ctx.injections, profiles=ctx.profiles, policy=ctx.policy,
            pod_level=ctx.pod_level,
        )


STEP = Step("hpa headroom", _run)
