"""Cluster state for the snapshots: config discovery, list+watch, the policy ConfigMap, the version."""

from webhook.cluster.refresher import ClusterRefresher, build_snapshot

__all__ = ["ClusterRefresher", "build_snapshot"]
