"""The dashboard in the manifests: a container of the recommender Pod, on localhost, allowed to list only."""

from __future__ import annotations

from collections import defaultdict

from tests.cluster.test_manifests import base_objects, find
from webhook.commands import parse
from webhook.report.live import KINDS


def test_it_runs_beside_the_recommender_bound_to_localhost() -> None:
    pod = find(base_objects(), "Deployment", "pod-tailor-recommender")["spec"]["template"]["spec"]
    (dashboard,) = [c for c in pod["containers"] if c["name"] == "dashboard"]
    args = parse(dashboard["args"])
    assert (args.command, args.host, args.port) == ("dashboard", "127.0.0.1", 8080)
    assert args.profiles_store == "kubernetes"
    assert dashboard["securityContext"]["readOnlyRootFilesystem"] is True


def test_its_role_lists_exactly_the_workload_kinds_the_report_reads() -> None:
    rules = find(base_objects(), "ClusterRole", "pod-tailor-dashboard")["rules"]
    granted: defaultdict[str, set[str]] = defaultdict(set)
    for rule in rules:
        assert rule["verbs"] == ["list"]
        for group in rule["apiGroups"]:
            granted[group] |= set(rule["resources"])
    wanted: defaultdict[str, set[str]] = defaultdict(set)
    for kind in KINDS:
        wanted[kind.group] |= {kind.plural}
    assert granted == wanted


def test_it_reads_the_cluster_facts_with_the_webhooks_own_role() -> None:
    binding = find(base_objects(), "ClusterRoleBinding", "pod-tailor-dashboard-facts")
    assert binding["roleRef"]["name"] == "pod-tailor-webhook"
    assert [s["name"] for s in binding["subjects"]] == ["pod-tailor-recommender"]
