"""LimitRanges as admission applies them: each item's bounds and defaults, parsed, and its ratio rule.

A LimitRange's `Container` items bound each container's requests and limits (`webhook.core.sizing.
resources` moves values into them), its `Pod` items the sum over the Pod (`webhook.core.sizing.
podlimits`); `maxLimitRequestRatio` is judged as LimitRanger judges it (`ratio_breached`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any

from webhook.core.model.quantity import QuantityError, parse

__all__ = ["LimitRangeItem", "limit_range_items", "ratio_breached"]


@dataclass(frozen=True, slots=True)
class LimitRangeItem:
    """One `spec.limits[]` entry of a LimitRange, quantities parsed."""

    type: str  # "Container" | "Pod" | "PersistentVolumeClaim"
    min: Mapping[str, Decimal] = field(default_factory=dict)
    max: Mapping[str, Decimal] = field(default_factory=dict)
    default: Mapping[str, Decimal] = field(default_factory=dict)
    default_request: Mapping[str, Decimal] = field(default_factory=dict)
    max_limit_request_ratio: Mapping[str, Decimal] = field(default_factory=dict)


def _quantities(raw: object) -> dict[str, Decimal]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, Decimal] = {}
    for key, value in raw.items():
        try:
            out[str(key)] = parse(value)
        except QuantityError:
            continue
    return out


def _milli(value: Decimal) -> int:
    return int((value * 1000).to_integral_value(rounding=ROUND_CEILING))


def ratio_breached(request: Decimal, limit: Decimal, ratio: Decimal) -> bool:
    """LimitRanger's `maxLimitRequestRatio` judgement: in thousandths rounded up, divided as floats.

    So a limit of exactly `ratio` x request can still be refused (2.023 / 1 gives 2023.0000000000002).
    A zero or missing request or limit breaks any ratio.
    """
    request_m, limit_m = _milli(request), _milli(limit)
    return not request_m or not limit_m or limit_m / request_m * 1000 > _milli(ratio)


def limit_range_items(limit_range: Mapping[str, Any]) -> tuple[LimitRangeItem, ...]:
    """Parse a LimitRange object as the API returns it; malformed entries are skipped."""
    items = []
    for raw in (limit_range.get("spec") or {}).get("limits") or ():
        if not isinstance(raw, Mapping):
            continue
        items.append(
            LimitRangeItem(
                type=str(raw.get("type", "Container")),
                min=_quantities(raw.get("min")),
                max=_quantities(raw.get("max")),
                default=_quantities(raw.get("default")),
                default_request=_quantities(raw.get("defaultRequest")),
                max_limit_request_ratio=_quantities(raw.get("maxLimitRequestRatio")),
            )
        )
    return tuple(items)
