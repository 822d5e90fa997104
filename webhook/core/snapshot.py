"""Immutable views of the world that background tasks build and swap whole.

The admission path reads one `ClusterSnapshot` and one `ProfileSnapshot` and never waits on the
network; refreshers build a complete new snapshot and replace the reference in one assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from webhook.core.facts import ClusterFacts
from webhook.core.fit.placement import NodeIndex
from webhook.core.model.autoscalers import NamespaceAutoscalers
from webhook.core.model.inputs import BASE_LABEL_KEYS
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.namespace import Mode, NamespaceSettings, namespace_settings
from webhook.core.model.profile import ProfileIndex, WorkloadProfiles
from webhook.core.model.resourcequota import Quota
from webhook.core.model.routes import NamespaceTraffic
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.policies import PolicySet

__all__ = ["EMPTY_PROFILES", "ClusterSnapshot", "ProfileSnapshot"]

_EMPTY: Mapping[str, object] = MappingProxyType({})
_NO_AUTOSCALERS: NamespaceAutoscalers = MappingProxyType({})
_NO_TRAFFIC = NamespaceTraffic()


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakref: the verdict cache's
class ClusterSnapshot:
    """Policies, namespace labels, LimitRanges, autoscalers, Services, nodes, quotas, server version,
    as of `taken_at`."""

    policies: PolicySet
    default_mode: Mode = Mode.ENFORCE  # for namespaces not (yet) known
    namespaces: Mapping[str, Mapping[str, str]] | None = None  # None: no namespace data at all
    limit_ranges: Mapping[str, tuple[LimitRangeItem, ...]] = field(default_factory=dict)
    server_version: tuple[int, int] | None = None
    taken_at: float = 0.0
    source: str = "embedded defaults"
    autoscalers: Mapping[str, NamespaceAutoscalers] = field(default_factory=dict)  # by namespace
    # Services and routes by namespace; None when they are not watched (embedded mode): then no Pod's
    # traffic path is known, which is not the same as "no Service selects it".
    traffic: Mapping[str, NamespaceTraffic] | None = None
    label_keys: Mapping[str, frozenset[str]] = field(default_factory=dict)  # see label_keys_read
    nodes: NodeIndex | None = None  # None: not known (embedded mode, or Nodes may not be listed)
    quotas: Mapping[str, tuple[Quota, ...]] = field(default_factory=dict)  # by namespace

    def settings_for(self, namespace: str) -> NamespaceSettings:
        labels = None if self.namespaces is None else self.namespaces.get(namespace)
        return namespace_settings(labels, default_mode=self.default_mode)

    def label_keys_read(self, namespace: str) -> frozenset[str]:
        """Pod label keys a decision in `namespace` reads besides the `pod-tailor.io/` ones.

        The verdict cache's key keeps only these labels (`webhook.core.model.inputs`); a feature that matches
        Pod labels (e.g. against Service selectors) adds the keys it reads in that namespace here.
        """
        keys = self.label_keys.get(namespace, BASE_LABEL_KEYS)
        extra = self.policies.class_label_keys
        return keys | extra if extra else keys

    def selects_on(self, namespace: str, key: str) -> bool:
        """Whether a Service in `namespace` selects Pods by the label `key` (so its value decides)."""
        traffic = None if self.traffic is None else self.traffic.get(namespace)
        return traffic is not None and key in traffic.label_keys

    def facts_for(self, namespace: str) -> ClusterFacts:
        return ClusterFacts(
            server_version=self.server_version,
            limit_ranges=self.limit_ranges.get(namespace, ()),
            autoscalers=self.autoscalers.get(namespace, _NO_AUTOSCALERS),
            traffic=None if self.traffic is None else self.traffic.get(namespace, _NO_TRAFFIC),
            nodes=self.nodes,
            quotas=self.quotas.get(namespace, ()),
        )


@dataclass(frozen=True, slots=True, weakref_slot=True)
class ProfileSnapshot:
    """Usage profiles per workload, as of `taken_at`; lookups are one dict access."""

    profiles: ProfileIndex = field(default_factory=dict)
    taken_at: float = 0.0
    source: str = "none"

    def for_workload(self, key: WorkloadKey) -> WorkloadProfiles:
        return self.profiles.get(key, _EMPTY)  # type: ignore[arg-type]


EMPTY_PROFILES = ProfileSnapshot()
