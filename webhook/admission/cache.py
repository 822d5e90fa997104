"""Verdicts for Pods already seen, so the replicas of one template are decided once.

The engine is a pure function of (the Pod's decision inputs, namespace, cluster snapshot, profile
snapshot). A controller creates every replica of a ReplicaSet, Job or StatefulSet revision from one
template; the replicas' objects differ only where the engine never reads (the ServiceAccount plugin's
random `kube-api-access-xxxxx` volume and mounts), so their decision inputs
(`webhook.core.inputs.decision_inputs`) are identical. The cache is keyed by the namespace and the
inputs' JSON and is emptied whenever either snapshot is swapped, so it can never answer from stale
data. Entries are evicted oldest-first past `size`.
"""

from __future__ import annotations

from webhook.admission.verdict import Verdict
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot

__all__ = ["VerdictCache"]

_Key = tuple[str, bytes]


class VerdictCache:
    def __init__(self, size: int = 512) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._entries: dict[_Key, Verdict] = {}
        # The snapshots the entries were decided against, held (not their ids) so none can be reused.
        self._cluster: ClusterSnapshot | None = None
        self._profiles: ProfileSnapshot | None = None

    def key(
        self, namespace: str, inputs: bytes, *, cluster: ClusterSnapshot, profiles: ProfileSnapshot
    ) -> _Key | None:
        """The key for a Pod's decision inputs as JSON, emptying the cache first if the snapshots changed.

        None when the cache is disabled.
        """
        if self.size <= 0:
            return None
        if cluster is not self._cluster or profiles is not self._profiles:
            self._entries.clear()
            self._cluster, self._profiles = cluster, profiles
        return namespace, inputs

    def get(self, key: _Key | None) -> Verdict | None:
        if key is None:
            return None
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: _Key | None, verdict: Verdict) -> None:
        if key is None:
            return
        if len(self._entries) >= self.size:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = verdict
