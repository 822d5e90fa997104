"""Which background refreshers the server runs; each feature adds its own here.

Refreshers keep the snapshots the admission path reads fresh (see `Refresher` in webhook/state.py).
"""

from __future__ import annotations

from webhook.cluster import ClusterRefresher
from webhook.profiles.refresh import profile_refresher
from webhook.settings import Settings
from webhook.state import Refresher

__all__ = ["build_refreshers"]


def build_refreshers(settings: Settings) -> list[Refresher]:
    refreshers: list[Refresher] = []
    refreshers.append(ClusterRefresher(settings))  # namespaces, LimitRanges, policy ConfigMap, version
    refreshers.append(profile_refresher(settings))  # usage profiles from the store (and Prometheus if set)
    return refreshers
