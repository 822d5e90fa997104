"""Which workload a Prometheus series belongs to, agreeing with `pod_workload` at admission.

kube-state-metrics, when scraped, names each Pod's controller (`kube_pod_owner`) and each ReplicaSet's
Deployment (`kube_replicaset_owner`); both are mapped through `owner_workload`, the same function the
admission side uses, so the two keys match. Without them the Pod name is read by pattern:
`<deployment>-<pod-template-hash>-<5>`, `<cronjob>-<minutes>-<5>`, `<statefulset>-<ordinal>`,
`<daemonset>-<5>`, else a bare Pod by name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from webhook.core.model.workload import WorkloadKey, owner_workload
from webhook.profiles import queries
from webhook.profiles.prometheus import Prometheus, PrometheusError, Sample

__all__ = ["Owners", "read_owners", "workload_by_name"]

_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"  # the alphabet of generated name suffixes (no vowels)
_REPLICASET_POD = re.compile(rf"^(?P<owner>.+-{_SAFE}{{6,10}})-{_SAFE}{{5}}$")
_CRON_POD = re.compile(rf"^(?P<owner>.+-\d{{8,}})-{_SAFE}{{5}}$")
_STATEFUL_POD = re.compile(r"^(?P<owner>.+)-(?:0|[1-9]\d{0,4})$")
_DAEMON_POD = re.compile(rf"^(?P<owner>.+)-{_SAFE}{{5}}$")


def workload_by_name(namespace: str, pod: str) -> WorkloadKey:
    """A Pod's workload from its name alone (when kube-state-metrics is not available)."""
    # All-digit middles are CronJob schedule stamps: a pod-template-hash of only digits is vanishingly rare.
    if match := _CRON_POD.match(pod):
        kind, name = owner_workload("Job", match["owner"])
    elif match := _REPLICASET_POD.match(pod):
        kind, name = owner_workload("ReplicaSet", match["owner"])
    elif match := _STATEFUL_POD.match(pod):
        kind, name = "StatefulSet", match["owner"]
    elif match := _DAEMON_POD.match(pod):
        kind, name = "DaemonSet", match["owner"]
    else:
        kind, name = "Pod", pod
    return WorkloadKey(namespace, kind, name)


@dataclass
class Owners:
    """Controller ownership read from kube-state-metrics; empty when it is not scraped."""

    pods: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (ns, pod) -> (kind, name)
    replicasets: dict[tuple[str, str], str] = field(default_factory=dict)  # (ns, rs) -> Deployment name
    _cache: dict[tuple[str, str], WorkloadKey] = field(default_factory=dict)

    @classmethod
    def from_samples(cls, samples: Iterable[Sample]) -> Owners:
        return cls.from_labels(sample.labels for sample in samples)

    @classmethod
    def from_labels(cls, label_sets: Iterable[Mapping[str, str]]) -> Owners:
        """From the owner series' label sets (`Prometheus.series`, or an answer's samples' labels)."""
        owners = cls()
        for labels in label_sets:
            kind, name = labels.get("owner_kind", ""), labels.get("owner_name", "")
            ns = labels.get("namespace")
            if not ns or not kind or kind == "<none>" or not name or name == "<none>":
                continue
            # Told apart by their own labels: a Pod's owner has `pod`, a ReplicaSet's `replicaset`.
            if "pod" in labels:
                owners.pods[(ns, labels["pod"])] = (kind, name)
            elif "replicaset" in labels and kind == "Deployment":
                owners.replicasets[(ns, labels["replicaset"])] = name
        return owners

    def workload(self, namespace: str, pod: str) -> WorkloadKey:
        """The workload key for one Pod, memoised (a build asks once per series)."""
        cached = self._cache.get((namespace, pod))
        if cached is not None:
            return cached
        owner = self.pods.get((namespace, pod))
        if owner is None:
            key = workload_by_name(namespace, pod)
        else:
            kind, name = owner
            template_hash = None
            deployment = self.replicasets.get((namespace, name)) if kind == "ReplicaSet" else None
            if deployment and name.startswith(deployment + "-"):
                template_hash = name[len(deployment) + 1 :]
            kind, name = owner_workload(kind, name, template_hash=template_hash)
            key = WorkloadKey(namespace, kind, name)
        self._cache[(namespace, pod)] = key
        return key


def read_owners(prom: Prometheus, namespaces: Sequence[str], *, start: float, end: float) -> Owners:
    """The owners of the Pods in [start, end], listed from the index (`/api/v1/series`: no sample
    decoded). A backend that refuses the listing (VictoriaMetrics answers at most `-search.maxSeries`,
    30,000 by default, where its queries take ten times more) is asked the instant query instead."""
    try:
        return Owners.from_labels(prom.series(queries.owner_series(namespaces), start=start, end=end))
    except PrometheusError:
        asked = queries.owners_query(namespaces, span=round(end - start))
        return Owners.from_samples(prom.instant(asked, at=end))
