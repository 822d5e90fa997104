"""Start-up CPU boost: a larger CPU request while a container starts, given back in place once Ready.

What starves a Burstable container at start-up on a packed node is its small request (its CFS weight,
and the scheduler's reservation), not a limit. So a container whose history shows a start-up peak above
its steady request starts with the peak as its request; the boost controller resizes it back through
the Pod's `resize` subresource (in-place resize: beta and on by default from Kubernetes 1.33). Limits
keep their ratio to the request, so the Pod's QoS class never changes (in-place resize refuses that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from webhook.core.boost.record import BoostRecord, SteadyCpu
from webhook.core.model.decision import Injection
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.pod import ContainerRef
from webhook.core.model.profile import ContainerProfile, Recommendation
from webhook.core.model.quantity import parse_or_none, render
from webhook.core.policy.sections import BoostPolicy, BoostSource, BoostUntil

__all__ = [
    "Boosted",
    "boost_container",
    "boost_record",
    "cluster_can_resize",
]

RESIZE_SINCE = (1, 33)  # in-place Pod resize on by default (beta)


def cluster_can_resize(version: tuple[int, int] | None) -> bool:
    return version is not None and version >= RESIZE_SINCE


@dataclass(frozen=True, slots=True)
class Boosted:
    """One container's boost: the values to start with, the steady ones to return to, and why."""

    steady: SteadyCpu
    request: Decimal
    limit: Decimal | None
    injection: Injection


def _cap(limit_ranges: Sequence[LimitRangeItem]) -> Decimal | None:
    maxima = [item.max["cpu"] for item in limit_ranges if item.type == "Container" and "cpu" in item.max]
    return min(maxima, default=None)


def boost_container(
    ref: ContainerRef,
    *,
    policy: BoostPolicy,
    profile: ContainerProfile | None,
    injected: Mapping[str, str],
    limit_ranges: Sequence[LimitRangeItem],
    room: Mapping[str, tuple[Decimal, str]] | None = None,
) -> tuple[Boosted | None, str]:
    """The container's boost, or None and why not (empty: nothing worth saying).

    `room`: "requests.cpu" / "limits.cpu" -> how much more the Pod may ask and what holds it (the
    largest node it fits, a ResourceQuota): the boost stays within it.

    `injected`: this container's values pod-tailor is setting ("requests.cpu" -> "250m"); the boost
    starts from the container as it will be created, whoever set its request.
    """
    resources = ref.body.get("resources") or {}

    def final(section: str) -> Decimal | None:
        """The container's cpu `section` value as it will be created (pod-tailor's, else its own)."""
        key = f"{section}.cpu"
        if key in injected:
            return parse_or_none(injected[key])
        values = resources.get(section)
        return parse_or_none(values.get("cpu")) if isinstance(values, Mapping) else None

    request, limit = final("requests"), final("limits")
    if request is None or request <= 0:
        return None, ""
    if ref.restarts_on_resize("cpu"):
        return None, "no start-up boost: cpu resizePolicy RestartContainer would restart it to give CPU back"
    if policy.source is BoostSource.PROFILE:
        peak = profile.startup_cpu if isinstance(profile, Recommendation) else None
        if peak is None or peak <= request or not isinstance(profile, Recommendation):
            return None, ""
        wanted, why = peak, _peak_note(profile)
    else:
        wanted, why = request * policy.factor, f"{policy.factor.normalize():f} x request"
    target, capped = min(wanted, policy.max), []
    if wanted > policy.max:
        capped.append(f"max {render('cpu', policy.max)}")
    ceiling = _cap(limit_ranges)
    ratio = limit / request if limit is not None else None
    if ceiling is not None:
        allowed = ceiling / ratio if ratio is not None else ceiling
        if target > allowed:
            target = allowed
            capped.append(f"LimitRange max {render('cpu', ceiling)}")
    for key, (extra, holder) in (room or {}).items():
        if key == "requests.cpu":
            allowed = request + extra
        elif key == "limits.cpu" and ratio is not None:
            allowed = request + extra / ratio
        else:
            continue
        if target > allowed:
            target = allowed
            capped.append(holder)
    target = target.quantize(Decimal("0.001"), rounding=ROUND_FLOOR)
    if target <= request:
        return None, ""
    new_limit = (target * ratio).quantize(Decimal("0.001")) if ratio is not None else None
    steady = SteadyCpu(
        ref.name,
        render("cpu", request),
        render("cpu", limit) if limit is not None else None,
        boosted=render("cpu", target),
    )
    shown = f"cpu {render('cpu', request)} -> {render('cpu', target)}"
    if new_limit is not None and limit is not None:
        why += f"; limit {render('cpu', limit)} -> {render('cpu', new_limit)}, same ratio"
    if capped:
        why += f"; capped at {' and '.join(capped)}"
    until = "until Ready" if policy.until is BoostUntil.READY else f"for {policy.extra_seconds}s"
    injection = Injection(ref.name, "startupBoost", f"{shown} {until}", why)
    return Boosted(steady, target, new_limit, injection), ""


def _peak_note(profile: Recommendation) -> str:
    peak = profile.startup_cpu or Decimal(0)
    over = f" over {profile.startup_seconds:.0f}s" if profile.startup_seconds else ""
    return f"start-up peak {peak.normalize():f} cores{over} in {profile.evidence.window} history"


def boost_record(boosted: Sequence[Boosted], policy: BoostPolicy) -> BoostRecord:
    return BoostRecord(
        tuple(boost.steady for boost in boosted),
        until=policy.until.value,
        extra_seconds=policy.extra_seconds,
        max_seconds=policy.max_seconds,
    )
