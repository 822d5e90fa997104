"""Invariants over generated Pods: the patch applies, validates, keeps people's values, is idempotent."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import jsonpatch
import kubernetes_validate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.strategies import facts, pods, profile_for
from webhook.config.policies import bundled_policies, load_policy_text
from webhook.core.engine import decide, tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.inputs import decision_inputs, template_free
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.pod import INJECTED_ANNOTATION
from webhook.core.model.workload import pod_workload
from webhook.core.policy.policies import PolicySet
from webhook.core.sizing.podlimits import breaches, pod_total
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot

POLICIES = [
    bundled_policies().policies["default"],
    load_policy_text(
        "policies:\n  strict:\n    resources:\n      cpu: {limit: equal}\n      memory: {limit: equal}\n"
        "    probes:\n      liveness: {enabled: true}\n      httpPath: /ready\n"
    ).policies["strict"],
]
LATEST = kubernetes_validate.latest_version()
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from leaves(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from leaves(value, (*path, index))
    else:
        yield path, node


def at(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


@st.composite
def cases(
    draw: st.DrawFn, *, pod_level: bool = False
) -> tuple[dict[str, Any], Any, dict[str, Any], ClusterFacts]:
    pod = draw(pods(pod_level=pod_level))
    names = [c["name"] for group in ("containers", "initContainers") for c in pod["spec"].get(group, [])]
    return pod, draw(st.sampled_from(POLICIES)), profile_for(draw, names), draw(facts)


def tailored(
    pod: dict[str, Any], policy: Any, profiles: dict[str, Any], cluster: ClusterFacts
) -> dict[str, Any]:
    decision = tailor(pod, policy=policy, profiles=profiles, facts=cluster)
    result: dict[str, Any] = jsonpatch.apply_patch(copy.deepcopy(pod), copy.deepcopy(list(decision.ops)))
    return result


@PROPERTY
@given(cases())
def test_the_patch_applies_and_the_result_validates_strictly(case: Any) -> None:
    pod, policy, profiles, cluster = case
    result = tailored(pod, policy, profiles, cluster)
    kubernetes_validate.validate(result, "1.30", strict=True)
    kubernetes_validate.validate(result, LATEST, strict=True)


@PROPERTY
@given(cases(pod_level=True))
def test_pods_with_pod_level_resources_validate_on_the_newest_schema(case: Any) -> None:
    pod, policy, profiles, cluster = case
    kubernetes_validate.validate(tailored(pod, policy, profiles, cluster), LATEST, strict=True)


@PROPERTY
@given(cases(pod_level=True))
def test_no_value_present_in_the_input_is_changed(case: Any) -> None:
    pod, policy, profiles, cluster = case
    result = tailored(pod, policy, profiles, cluster)
    for path, value in leaves(pod):
        if path == ("spec", "terminationGracePeriodSeconds") and value == 30:
            continue  # the API default: raised to cover the preStop sleep (documented)
        assert at(result, path) == value, path


@PROPERTY
@given(cases(pod_level=True))
def test_running_on_its_own_output_gives_an_empty_patch(case: Any) -> None:
    pod, policy, profiles, cluster = case
    once = tailored(pod, policy, profiles, cluster)
    assert tailor(once, policy=policy, profiles=profiles, facts=cluster).ops == ()


@st.composite
def tight_pod_limit_cases(draw: st.DrawFn) -> tuple[dict[str, Any], Any, dict[str, Any], ClusterFacts]:
    """A Pod with a Pod-type LimitRange just above its own totals, where added values tip it over."""
    pod, policy, profiles, _ = draw(cases(pod_level=True))
    requests, limits = pod_total(pod, "requests", added={}), pod_total(pod, "limits", added={})
    room = st.decimals(min_value=1, max_value=2, places=2)
    item = LimitRangeItem(
        "Pod",
        max={resource: total * draw(room) for resource, total in limits.items()},
        max_limit_request_ratio={
            resource: limits[resource] / total * draw(room)
            for resource, total in requests.items()
            if total and limits.get(resource)
        },
    )
    return pod, policy, profiles, ClusterFacts(limit_ranges=(item,))


@PROPERTY
@given(cases(pod_level=True) | tight_pod_limit_cases())
def test_a_pod_within_its_pod_limit_ranges_stays_within_them(case: Any) -> None:
    pod, policy, profiles, cluster = case

    def breached(subject: dict[str, Any]) -> dict[str, str]:
        requests, limits = (pod_total(subject, section, added={}) for section in ("requests", "limits"))
        return breaches(requests, limits, cluster.limit_ranges)

    assert breached(tailored(pod, policy, profiles, cluster)).keys() <= breached(pod).keys()


@PROPERTY
@given(cases())
def test_an_injection_always_comes_with_its_explanation(case: Any) -> None:
    pod, policy, profiles, cluster = case
    decision = tailor(pod, policy=policy, profiles=profiles, facts=cluster)
    result = tailored(pod, policy, profiles, cluster)
    if decision.ops:
        text = result["metadata"]["annotations"][INJECTED_ANNOTATION]
        assert all(f"{i.field}={i.value}" in text for i in decision.injections)
    else:
        assert decision.injections == ()


@PROPERTY
@given(cases(pod_level=True), st.text(alphabet="bcdfghjklmnpqrstvwxz2456789", min_size=5, max_size=5))
def test_the_engine_reads_nothing_but_the_decision_inputs(case: Any, suffix: str) -> None:
    pod, policy, profiles, cluster = case
    replica = copy.deepcopy(pod)
    # What differs between replicas of one template: the ServiceAccount plugin's volume and its mounts.
    replica["spec"]["volumes"] = [{"name": f"kube-api-access-{suffix}", "projected": {"sources": []}}]
    for body in replica["spec"]["containers"]:
        body["volumeMounts"] = [{"name": f"kube-api-access-{suffix}", "mountPath": "/var/run/secrets"}]
        body["env"] = [{"name": "REPLICA", "value": suffix}]
    expected = tailor(pod, policy=policy, profiles=profiles, facts=cluster)
    assert decision_inputs(replica) == decision_inputs(pod)
    assert tailor(decision_inputs(replica), policy=policy, profiles=profiles, facts=cluster) == expected
    assert tailor(replica, policy=policy, profiles=profiles, facts=cluster) == expected


OWNERS = [
    None,
    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7c9b6f"},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
    {"apiVersion": "batch/v1", "kind": "Job", "name": "backup-29123456"},
]
# What differs between Pods of one workload in places the engine does not read.
UNREAD_LABELS = st.dictionaries(
    st.sampled_from(["statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "job-name",
                     "batch.kubernetes.io/job-completion-index", "controller-revision-hash", "team"]),
    st.text(alphabet="abc0123456789", max_size=8), max_size=4,
)
UNREAD_ANNOTATIONS = st.dictionaries(
    st.sampled_from(["batch.kubernetes.io/job-completion-index", "kubectl.kubernetes.io/restartedAt",
                     "example.com/blob", "checksum/config"]),
    st.text(max_size=300), max_size=3,
)


@st.composite
def siblings(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], Any, dict[str, Any], ClusterFacts]:
    """Two Pods of one workload that differ only where the decision inputs leave out."""
    pod, policy, profiles, cluster = draw(cases(pod_level=True))
    owner = draw(st.sampled_from(OWNERS))
    metadata = pod["metadata"]
    if owner is not None:
        metadata["ownerReferences"] = [{**owner, "uid": "u-1", "controller": True, "blockOwnerDeletion": 1}]
        if owner["kind"] == "ReplicaSet":
            metadata["labels"]["pod-template-hash"] = "5d8f7c9b6f"
    sibling = copy.deepcopy(pod)
    sibling["metadata"]["labels"].update(draw(UNREAD_LABELS))
    if "annotations" in sibling["metadata"]:  # whether the map exists decides the patch's shape: kept
        sibling["metadata"]["annotations"].update(draw(UNREAD_ANNOTATIONS))
    if owner is not None:
        sibling["metadata"]["ownerReferences"][0].update(uid="u-2", blockOwnerDeletion=False)
        sibling["metadata"].pop("generateName", None)
        sibling["metadata"]["name"] = f"{owner['name']}-{draw(st.integers(0, 99))}"
    if owner is not None and owner["kind"] == "StatefulSet" and draw(st.booleans()):
        # Each replica claims its volumeClaimTemplates under its own name, as the controller names them.
        pod["metadata"].pop("generateName", None)
        pod["metadata"]["name"] = "db-0"
        for replica in (pod, sibling):
            claim = {"claimName": f"data-{replica['metadata']['name']}"}
            replica["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": claim}]
    return pod, sibling, policy, profiles, cluster


@PROPERTY
@given(siblings())
def test_pods_with_equal_decision_inputs_get_equal_decisions(case: Any) -> None:
    pod, sibling, policy, profiles, cluster = case
    snapshot = ClusterSnapshot(
        policies=PolicySet({"default": policy}), server_version=cluster.server_version,
        limit_ranges={"shop": cluster.limit_ranges},
    )
    profile_index = ProfileSnapshot(profiles={pod_workload(pod, "shop"): profiles})
    keys = snapshot.label_keys_read("shop")
    assert decision_inputs(sibling, label_keys=keys) == decision_inputs(pod, label_keys=keys)

    def decided(subject: Any) -> Any:
        return decide(subject, namespace="shop", cluster=snapshot, profiles=profile_index)

    expected = decided(pod)
    assert decided(sibling) == expected
    assert decided(decision_inputs(pod, label_keys=keys)) == expected


HASHES = st.text(alphabet="bcdfghjklmnpqrstvwxz2456789", min_size=1, max_size=10)


@PROPERTY
@given(siblings(), HASHES)
def test_pods_of_two_templates_of_one_deployment_are_keyed_and_decided_alike(case: Any, other: str) -> None:
    """The verdict cache keys a Deployment's Pods by their template-free inputs: equal views decide alike."""
    pod, sibling, policy, profiles, cluster = case
    metadata = sibling["metadata"]
    owners = metadata.get("ownerReferences") or [{}]
    if owners[0].get("kind") != "ReplicaSet":  # another kind of owner: nothing to make template-free
        assert template_free(decision_inputs(pod)) is None
        return
    owners[0]["name"] = f"web-{other}"
    metadata["labels"]["pod-template-hash"] = other
    snapshot = ClusterSnapshot(
        policies=PolicySet({"default": policy}), server_version=cluster.server_version,
        limit_ranges={"shop": cluster.limit_ranges},
    )
    profile_index = ProfileSnapshot(profiles={pod_workload(pod, "shop"): profiles})
    keys = snapshot.label_keys_read("shop")
    view = template_free(decision_inputs(pod, label_keys=keys))
    assert view is not None
    assert template_free(decision_inputs(sibling, label_keys=keys)) == view
    assert decide(sibling, namespace="shop", cluster=snapshot, profiles=profile_index) == decide(
        pod, namespace="shop", cluster=snapshot, profiles=profile_index
    )
