"""The Prometheus side names a Pod's workload exactly as `pod_workload` does at admission."""

from __future__ import annotations

from typing import Any

import pytest
import scenarios
from conftest import History
from faultproxy import FaultProxy, prometheus_error
from hypothesis import given
from hypothesis import strategies as st

from webhook.core.model.workload import WorkloadKey, pod_workload
from webhook.profiles import queries
from webhook.profiles.identity import Owners, read_owners, workload_by_name
from webhook.profiles.prometheus import Prometheus, Sample

SAFE = "bcdfghjklmnpqrstvwxz2456789"
names = st.from_regex(r"[a-z][a-z0-9]{0,12}(-[a-z][a-z0-9]{0,8}){0,2}", fullmatch=True)
suffix = st.text(alphabet=SAFE, min_size=5, max_size=5)
# An all-digit hash reads like a CronJob stamp: only kube-state-metrics can tell (tested below).
template_hash = st.text(alphabet=SAFE, min_size=8, max_size=10).filter(lambda h: not h.isdigit())


def _pod(name: str, owner_kind: str, owner_name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Pod as the API server sends it at CREATE (controllers set ownerReferences and labels)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": labels or {},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": owner_kind, "name": owner_name, "uid": "u",
                 "controller": True, "blockOwnerDeletion": True}
            ],
        },
        "spec": {"containers": [{"name": "app", "image": "app"}]},
    }


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        ("web-7d4b9c8f6-x7k2p", "shop/Deployment/web"),
        ("api-server-5f6b7c8d9-qwrtz", "shop/Deployment/api-server"),
        ("nightly-28934560-x7k2p", "shop/CronJob/nightly"),
        ("db-0", "shop/StatefulSet/db"),
        ("kafka-broker-12", "shop/StatefulSet/kafka-broker"),
        ("node-exporter-x7k2p", "shop/DaemonSet/node-exporter"),
        ("nginx", "shop/Pod/nginx"),
        ("debug-shell-ab", "shop/Pod/debug-shell-ab"),
    ],
)
def test_pod_names_map_to_the_controller_people_manage(pod: str, expected: str) -> None:
    assert str(workload_by_name("shop", pod)) == expected


@given(names, template_hash, suffix)
def test_a_deployment_pod_gets_the_same_key_on_both_sides(name: str, rs_hash: str, tail: str) -> None:
    pod = _pod(f"{name}-{rs_hash}-{tail}", "ReplicaSet", f"{name}-{rs_hash}", {"pod-template-hash": rs_hash})
    assert workload_by_name("shop", f"{name}-{rs_hash}-{tail}") == pod_workload(pod, "shop")


@given(names, st.integers(min_value=10_000_000, max_value=99_999_999), suffix)
def test_a_cronjob_pod_gets_the_same_key_on_both_sides(name: str, minutes: int, tail: str) -> None:
    pod = _pod(f"{name}-{minutes}-{tail}", "Job", f"{name}-{minutes}")
    assert workload_by_name("shop", f"{name}-{minutes}-{tail}") == pod_workload(pod, "shop")


@given(names, st.integers(min_value=0, max_value=500))
def test_a_statefulset_pod_gets_the_same_key_on_both_sides(name: str, ordinal: int) -> None:
    pod = _pod(f"{name}-{ordinal}", "StatefulSet", name)
    assert workload_by_name("shop", f"{name}-{ordinal}") == pod_workload(pod, "shop")


def _owner(**labels: str) -> Sample:
    return Sample({"namespace": "shop", **labels}, 1.0)


def test_kube_state_metrics_owners_win_over_name_patterns() -> None:
    owners = Owners.from_samples([
        _owner(
            pod="worker-7", owner_kind="ReplicaSet", owner_name="worker-6d5c4b7f9", owner_is_controller="true"
        ),
        _owner(replicaset="worker-6d5c4b7f9", owner_kind="Deployment", owner_name="worker"),
        _owner(pod="batch-x7k2p", owner_kind="Job", owner_name="batch-28934560", owner_is_controller="true"),
        _owner(pod="lonely", owner_kind="<none>", owner_name="<none>", owner_is_controller="true"),
    ])
    assert owners.workload("shop", "worker-7") == WorkloadKey("shop", "Deployment", "worker")
    assert owners.workload("shop", "batch-x7k2p") == WorkloadKey("shop", "CronJob", "batch")
    assert owners.workload("shop", "lonely") == WorkloadKey("shop", "Pod", "lonely")
    assert owners.workload("shop", "db-3") == WorkloadKey("shop", "StatefulSet", "db")


def test_kube_state_metrics_settle_a_deployment_whose_hash_is_all_digits() -> None:
    owners = Owners.from_samples([
        _owner(
            pod="a-22222222-x7k2p",
            owner_kind="ReplicaSet",
            owner_name="a-22222222",
            owner_is_controller="true",
        ),
        _owner(replicaset="a-22222222", owner_kind="Deployment", owner_name="a"),
    ])
    pod = _pod("a-22222222-x7k2p", "ReplicaSet", "a-22222222", {"pod-template-hash": "22222222"})
    assert owners.workload("shop", "a-22222222-x7k2p") == pod_workload(pod, "shop")


def test_a_replicaset_without_a_deployment_is_named_as_the_admission_side_names_it() -> None:
    owners = Owners.from_samples([
        _owner(pod="rs-x7k2p", owner_kind="ReplicaSet", owner_name="legacy", owner_is_controller="true"),
    ])
    pod = _pod("rs-x7k2p", "ReplicaSet", "legacy")
    assert owners.workload("shop", "rs-x7k2p") == pod_workload(pod, "shop")


@pytest.mark.parametrize("days", [14, 3], ids=["whole-history", "later-days-only"])
def test_the_owner_series_name_the_same_owners_as_their_samples_over_the_window(
    history: History, days: int
) -> None:
    """The owners are read from `/api/v1/series` (an index lookup) rather than as `max_over_time` of
    every owner sample over the window: the same Pods and ReplicaSets, the same owners, over the
    whole history and over its last days (the ReplicaSets rolled out before them left out by both)."""
    prom = Prometheus(history.prometheus.url)
    span = days * 86_400
    try:
        listed = read_owners(prom, (), start=scenarios.END - span, end=scenarios.END)
        evaluated = Owners.from_samples(prom.instant(queries.owners_query((), span=span), at=scenarios.END))
        whole = read_owners(prom, (), start=scenarios.START, end=scenarios.END)
    finally:
        prom.close()
    assert listed.pods
    assert whole.replicasets
    assert (listed.pods, listed.replicasets) == (evaluated.pods, evaluated.replicasets)
    assert (len(listed.pods) < len(whole.pods)) == (days < 14)


def test_a_backend_that_refuses_the_series_listing_is_asked_the_owners_as_a_query(history: History) -> None:
    """VictoriaMetrics lists at most `-search.maxSeries` series (30,000 by default) and refuses more;
    the build then reads the owners as the instant query it asked before the listing."""
    refusal = prometheus_error("unprocessable", "the number of matching timeseries exceeds 30000")
    with FaultProxy(history.prometheus.url, lambda _: None, listing=lambda _: (422, refusal)) as proxy:
        limited, direct = Prometheus(proxy.url), Prometheus(history.prometheus.url)
        try:
            fallen_back = read_owners(limited, ("shop",), start=scenarios.START, end=scenarios.END)
            listed = read_owners(direct, ("shop",), start=scenarios.START, end=scenarios.END)
        finally:
            limited.close()
            direct.close()
    assert [status for status, *_ in proxy.answered] == [422, 200]
    assert fallen_back.pods
    assert (fallen_back.pods, fallen_back.replicasets) == (listed.pods, listed.replicasets)
