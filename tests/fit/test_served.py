"""Node fit and quota end to end: `pod-tailor serve` watching a fake 1.33 API server whose Pod creates go
through it (and through ResourceQuota admission), with Nodes and quotas changing while it serves."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubefake import FakeKube

from tests.cluster.helpers import namespace, pod_tailor_serve, wait_until
from tests.engine.podkit import container, pod
from tests.fit.kit import daemonset, node, quota, taint
from webhook.server.certs import write_dev_certs

ROOT = Path(__file__).resolve().parents[2]
POLICY = """\
policies:
  default:
    resources:
      cpu: {request: "3"}
      memory: {request: 1Gi}
"""
Created = tuple[int, dict[str, Any], list[str]]


def create(
    kube: FakeKube, subject: dict[str, Any], *, namespace: str = "shop", dry_run: bool = False
) -> Created:
    """POST a Pod as a controller does: (status, the stored Pod or the error Status, warnings)."""
    url = f"{kube.url}/api/v1/namespaces/{namespace}/pods" + ("?dryRun=All" if dry_run else "")
    subject = {**subject, "metadata": {**subject["metadata"], "namespace": namespace}}
    request = urllib.request.Request(
        url, data=json.dumps(subject).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {kube.token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read()), answer.headers.get_all("Warning") or []
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), []


def cpu(created: Created, resource: str = "cpu", section: str = "requests") -> str | None:
    if created[0] != 201:  # refused (a quota pod-tailor has not seen yet)
        return None
    body = created[1]["spec"]["containers"][0].get("resources") or {}
    value = (body.get(section) or {}).get(resource)
    return None if value is None else str(value)


def every_pod_validates(kube: FakeKube) -> None:
    for stored in kube._objects.get(("/api/v1", "pods"), {}).values():
        kubernetes_validate.validate(stored, kubernetes_validate.latest_version(), strict=True)


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeKube]:
    tmp = tmp_path_factory.mktemp("fit")
    with FakeKube() as fake:
        fake.serve_version(1, 33)
        for name in ("shop", "burst", "strict", "odd"):
            fake.put(namespace(name, "enforce"))
        fake.put(node("small-1", cpu="1930m"))
        fake.put(node("small-2", cpu="1930m", zone="eu-west-1b"))
        fake.put(node("gpu-1", cpu="7910m", memory="60Gi", taints=[taint("dedicated", "gpu")]))
        kubeconfig = fake.write_kubeconfig(tmp / "kubeconfig")
        (tmp / "policy.yaml").write_text(POLICY)
        ca, cert, key = write_dev_certs(tmp / "tls")
        extra = ["--policy-file", str(tmp / "policy.yaml")]
        with pod_tailor_serve(cert=cert, key=key, kubeconfig=kubeconfig, extra=extra) as port:
            webhooks = ROOT / "manifests/base/mutatingwebhookconfiguration.yaml"
            (entry,) = yaml.safe_load(webhooks.read_text())["webhooks"]
            fake.add_mutating_webhook(entry, url=f"https://127.0.0.1:{port}/mutate", ca_file=ca)
            plurals = ("namespaces", "nodes", "resourcequotas")
            wait_until(lambda: all(fake.open_watches(p) for p in plurals), timeout=20, what="watches")
            wait_until(lambda: cpu(create(fake, pod(), dry_run=True)) == "1930m", timeout=20, what="nodes")
            yield fake
        every_pod_validates(fake)


class TestNodeFit:
    def test_a_pod_whose_history_exceeds_every_matching_node_is_capped_and_a_new_node_counts(
        self, kube: FakeKube
    ) -> None:
        created = create(kube, pod())
        assert created[0] == 201
        assert cpu(created) == "1930m"
        said = "cpu 3 capped to 1930m: largest node that fits the Pod's selector has 1930m allocatable"
        assert any(said in w for w in created[2])
        kube.put(node("big-1", cpu="3920m", labels={"pool": "big"}))
        wait_until(lambda: cpu(create(kube, pod(), dry_run=True)) == "3", what="the node added while serving")
        kube.delete("nodes", "big-1")
        wait_until(lambda: cpu(create(kube, pod(), dry_run=True)) == "1930m", what="the node removed")

    def test_a_node_only_a_tolerated_taint_keeps_out_counts(self, kube: FakeKube) -> None:
        tolerant = pod(tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                     "effect": "NoSchedule"}])  # fmt: skip
        created = create(kube, tolerant)
        assert created[0] == 201
        assert cpu(created) == "3"

    def test_a_node_selector_no_node_matches_keeps_todays_values_with_a_warning(self, kube: FakeKube) -> None:
        created = create(kube, pod(nodeSelector={"pool": "arm"}))
        assert created[0] == 201
        assert cpu(created) == "3"
        assert any("no known node matches" in w for w in created[2])

    def test_nodes_without_allocatable_are_left_out_never_an_error(self, kube: FakeKube) -> None:
        broken = node("booting-1", cpu=None, memory=None)
        del broken["status"]["allocatable"]
        kube.put(broken)
        created = create(kube, pod())
        assert created[0] == 201
        assert cpu(created) == "1930m"
        assert not any("internal error" in w for w in created[2])


def warned(created: Created) -> str:
    """The warnings as one text: a long one reaches the client cut in headers of 120 characters."""
    pieces = [w.removeprefix('299 - "').removesuffix('"') for w in created[2]]
    return " ".join(pieces).replace('" "...', "").replace(" ... ", " ")


def daemon_pod(kube: FakeKube, owner: str, *, on: str) -> dict[str, Any]:
    """A Pod as the DaemonSet controller creates it: owned by `owner`, pinned to node `on` by matchFields."""
    stored = kube.get("daemonsets", owner, namespace="shop")
    assert stored is not None
    pinned = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [on]}]}
    subject = pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [pinned]}}})
    subject["metadata"]["ownerReferences"] = [{
        "apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner, "uid": stored["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True,
    }]
    return subject


class TestDaemonSets:
    def test_a_pod_that_fits_a_node_but_not_after_its_daemonsets_is_capped_a_daemonsets_own_pod_is_not(
        self, kube: FakeKube
    ) -> None:
        kube.put(daemonset("agent", cpu="400m", namespace="shop"))
        kube.put(daemonset("logs", cpu="100m", namespace="shop"))
        wait_until(lambda: cpu(create(kube, pod(), dry_run=True)) == "1430m", what="the DaemonSets")
        created = create(kube, pod())
        assert cpu(created) == "1430m"
        said = ("cpu 3 capped to 1430m: largest node that fits the Pod's selector has 1930m allocatable, "
                "500m of it taken by 2 DaemonSets")
        assert said in warned(created)
        own = create(kube, daemon_pod(kube, "agent", on="small-1"))
        assert cpu(own) == "1830m"  # the other DaemonSet's 100m taken, not its own 400m
        assert "has 1930m allocatable, 100m of it taken by 1 DaemonSet" in warned(own)
        kube.delete("daemonsets", "logs", namespace="shop")
        kube.delete("daemonsets", "agent", namespace="shop")
        wait_until(lambda: cpu(create(kube, pod(), dry_run=True)) == "1930m", what="the DaemonSets removed")

    def test_a_daemonset_that_does_not_tolerate_a_nodes_taint_is_not_subtracted_there(
        self, kube: FakeKube
    ) -> None:
        tolerant = pod(tolerations=[{"key": "dedicated", "operator": "Exists"}])
        pinned = {"kubernetes.io/hostname": "gpu-1"}
        kube.put(daemonset("driver", cpu="5", namespace="shop", node_selector=pinned,
                           tolerations=[{"key": "dedicated", "operator": "Exists"}]))  # fmt: skip
        wait_until(lambda: cpu(create(kube, tolerant, dry_run=True)) == "2910m", what="a tolerant DaemonSet")
        kube.put(daemonset("driver", cpu="5", namespace="shop", node_selector=pinned))  # its toleration gone
        wait_until(lambda: cpu(create(kube, tolerant, dry_run=True)) == "3", what="the DaemonSet updated")
        kube.delete("daemonsets", "driver", namespace="shop")


class TestQuota:
    def test_a_quota_near_full_gets_a_smaller_value(self, kube: FakeKube) -> None:
        kube.put(quota(hard={"requests.cpu": "4"}, used={"requests.cpu": "3500m"}))
        wait_until(lambda: cpu(create(kube, pod(), dry_run=True)) == "500m", what="the quota")
        created = create(kube, pod())
        assert created[0] == 201
        assert any("ResourceQuota compute has 500m of requests.cpu left" in w for w in created[2])

    def test_a_burst_of_50_creates_never_takes_a_quota_past_hard(self, kube: FakeKube) -> None:
        kube.put(node("huge-1", cpu="31750m", memory="120Gi", taints=[taint("dedicated", "huge")]))
        tolerations = [{"key": "dedicated", "operator": "Exists"}]
        kube.put(quota(hard={"requests.cpu": "20"}, used={"requests.cpu": "0"}, namespace="burst"))
        # 21 cores: over the quota
        seven = pod(*(container(f"c{i}", ports=()) for i in range(7)), tolerations=tolerations)
        wait_until(lambda: any("ResourceQuota" in w
                               for w in create(kube, seven, namespace="burst", dry_run=True)[2]),
                   what="the quota and the node")  # fmt: skip
        replica = pod(container(requests={"memory": "64Mi"}), tolerations=tolerations)
        with kube.lagging(), ThreadPoolExecutor(50) as pool:  # the status reaches pod-tailor only after
            answers = list(pool.map(lambda _: create(kube, replica, namespace="burst"), range(50)))
        refusals = [answer[1].get("message", "") for answer in answers if answer[0] != 201]
        assert not [message for message in refusals if "exceeded quota" in message]
        # The Pods left as their author wrote them lack the request the quota requires: refused for
        # that, as every one of them would be without pod-tailor.
        assert all("must specify requests.cpu" in message for message in refusals)
        admitted = sorted(cpu(answer) or "" for answer in answers if answer[0] == 201)
        assert admitted == ["2", *["3"] * 6]  # 6 x 3 cores, then the 2 left
        stored = kube.get("resourcequotas", "compute", namespace="burst")
        assert stored is not None
        assert stored["status"]["used"]["requests.cpu"] == "20000m"
        kube.delete("nodes", "huge-1")

    def test_a_quota_requiring_limits_gets_them_supplied(self, kube: FakeKube) -> None:
        kube.put(quota(hard={"limits.cpu": "40", "limits.memory": "64Gi"}, used={}, namespace="strict"))
        wait_until(lambda: cpu(create(kube, pod(), namespace="strict", dry_run=True), "memory", "limits"),
                   what="the quota")  # fmt: skip
        created = create(kube, pod(), namespace="strict")
        assert created[0] == 201
        assert cpu(created, "memory", "limits") == cpu(created, "memory")
        assert cpu(created, "cpu", "limits") == cpu(created, "cpu")

    def test_odd_quotas_are_never_an_admission_error(self, kube: FakeKube) -> None:
        kube.put(quota("gpus", hard={"requests.nvidia.com/gpu": "4", "count/pods": "100"}, used={},
                       namespace="odd"))  # fmt: skip
        kube.put(quota("affinity", hard={"pods": "100"}, used={}, scopes=["CrossNamespacePodAffinity"],
                       namespace="odd"))  # fmt: skip
        kube.put(quota("high", hard={"cpu": "1"}, used={}, namespace="odd",
                       scope_selector=[{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]))
        created = create(kube, pod(), namespace="odd")
        assert created[0] == 201
        assert cpu(created) == "1930m"
        assert not any("internal error" in w for w in created[2])
