"""Step: readiness, startup and liveness probes for serving containers (`webhook.core.serving.probes`).

Reads `sizeable`, which containers serve (when a Service selects the Pod, only those it sends to),
the Pod's `pod-tailor.io/probe-path`, the ports the Services send to, the profiles (an observed
start-up widens the startup probe's budget). Adds the probes and a note where an author's readiness
probe checks a port no selecting Service sends to.
"""

from __future__ import annotations

from webhook.core.model.decision import Note
from webhook.core.serving.probes import probe_container
from webhook.core.serving.traffic import readiness_gap
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _run(ctx: Context) -> None:
    probes = "probes" in ctx.features
    for ref in ctx.sizeable:
        if not ctx.serves(ref):
            continue
        if probes:
            ctx.injections += probe_container(
                ref, policy=ctx.policy, path_annotation=ctx.path_annotation,
                profile=ctx.profiles.get(ref.name), patch=ctx.patch, targeted=ctx.targeted,
                served=ctx.served.get(ref.name) if ctx.served is not None else None,
            )
        gap = readiness_gap(ref.body, ctx.path)
        if gap is not None:
            ctx.notes.append(Note(ref.name, gap))


STEP = Step("probes", _run)
