"""Step: requests and limits for every sizeable container (`webhook.core.sizing.resources`).

Reads `sizeable`, `holds`, `pod_level`, the profiles, the LimitRanges (Container and Pod items),
LimitRanger's marks and the requests pod-tailor itself guessed on an earlier pass. Adds the resource
patch, injections and warnings, and a note per VPA for what was left to it.
"""

from __future__ import annotations

from webhook.core.model.decision import Injection
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import ContainerRef, guessed_requests, limit_ranger_marks
from webhook.core.policy.policies import LimitMode
from webhook.core.sizing.holds import deferral_notes
from webhook.core.sizing.podlimits import Withheld, has_pod_limits, withhold
from webhook.core.sizing.resources import size_container
from webhook.core.steps.context import Context, Step

__all__ = ["STEP"]


def _run(ctx: Context) -> None:
    if "resources" not in ctx.features:
        return
    pod, policy, facts = ctx.pod, ctx.policy, ctx.facts
    marks, guessed = limit_ranger_marks(pod), guessed_requests(pod)

    def sized(ref: ContainerRef, *, into: PatchBuilder, held: Withheld) -> tuple[list[Injection], list[str]]:
        """The container's resource injections and warnings, with `held` not set (see `podlimits`)."""
        return size_container(
            ref, policy=ctx.container_policies.get(ref.name, policy), profile=ctx.profiles.get(ref.name),
            limit_ranges=facts.limit_ranges,
            limit_ranger_marks=marks, pod_level=ctx.pod_level, patch=into, withheld=held,
            guessed_before=guessed, holds=ctx.holds.get(ref.name),
        )

    withheld: Withheld = frozenset()
    if has_pod_limits(facts.limit_ranges):
        withheld, held_back = withhold(
            pod,
            facts.limit_ranges,
            sized=lambda held: [
                injection
                for ref in ctx.sizeable
                for injection in sized(ref, into=PatchBuilder(pod), held=held)[0]
            ],
        )
        ctx.warnings += held_back
    limited = frozenset(r for r, rules in policy.resources.items() if rules.limit is not LimitMode.NONE)
    for ref in ctx.sizeable:
        added, problems = sized(ref, into=ctx.patch, held=withheld)
        ctx.injections += added
        ctx.warnings += problems
        holds = ctx.holds.get(ref.name)
        if holds:
            kept = {r: h for r, h in holds.items() if r not in ctx.pod_level}
            ctx.notes += deferral_notes(ref, kept, limited=limited)


STEP = Step("resources", _run)
