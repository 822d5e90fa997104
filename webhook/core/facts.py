"""Cluster facts the engine may use: server version, the namespace's LimitRanges, autoscalers, Services,
the nodes and the namespace's ResourceQuotas."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.core.fit.placement import NodeIndex
from webhook.core.model.autoscalers import Autoscalers, NamespaceAutoscalers, around
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.resourcequota import Quota
from webhook.core.model.routes import NamespaceTraffic
from webhook.core.model.workload import WorkloadKey

__all__ = ["ClusterFacts", "parse_server_version"]


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


def parse_server_version(major: str, minor: str) -> tuple[int, int] | None:
    """`/version` gives strings like ("1", "30+") on managed clusters; None if unreadable."""
    major_digits, minor_digits = re.match(r"\d*", major or ""), re.match(r"\d*", minor or "")
    if not (major_digits and major_digits[0] and minor_digits and minor_digits[0]):
        return None
    return int(major_digits[0]), int(minor_digits[0])
