"""A build that would wipe out recommendations keeps the previous ones (pure).

A Prometheus that lost its history (a new volume, a shorter retention, a relabelling that renamed the
series) answers without error, and a build from it writes "no recommendation" for every workload: the
next Pods then fall back to policy defaults across the fleet. So when more than a set share of the
store's recommendations would be lost, those containers keep their previous recommendation, and each
loss is reported with its real reason; `--allow-shrink` writes what the build found.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from webhook.core.profile import NoRecommendation, Recommendation
from webhook.core.workload import WorkloadKey
from webhook.profiles.store import ProfileDocument, WorkloadEntry

__all__ = ["Shrink", "guard_shrink", "keep_unread"]


@dataclass(frozen=True, slots=True)
class Shrink:
    document: ProfileDocument  # what to write
    lost: tuple[str, ...]  # "shop/Deployment/web app: <why>", for each recommendation the build lost
    share: float  # lost / recommendations the store had in scope
    kept: bool  # True: the previous recommendations were kept for the lost ones


def _in_scope(key: WorkloadKey, namespaces: Iterable[str] | None) -> bool:
    return namespaces is None or key.namespace in set(namespaces)


def guard_shrink(
    old: ProfileDocument, new: ProfileDocument, *, max_share: float, namespaces: Iterable[str] | None = None
) -> Shrink:
    """`new`, or `new` with the previous recommendations back where it lost more than `max_share` of them."""
    scope = None if namespaces is None else tuple(namespaces)
    had, lost, back = 0, [], dict(new.workloads)
    for key, entry in old.workloads.items():
        if not _in_scope(key, scope):
            continue
        for container, profile in entry.containers.items():
            if not isinstance(profile, Recommendation):
                continue
            had += 1
            found = new.workloads.get(key)
            now = found.containers.get(container) if found is not None else None
            if isinstance(now, Recommendation):
                continue
            why = now.reason if isinstance(now, NoRecommendation) else "not in this build's data"
            lost.append((key, container, profile, why))
    share = len(lost) / had if had else 0.0
    said = tuple(f"{key} {container}: {why}" for key, container, _, why in lost)
    if share <= max_share:
        return Shrink(new, said, share, kept=False)
    for key, container, profile, _ in lost:
        entry = back.get(key) or WorkloadEntry(containers={})
        back[key] = dataclasses.replace(entry, containers={**entry.containers, container: profile})
    return Shrink(dataclasses.replace(new, workloads=back), said, share, kept=True)


def keep_unread(old: ProfileDocument, new: ProfileDocument, *, namespaces: Iterable[str]) -> ProfileDocument:
    """`new` with the previous entries of the namespaces the build could not read (it has none of its
    own for them): a failed read is never written as "no data"."""
    unread = set(namespaces)
    if not unread:
        return new
    workloads = {key: entry for key, entry in new.workloads.items() if key.namespace not in unread}
    workloads |= {key: entry for key, entry in old.workloads.items() if key.namespace in unread}
    return dataclasses.replace(new, workloads=workloads)
