"""Cluster facts the engine may use: server version, the namespace's LimitRanges, autoscalers, Services,
the nodes and the namespace's ResourceQuotas."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal
from typing import Any

from webhook.core.fit.placement import NodeIndex
from webhook.core.model.autoscalers import Autoscalers, NamespaceAutoscalers, around
from webhook.core.model.quantity import QuantityError, parse
from webhook.core.model.resourcequota import Quota
from webhook.core.model.routes import NamespaceTraffic
from webhook.core.model.workload import WorkloadKey

__all__ = ["ClusterFacts", "LimitRangeItem", "limit_range_items", "parse_server_version", "ratio_breached"]


@dataclass(frozen=True, slots=True)
class LimitRangeItem:
    """One `spec.limits[]` entry of a LimitRange, quantities parsed."""

    type: str  # "Container" | "Pod" | "PersistentVolumeClaim"
    min: Mapping[str, Decimal] = field(default_factory=dict)
    max: Mapping[str, Decimal] = field(default_factory=dict)
    default: Mapping[str, Decimal] = field(default_factory=dict)
    default_request: Mapping[str, Decimal] = field(default_factory=dict)
    max_limit_request_ratio: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    """What is known about the cluster; every field may be unknown (embedded mode, no cluster)."""

    server_version: tuple[int, int] | None = None
    limit_ranges: tuple[LimitRangeItem, ...] = ()
    autoscalers: NamespaceAutoscalers = field(default_factory=dict)  # HPAs and VPAs by target
    traffic: NamespaceTraffic | None = None  # Services and routes; None: not known (no cluster watch)
    nodes: NodeIndex | None = None  # None: not known (no watch, or Nodes may not be listed)
    quotas: tuple[Quota, ...] = ()  # the namespace's ResourceQuotas
    # quota name -> key -> what Pods admitted in the last seconds charge it that its status does not show
    pending: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)

    def around(self, pod: Mapping[str, Any], workload: WorkloadKey | None) -> Autoscalers:
        """The HPAs and VPAs that target the workload of `pod` (see `webhook.core.model.autoscalers`)."""
        return around(self.autoscalers, pod, workload)

    def supports_native_sleep(self) -> bool | None:
        """`lifecycle.preStop.sleep` is on by default from 1.30; None when the version is unknown."""
        if self.server_version is None:
            return None
        return self.server_version >= (1, 30)


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


def parse_server_version(major: str, minor: str) -> tuple[int, int] | None:
    """`/version` gives strings like ("1", "30+") on managed clusters; None if unreadable."""
    major_digits, minor_digits = re.match(r"\d*", major or ""), re.match(r"\d*", minor or "")
    if not (major_digits and major_digits[0] and minor_digits and minor_digits[0]):
        return None
    return int(major_digits[0]), int(minor_digits[0])
