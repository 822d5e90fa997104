"""Verdicts for Pods already seen, so the replicas of one template are decided once.

The engine is a pure function of (the Pod's decision inputs, namespace, cluster snapshot, profile
snapshot). A controller creates every replica of a ReplicaSet, Job or StatefulSet revision from one
template; the replicas' objects differ only where the engine never reads (the ServiceAccount plugin's
random `kube-api-access-xxxxx` volume and mounts, a StatefulSet ordinal, a Job's completion index),
so their decision inputs (`webhook.core.model.inputs.decision_inputs`) are identical. The cache is keyed by
the namespace and the inputs' JSON (a Deployment's Pod by its Deployment, not its ReplicaSet:
`webhook.admission.peek`) and is emptied whenever either snapshot is swapped, so it can never
answer from stale data.

Bounded by bytes as well as by count, because a request chooses the size of its entry: an entry costs
its key plus about three times its answer (the answer's tail, the patch and audit texts it was built
from) plus a fixed overhead (`entry_cost`); inputs over
`MAX_ENTRY_INPUTS` bytes are never kept, and the least recently used entries go first when either
bound is reached (a template's replicas keep coming while one-off Pods pass through).
"""

from __future__ import annotations

import weakref

from webhook.admission.verdict import Verdict
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot

__all__ = ["MAX_ENTRY_INPUTS", "VerdictCache", "entry_cost"]

_Key = tuple[str, bytes]
MAX_ENTRY_INPUTS = 64 * 1024  # the corpus' largest decision inputs are 1.3 kB
_OVERHEAD = 512  # the dict slot, the tuple, the Verdict and its small members


def entry_cost(key: _Key, verdict: Verdict) -> int:
    """Bytes one entry is counted as (an estimate that errs on the high side)."""
    return len(key[1]) + 3 * len(verdict.tail) + _OVERHEAD


class VerdictCache:
    def __init__(self, size: int, *, max_bytes: int = 32 * 1024 * 1024) -> None:
        """`size` entries at most (no default: the server passes `--verdict-cache-size`)."""
        self.size = size
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self.oversized = 0  # inputs too large to keep
        self.decided_again = 0  # hits whose quotas' room left the verdict's bands: decided whole
        self.bytes = 0
        self._entries: dict[_Key, tuple[Verdict, int]] = {}
        # The snapshots the entries were decided against, by weak reference (not their ids, which a
        # new snapshot could reuse; a dead reference matches none). Not held: a swapped snapshot is
        # freed by whoever swaps it (the refresher), not by the next admission request, and its death
        # empties the cache (`_forget`): its entries can never be asked for again.
        self._cluster: weakref.ref[ClusterSnapshot] | None = None
        self._profiles: weakref.ref[ProfileSnapshot] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def key(
        self, namespace: str, inputs: bytes, *, cluster: ClusterSnapshot, profiles: ProfileSnapshot
    ) -> _Key | None:
        """The key for a Pod's decision inputs as JSON, emptying the cache first if the snapshots changed.

        None when the cache is disabled or the inputs are too large to keep.
        """
        if self.size <= 0 or self.max_bytes <= 0:
            return None
        seen, seen_profiles = self._cluster, self._profiles
        if seen is None or seen() is not cluster or seen_profiles is None or seen_profiles() is not profiles:
            self._entries.clear()
            self.bytes = 0
            self._cluster = weakref.ref(cluster, self._forget)
            self._profiles = weakref.ref(profiles, self._forget)
        if len(inputs) > MAX_ENTRY_INPUTS:
            self.oversized += 1
            return None
        return namespace, inputs

    def _forget(self, _: object) -> None:
        """A snapshot the entries were decided against is gone: so are they. Never mid-request: a
        request holds the snapshots it decides against until it has stored its verdict."""
        self._entries = {}
        self.bytes = 0

    def get(self, key: _Key | None) -> Verdict | None:
        if key is None:
            return None
        found = self._entries.pop(key, None)
        if found is None:
            self.misses += 1
            return None
        self._entries[key] = found  # now the newest: the least recently used go first
        self.hits += 1
        return found[0]

    def put(self, key: _Key | None, verdict: Verdict) -> None:
        if key is None:
            return
        cost = entry_cost(key, verdict)
        if cost > self.max_bytes:
            self.oversized += 1
            return
        previous = self._entries.pop(key, None)
        if previous is not None:
            self.bytes -= previous[1]
        while self._entries and (len(self._entries) >= self.size or self.bytes + cost > self.max_bytes):
            _, freed = self._entries.pop(next(iter(self._entries)))  # the oldest
            self.bytes -= freed
        self._entries[key] = (verdict, cost)
        self.bytes += cost
