"""Prometheus metrics of the cluster watches (process-wide default registry, like every other metric)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

__all__ = [
    "CLUSTER_FACTS_KNOWN",
    "CLUSTER_SNAPSHOT_TIMESTAMP",
    "POLICY_CONFIGMAP_ERRORS",
    "POLICY_CONFIGMAP_VALID",
    "SERVER_VERSION",
    "WATCH_EVENTS",
    "WATCH_LISTS",
    "WATCH_RESTARTS",
    "WATCH_SYNCED",
]

WATCH_EVENTS = Counter(
    "pod_tailor_watch_events_total", "Watch events received, by resource and type.", ["resource", "type"]
)
WATCH_LISTS = Counter(
    "pod_tailor_watch_lists_total",
    "Full lists of a resource, by reason (initial, gone = 410 after compaction, error).",
    ["resource", "reason"],
)
WATCH_RESTARTS = Counter(
    "pod_tailor_watch_restarts_total",
    "Watches resumed from the last resourceVersion, by reason (timeout, disconnect).",
    ["resource", "reason"],
)
WATCH_SYNCED = Gauge(
    "pod_tailor_watch_synced", "1 while the resource's watch is connected after a full list.", ["resource"]
)
POLICY_CONFIGMAP_VALID = Gauge(
    "pod_tailor_policy_configmap_valid",
    "1 if the policy ConfigMap parses (or is absent); 0 while the last valid policy stays in force.",
)
POLICY_CONFIGMAP_ERRORS = Counter(
    "pod_tailor_policy_configmap_errors_total", "Versions of the policy ConfigMap rejected as invalid."
)
CLUSTER_SNAPSHOT_TIMESTAMP = Gauge(
    "pod_tailor_cluster_snapshot_timestamp_seconds",
    "When the cluster snapshot was last rebuilt or confirmed current (Unix time).",
)
SERVER_VERSION = Gauge(
    "pod_tailor_kubernetes_server_minor_version",
    "Minor version of the API server (1.x) as last read; chooses the native preStop sleep from 1.30.",
)
CLUSTER_FACTS_KNOWN = Gauge(
    "pod_tailor_cluster_facts_known",
    "1 while a collection a feature can do without (nodes, resourcequotas, daemonsets) may be listed; 0 "
    "when the API server forbids it (no RBAC): node fit or quota is then off and Pods are sized as before "
    "(daemonsets: node fit counts whole nodes).",
    ["resource"],
)
