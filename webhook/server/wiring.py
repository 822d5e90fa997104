"""Which background refreshers the server runs; each feature adds its own here.

Refreshers keep the snapshots the admission path reads fresh (see `Refresher` in webhook/refreshers/state.py).
"""

from __future__ import annotations

from webhook.config.settings import Settings
from webhook.refreshers.cluster import ClusterRefresher
from webhook.refreshers.profiles import profile_refresher
from webhook.refreshers.state import Refresher

__all__ = ["build_refreshers"]


def build_refreshers(settings: Settings) -> list[Refresher]:
    refreshers: list[Refresher] = []
    refreshers.append(ClusterRefresher(settings))  # namespaces, LimitRanges, policy ConfigMap, version
    refreshers.append(profile_refresher(settings))  # usage profiles from the store (and Prometheus if set)
    return refreshers
