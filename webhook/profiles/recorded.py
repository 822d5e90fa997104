"""The store's JSON for what a recommendation carries beside its values: totals, build time, trail.

All optional, so a store written before they existed still loads (its recommendations simply have
no headroom data and no step limit yet), and one written with them loads in a build that ignores
unknown keys. Quantities are the canonical strings the API server prints, as everywhere in the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.core.profile import Recommendation, TrailPoint, UsageTotals
from webhook.core.quantity import QuantityError, parse, render_bytes, render_cpu

__all__ = ["RecordedError", "decode_recorded", "encode_recorded"]


class RecordedError(ValueError):
    """A malformed optional field (the store names where)."""


def encode_recorded(profile: Recommendation) -> dict[str, Any]:
    out: dict[str, Any] = {}
    totals = profile.totals
    if totals is not None and (totals.cpu is not None or totals.memory is not None):
        out["totals"] = {
            **({"cpu": render_cpu(totals.cpu)} if totals.cpu is not None else {}),
            **({"memory": render_bytes(totals.memory)} if totals.memory is not None else {}),
        }
    if profile.built_at is not None:
        out["builtAt"] = profile.built_at
    if profile.trail:
        out["trail"] = [
            [point.at, render_cpu(point.cpu), render_bytes(point.memory), *([1] if point.oom else [])]
            for point in profile.trail
        ]
    return out


def decode_recorded(data: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for `Recommendation` from its stored JSON; raises RecordedError."""
    found: dict[str, Any] = {}
    try:
        if isinstance(data.get("totals"), Mapping):
            raw = data["totals"]
            found["totals"] = UsageTotals(
                cpu=parse(raw["cpu"]) if raw.get("cpu") is not None else None,
                memory=parse(raw["memory"]) if raw.get("memory") is not None else None,
            )
        if data.get("builtAt") is not None:
            found["built_at"] = float(data["builtAt"])
        if data.get("trail"):
            found["trail"] = tuple(
                TrailPoint(at=float(point[0]), cpu=parse(point[1]), memory=parse(point[2]),
                           oom=len(point) > 3 and bool(point[3]))
                for point in data["trail"]
            )
    except (IndexError, KeyError, TypeError, ValueError, QuantityError) as exc:
        raise RecordedError(f"{type(exc).__name__}: {exc}") from None
    return found
