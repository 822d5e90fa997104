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
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts, LimitRangeItem
from webhook.core.inputs import decision_inputs
from webhook.core.pod import INJECTED_ANNOTATION
from webhook.core.podlimits import breaches, pod_total

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
