"""Step: which container resources an autoscaler owns (`webhook.core.sizing.holds`), for sizing and the boost.

Reads `scalers`, `sizeable`, the policy's `autoscalers` section. Adds `holds` (container -> resource
-> Hold): a VPA's resources are left to it, an HPA's utilization resources are not sized from history.
"""

from __future__ import annotations

from webhook.core.sizing.holds import container_holds
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _run(ctx: Context) -> None:
    if ctx.scalers:
        rules = ctx.policy.autoscalers
        ctx.holds = {ref.name: container_holds(ctx.scalers, rules, ref) for ref in ctx.sizeable}


STEP = Step("autoscaler holds", _run)
