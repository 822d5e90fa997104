"""Node fit and quota at admission, through the engine with the facts a snapshot gives it."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import kubernetes_validate
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.podkit import container, first, pod, policy, run
from tests.fit.kit import facts, node, quota, taint
from webhook.core.fit.nodefree import pod_requests
from webhook.core.fit.placement import allows, parse_node, placement
from webhook.core.model.quantity import parse
from webhook.core.model.resourcequota import left_of, parse_quota, room

BIG = policy("resources:\n  cpu: {request: '3'}\n  memory: {request: 1Gi}", name="big")
LATEST = kubernetes_validate.latest_version()


def requested(result: dict[str, Any], resource: str = "cpu", group: str = "containers") -> str | None:
    value = (first(result, group).get("resources") or {}).get("requests", {}).get(resource)
    return None if value is None else str(value)


def valid(result: dict[str, Any]) -> dict[str, Any]:
    kubernetes_validate.validate(result, LATEST, strict=True)
    return result


class TestWhichNodesAPodMayUse:
    @pytest.mark.parametrize(
        ("spec", "labels", "taints", "allowed"),
        [
            ({}, {}, [], True),
            ({"nodeSelector": {"pool": "big"}}, {"pool": "big"}, [], True),
            ({"nodeSelector": {"pool": "big"}}, {"pool": "small"}, [], False),
            ({}, {}, [taint("dedicated", "gpu")], False),
            ({}, {}, [taint("dedicated", "gpu", "PreferNoSchedule")], True),
            ({}, {}, [taint("dedicated", "gpu", "NoExecute")], False),
            ({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                               "effect": "NoSchedule"}]}, {}, [taint("dedicated", "gpu")], True),
            ({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "cpu"}]},
             {}, [taint("dedicated", "gpu")], False),
            ({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}, {}, [taint("dedicated", "gpu")],
             True),
            ({"tolerations": [{"operator": "Exists"}]}, {}, [taint("a"), taint("b", "c", "NoExecute")], True),
            ({"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]},
             {}, [taint("dedicated", "gpu")], False),
            ({"os": {"name": "windows"}}, {}, [], False),
            ({"nodeSelector": {"kubernetes.io/arch": "arm64"}}, {}, [], False),
        ],
    )  # fmt: skip
    def test_selectors_and_taints_filter_as_the_scheduler_does(
        self, spec: dict[str, Any], labels: dict[str, str], taints: list[dict[str, str]], allowed: bool
    ) -> None:
        shape = parse_node(node("n1", labels=labels, taints=taints))
        assert not isinstance(shape, str)
        assert allows(placement(pod(**spec)), shape.labels, shape.taints, name="n1") is allowed

    @pytest.mark.parametrize(
        ("expression", "allowed"),
        [
            ({"key": "pool", "operator": "In", "values": ["big", "huge"]}, True),
            ({"key": "pool", "operator": "NotIn", "values": ["big"]}, False),
            ({"key": "absent", "operator": "NotIn", "values": ["x"]}, True),
            ({"key": "pool", "operator": "Exists"}, True),
            ({"key": "pool", "operator": "DoesNotExist"}, False),
            ({"key": "cores", "operator": "Gt", "values": ["8"]}, True),
            ({"key": "cores", "operator": "Lt", "values": ["8"]}, False),
            ({"key": "pool", "operator": "Gt", "values": ["8"]}, False),
        ],
    )
    def test_required_node_affinity_operators(self, expression: dict[str, Any], allowed: bool) -> None:
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}  # fmt: skip
        shape = parse_node(node("n1", labels={"pool": "big", "cores": "16"}))
        assert not isinstance(shape, str)
        assert allows(placement(pod(affinity=affinity)), shape.labels, shape.taints, name="n1") is allowed

    def test_terms_are_ored_and_match_fields_select_by_name(self) -> None:
        affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["none"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
        ]}}}  # fmt: skip
        where = placement(pod(affinity=affinity))
        assert allows(where, {"pool": "big"}, (), name="n2")
        assert not allows(where, {"pool": "big"}, (), name="n1")

    def test_an_unschedulable_node_counts_only_for_a_pod_that_tolerates_it(self) -> None:
        shape = parse_node(node("n1", unschedulable=True))
        assert not isinstance(shape, str)
        assert not allows(placement(pod()), shape.labels, shape.taints)
        tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}])
        assert allows(placement(tolerant), shape.labels, shape.taints)


class TestNodeFit:
    def test_a_pod_whose_history_exceeds_every_matching_node_is_capped_and_says_so(self) -> None:
        nodes = [node("a", cpu="1930m"), node("b", cpu="1930m")]
        decision, result = run(pod(), using=BIG, facts=facts(nodes))
        assert requested(valid(result)) == "1930m"
        assert ("app: cpu 3 capped to 1930m: largest node that fits the Pod's selector has 1930m allocatable"
                in decision.warnings)
        (cap,) = decision.caps
        assert (cap.rule, cap.field, cap.before, cap.after) == ("fit", "requests.cpu", "3", "1930m")
        assert "capped to 1930m" in result["metadata"]["annotations"]["pod-tailor.io/injected"]

    def test_a_node_only_a_tolerated_taint_keeps_out_counts(self) -> None:
        nodes = [node("small", cpu="1930m"), node("gpu", cpu="7910m", taints=[taint("dedicated", "gpu")])]
        tolerant = pod(tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}])
        assert requested(run(tolerant, using=BIG, facts=facts(nodes))[1]) == "3"
        assert requested(run(pod(), using=BIG, facts=facts(nodes))[1]) == "1930m"

    def test_a_node_selector_no_node_matches_keeps_the_values_with_a_warning(self) -> None:
        subject = pod(nodeSelector={"pool": "gpu"})
        decision, result = run(subject, using=BIG, facts=facts([node("a", cpu="1")]))
        assert requested(result) == "3"
        assert any("no known node matches" in w and "autoscaler may add one" in w for w in decision.warnings)
        assert not decision.caps

    def test_fit_max_node_names_the_node_an_autoscaler_could_add(self) -> None:
        grows = policy("resources:\n  cpu: {request: '3'}\nfit:\n  maxNode: {cpu: '8', memory: 32Gi}")
        assert requested(run(pod(), using=grows, facts=facts([node("a", cpu="1930m")]))[1]) == "3"
        decision, result = run(pod(nodeSelector={"pool": "new"}), using=grows, facts=facts([node("a")]))
        assert requested(result) == "3"
        assert not any("no known node" in w for w in decision.warnings)

    def test_memory_and_cpu_are_held_to_one_node_that_holds_both(self) -> None:
        nodes = [node("cpu-heavy", cpu="7910m", memory="2Gi"), node("mem-heavy", cpu="1", memory="60Gi")]
        heavy = policy("resources:\n  cpu: {request: '4'}\n  memory: {request: 8Gi}", name="heavy")
        decision, result = run(pod(), using=heavy, facts=facts(nodes))
        cpu, memory = parse(requested(result)), parse(requested(result, "memory"))
        assert any(cpu <= parse(n["status"]["allocatable"]["cpu"]) and memory <= parse(
            n["status"]["allocatable"]["memory"]) for n in nodes)
        assert decision.caps

    @pytest.mark.parametrize(
        ("extra", "expected"),
        [
            ({"init": [container("migrate", ports=(), requests={"cpu": "1"})]}, "1930m"),  # init peak below
            ({"init": [container("proxy", ports=(), requests={"cpu": "500m"}, restartPolicy="Always")]},
             "1430m"),
            ({"overhead": {"cpu": "250m"}}, "1680m"),
        ],
    )  # fmt: skip
    def test_the_pod_is_counted_as_the_scheduler_counts_it(
        self, extra: dict[str, Any], expected: str
    ) -> None:
        _, result = run(pod(**extra), using=BIG, facts=facts([node("a", cpu="1930m")]))
        assert requested(valid(result)) == expected

    def test_a_persons_own_values_are_never_lowered(self) -> None:
        own = pod(container(requests={"cpu": "3"}))
        decision, result = run(own, using=BIG, facts=facts([node("a", cpu="1930m")]))
        assert requested(result) == "3"
        assert not decision.caps
        assert any("even without pod-tailor" in w for w in decision.warnings)

    def test_the_start_up_boost_stays_on_the_node(self) -> None:
        boosting = policy("resources:\n  cpu: {request: '1'}\nstartupBoost: {enabled: true, source: factor}",
                          name="boost")
        on_node = facts([node("a", cpu="1930m")], server_version=(1, 33))
        decision, result = run(pod(), using=boosting, facts=on_node)
        assert requested(valid(result)) == "1930m"
        assert any("capped at the largest node that fits the Pod" in i.source for i in decision.injections)

    @pytest.mark.parametrize(
        "bad", [node("x", cpu=None), node("y", memory=None), node("z", cpu="lots"), {"metadata": {}}]
    )
    def test_nodes_without_a_readable_allocatable_are_left_out(self, bad: dict[str, Any]) -> None:
        decision, result = run(pod(), using=BIG, facts=facts([bad]))
        assert requested(result) == "3"
        assert not decision.caps
        assert not any("no known node" in w for w in decision.warnings)
        _, capped = run(pod(), using=BIG, facts=facts([bad, node("a", cpu="1")]))
        assert requested(capped) == "1"

    def test_no_node_data_is_todays_behaviour(self) -> None:
        assert requested(run(pod(), using=BIG, facts=facts(None))[1]) == "3"

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        cpus=st.lists(st.integers(min_value=200, max_value=16_000), min_size=1, max_size=4),
        wanted=st.integers(min_value=10, max_value=32_000),
        sidecar=st.integers(min_value=0, max_value=300),
    )
    def test_a_capped_pod_fits_a_node_it_may_use(self, cpus: list[int], wanted: int, sidecar: int) -> None:
        nodes = [node(f"n{i}", cpu=f"{cpu}m") for i, cpu in enumerate(cpus)]
        using = policy(f"resources:\n  cpu: {{request: {wanted}m, max: '64'}}", name="p")
        init = [container("proxy", ports=(), requests={"cpu": f"{sidecar}m"}, restartPolicy="Always")]
        _, result = run(pod(init=init if sidecar else ()), using=using, facts=facts(nodes))
        total = pod_requests(result)["cpu"]
        assert total <= Decimal(max(cpus)) / 1000 or parse(requested(result)) == Decimal("0.01")


class TestQuota:
    def test_a_quota_near_full_gets_a_smaller_value(self) -> None:
        near = quota(hard={"requests.cpu": "4"}, used={"requests.cpu": "3500m"})
        decision, result = run(pod(), using=BIG, facts=facts(quotas=[near]))
        assert requested(valid(result)) == "500m"
        said = "app: cpu 3 capped to 500m: ResourceQuota compute has 500m of requests.cpu left"
        assert said in decision.warnings

    def test_a_full_quota_leaves_pod_tailors_value_out(self) -> None:
        full = quota(hard={"cpu": "4"}, used={"cpu": "4"})
        decision, result = run(pod(), using=BIG, facts=facts(quotas=[full]))
        assert requested(valid(result)) is None
        assert any(cap.after is None for cap in decision.caps)

    def test_pods_admitted_since_the_status_count(self) -> None:
        fresh = quota(hard={"requests.cpu": "4"}, used={"requests.cpu": "0"})
        pending = {"compute": {"requests.cpu": Decimal(3)}}
        _, result = run(pod(), using=BIG, facts=facts(quotas=[fresh], pending=pending))
        assert requested(result) == "1"

    def test_a_quota_on_limits_gets_the_limits_it_requires(self) -> None:
        limits = quota(hard={"limits.cpu": "40", "limits.memory": "64Gi"}, used={})
        decision, result = run(pod(), facts=facts(quotas=[limits]))
        body = first(valid(result))["resources"]
        assert body["limits"] == {"cpu": body["requests"]["cpu"], "memory": body["requests"]["memory"]}
        assert any("required by ResourceQuota compute" in i.source for i in decision.injections)

    def test_charges_are_what_the_pod_counts_against_each_quota(self) -> None:
        both = [quota(hard={"requests.cpu": "10"}, used={}), quota("mem", hard={"memory": "10Gi"}, used={})]
        decision, _ = run(pod(), using=BIG, facts=facts(quotas=both))
        assert decision.charges == {"compute": {"requests.cpu": Decimal(3)},
                                    "mem": {"requests.memory": Decimal(2**30)}}

    @pytest.mark.parametrize(
        ("scoped", "subject", "counts"),
        [
            (quota(hard={"cpu": "1"}, used={}, scopes=["BestEffort"]), pod(), False),  # sized: not BestEffort
            (quota(hard={"cpu": "1"}, used={}, scopes=["NotBestEffort"]), pod(), True),
            (quota(hard={"cpu": "1"}, used={}, scopes=["Terminating"]), pod(), False),
            (quota(hard={"cpu": "1"}, used={}, scopes=["Terminating"]), pod(activeDeadlineSeconds=60), True),
            (quota(hard={"cpu": "1"}, used={}, scope_selector=[
                {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]),
             pod(priorityClassName="high"), True),
            (quota(hard={"cpu": "1"}, used={}, scope_selector=[
                {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]),
             pod(priorityClassName="low"), False),
            (quota(hard={"cpu": "1"}, used={}, scopes=["CrossNamespacePodAffinity"]), pod(), False),
        ],
    )  # fmt: skip
    def test_scopes_decide_which_quotas_count_the_pod(
        self, scoped: dict[str, Any], subject: dict[str, Any], counts: bool
    ) -> None:
        decision, result = run(subject, using=BIG, facts=facts(quotas=[scoped]))
        assert (requested(result) == "1") is counts
        assert bool(decision.charges) is counts

    @pytest.mark.parametrize(
        "odd",
        [
            quota(hard={"requests.nvidia.com/gpu": "4", "count/pods": "10", "pods": "10"}, used={}),
            quota(hard={"requests.cpu": "a lot"}, used={"requests.cpu": "?"}),
            quota(hard={"requests.cpu": "10"}),  # no status yet
            {"metadata": {"name": "bare"}},
        ],
    )
    def test_odd_quotas_never_fail_a_decision(self, odd: dict[str, Any]) -> None:
        decision, result = run(pod(), using=BIG, facts=facts(quotas=[odd]))
        assert requested(valid(result)) == "3"
        assert not decision.caps

    def test_quota_respect_off_is_todays_behaviour(self) -> None:
        off = policy("resources:\n  cpu: {request: '3'}\nquota: {respect: false, supplyRequired: false}")
        full = quota(hard={"cpu": "4", "limits.memory": "1Gi"}, used={"cpu": "4"})
        decision, result = run(pod(), using=off, facts=facts(quotas=[full]))
        assert requested(result) == "3"
        assert not decision.caps
        assert decision.charges == {}  # nothing reads them back: the ledger keeps none


class TestWhatAQuotaHasLeft:
    """`left_of` is the one sum (`hard - used - pending`); `room` takes the least over the quotas, as
    admission (with the ledger's pending charges) and the in-place resizer (without) read it."""

    @pytest.mark.parametrize(
        ("hard", "used", "charged", "expected"),
        [
            ({"requests.cpu": "4"}, {"requests.cpu": "1500m"}, None, {"requests.cpu": "2.5"}),
            ({"cpu": "4"}, {"requests.cpu": "1500m"}, {"requests.cpu": "3"}, {"requests.cpu": "-0.5"}),
            ({"cpu": "4", "memory": "1Gi"}, None, None, {"requests.cpu": "4", "requests.memory": str(2**30)}),
            ({"limits.cpu": "4"}, {"limits.cpu": "1"}, {"requests.cpu": "3"}, {"limits.cpu": "3"}),
        ],
        ids=["used", "charged-past-hard", "no-status-yet", "a-charge-of-an-untracked-key"],
    )
    def test_a_quota_has_left_its_hard_less_used_less_pending(
        self, hard: dict[str, str], used: dict[str, str] | None, charged: dict[str, str] | None,
        expected: dict[str, str],
    ) -> None:
        parsed = parse_quota(quota(hard=hard, used=used))
        pending = {key: Decimal(value) for key, value in charged.items()} if charged else None
        assert left_of(parsed, pending) == {key: Decimal(value) for key, value in expected.items()}

    def test_the_room_is_the_least_any_quota_has_left_the_first_on_a_tie(self) -> None:
        quotas = [parse_quota(quota("a", hard={"cpu": "4", "memory": "2Gi"}, used={"cpu": "1"})),
                  parse_quota(quota("b", hard={"cpu": "3", "limits.cpu": "8"}, used={})),
                  parse_quota(quota("c", hard={"cpu": "5"}, used={"cpu": "1"}))]  # fmt: skip
        expected = {"requests.cpu": (Decimal(3), "a"), "requests.memory": (Decimal(2 * 2**30), "a"),
                    "limits.cpu": (Decimal(8), "b")}  # fmt: skip
        assert room(quotas) == expected
        assert room(quotas, {"c": {"requests.cpu": Decimal(2)}})["requests.cpu"] == (Decimal(2), "c")
