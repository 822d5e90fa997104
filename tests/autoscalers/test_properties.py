"""The engine's invariants still hold with HPAs and VPAs around: the patch applies and validates, people's
values stay, a second pass adds nothing, only the decision inputs are read; and the rule itself holds."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import kubernetes_validate
from hypothesis import given
from hypothesis import strategies as st

from tests.autoscalers.kit import average_value, external, hpa, utilization, vpa
from tests.engine.strategies import facts, pods, profile_for
from tests.engine.test_properties import POLICIES, PROPERTY, at, leaves, tailored
from webhook.config.policies import load_policy_text
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.autoscalers import Ignored, index_autoscalers, parse_autoscaler
from webhook.core.model.inputs import decision_inputs
from webhook.core.model.pod import containers
from webhook.core.model.profile import Recommendation, TrailPoint, UsageTotals
from webhook.core.model.workload import ROLLOUT_HASH_LABEL, pod_workload
from webhook.core.sizing.holds import container_holds

SIZING = [
    *POLICIES,
    load_policy_text(
        "policies:\n  sized:\n    autoscalers:\n"
        "      {hpaUtilization: size, vpa: ignore, steps: {downPerDay: 0.1, upPerDay: 0.2}}\n"
    ).policies["sized"],
]


@st.composite
def metrics(draw: st.DrawFn, names: list[str]) -> list[dict[str, Any]]:
    choices = [
        utilization("cpu", draw(st.integers(1, 150))),
        utilization("memory", draw(st.integers(1, 150))),
        utilization("cpu", 70, container=draw(st.sampled_from(names))),
        average_value("cpu", draw(st.sampled_from(["100m", "2"]))),
        average_value("memory", "300Mi"),
        external(),
    ]
    return draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3))


@st.composite
def autoscaled(draw: st.DrawFn) -> tuple[dict[str, Any], Any, dict[str, Any], ClusterFacts]:
    """A generated Pod, with HPAs and VPAs that target its workload, and profiles with totals and trails."""
    subject = draw(pods(pod_level=True))
    names = [ref.name for ref in containers(subject)]
    key = pod_workload(subject, "shop")
    target = ("apps/v1", key.kind, key.name)
    if draw(st.booleans()):  # an Argo Rollout's Pod: its autoscalers name the Rollout, found by a label
        suffix = draw(st.text(alphabet="bcdfghjklmnpqrstvwxz2456789", min_size=8, max_size=10))
        metadata = subject.setdefault("metadata", {})
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"web-{suffix}", "uid": "u-1"}
        metadata["ownerReferences"] = [{**owner, "controller": True}]
        metadata["labels"] = {**(metadata.get("labels") or {}), ROLLOUT_HASH_LABEL: suffix}
        target = ("argoproj.io/v1alpha1", "Rollout", "web")
    objects: list[dict[str, Any]] = []
    for index in range(draw(st.integers(0, 2))):
        low = draw(st.integers(1, 5))
        objects.append(
            hpa(
                f"h{index}",
                target=target,
                metrics=draw(metrics(names)),
                min_replicas=low,
                max_replicas=draw(st.integers(low, 12)),
            )
        )
    if draw(st.booleans()):
        shapes: list[list[dict[str, Any]] | None] = [
            None,
            [{"containerName": "*", "controlledResources": ["memory"]}],
            [{"containerName": names[0], "mode": "Off"}],
            [
                {"containerName": "*", "mode": "Off"},
                {"containerName": names[-1], "controlledResources": ["cpu"]},
            ],
        ]
        policies = draw(st.sampled_from(shapes))
        mode = draw(st.sampled_from(["Auto", "Off", "Initial", "Recreate", "InPlaceOrRecreate", None]))
        objects.append(vpa("v", target=target, mode=mode, policies=policies))
    found = []
    for obj in objects:
        scaler, _ = parse_autoscaler(obj)
        assert not isinstance(scaler, Ignored)
        found.append(("shop", scaler))
    cluster = draw(facts)
    cluster = ClusterFacts(
        server_version=cluster.server_version,
        limit_ranges=cluster.limit_ranges,
        autoscalers=index_autoscalers(found).get("shop", {}),
    )
    profiles = profile_for(draw, names)
    for name, profile in list(profiles.items()):
        if isinstance(profile, Recommendation) and draw(st.booleans()):
            profiles[name] = Recommendation(
                cpu=profile.cpu,
                memory=profile.memory,
                evidence=profile.evidence,
                totals=UsageTotals(cpu=Decimal(draw(st.sampled_from(["0.5", "40"]))), memory=Decimal(2**34)),
                built_at=2_000_000.0,
                trail=(
                    TrailPoint(1_900_000.0, Decimal(draw(st.sampled_from(["0.01", "9"]))), Decimal(2**31)),
                ),
            )
    return subject, draw(st.sampled_from(SIZING)), profiles, cluster


@PROPERTY
@given(autoscaled())
def test_the_patch_applies_and_validates_strictly(case: Any) -> None:
    kubernetes_validate.validate(tailored(*case), kubernetes_validate.latest_version(), strict=True)


@PROPERTY
@given(autoscaled())
def test_no_value_present_in_the_input_is_changed(case: Any) -> None:
    result = tailored(*case)
    for path, value in leaves(case[0]):
        if path == ("spec", "terminationGracePeriodSeconds") and value == 30:
            continue  # the API default: raised to cover the preStop sleep (documented)
        assert at(result, path) == value, path


@PROPERTY
@given(autoscaled())
def test_running_on_its_own_output_gives_an_empty_patch(case: Any) -> None:
    _, policy, profiles, cluster = case
    assert tailor(tailored(*case), policy=policy, profiles=profiles, facts=cluster).ops == ()


@PROPERTY
@given(autoscaled(), st.text(alphabet="bcdfghjklmnpqrstvwxz2456789", min_size=5, max_size=5))
def test_the_engine_reads_nothing_but_the_decision_inputs(case: Any, suffix: str) -> None:
    subject, policy, profiles, cluster = case
    replica = copy.deepcopy(subject)
    replica["spec"]["volumes"] = [{"name": f"kube-api-access-{suffix}", "projected": {"sources": []}}]
    for body in replica["spec"]["containers"]:
        body["env"] = [{"name": "REPLICA", "value": suffix}]
    expected = tailor(subject, policy=policy, profiles=profiles, facts=cluster)
    assert tailor(decision_inputs(replica), policy=policy, profiles=profiles, facts=cluster) == expected


@PROPERTY
@given(autoscaled())
def test_what_a_vpa_sets_is_never_injected_and_what_an_hpa_holds_never_comes_from_history(case: Any) -> None:
    subject, policy, profiles, cluster = case
    decision = tailor(subject, policy=policy, profiles=profiles, facts=cluster)
    scalers = cluster.around(subject, pod_workload(subject, "shop"))
    injected = {(i.target, i.field): i for i in decision.injections}
    for ref in containers(subject):
        for resource, hold in container_holds(scalers, policy.autoscalers, ref).items():
            request = injected.get((ref.name, f"requests.{resource}"))
            if hold.defer:
                assert request is None
                assert (ref.name, f"limits.{resource}") not in injected
            elif request is not None:
                assert hold.reason in request.source
                assert "profile:" not in request.source
