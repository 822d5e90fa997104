"""The shortcuts node fit and quota take on every decision give exactly what the long way gives.

A decision asks the totals of the Pod as it will be created several times (node fit, quota, the
charges), the nodes its placement may use, and which quotas count it. Each has a shortcut (one pass
over the spec instead of a copy of the Pod; a memo keyed by the placement fields' text; no copy of
the Pod when no quota is scoped): these properties hold them to the definitions.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.strategies import cpu, memory, pods
from tests.fit.kit import node, quota, taint
from webhook.core.fit.caps import CreatedTotals, as_created, totals
from webhook.core.fit.placement import index_nodes, matching_shapes, parse_node, placement, pod_shapes
from webhook.core.fit.quota import charges
from webhook.core.model.decision import Basis, Injection
from webhook.core.model.resourcequota import applies, parse_quota

FIELDS = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory", "requests.ephemeral-storage")


@st.composite
def injections(draw: st.DrawFn, pod: dict[str, Any]) -> list[Injection]:
    """Values pod-tailor might inject into the Pod's containers (some unreadable, some not ours)."""
    spec = pod["spec"]
    names = [body["name"] for group in ("initContainers", "containers") for body in spec.get(group, ())]
    found = []
    for _ in range(draw(st.integers(0, 5))):
        field = draw(st.sampled_from(FIELDS))
        value = draw(cpu if "cpu" in field else memory | st.just("lots"))
        found.append(Injection(draw(st.sampled_from([*names, "ghost"])), field, value, "why", Basis.POLICY))
    return found


@st.composite
def pods_and_injections(draw: st.DrawFn) -> tuple[dict[str, Any], list[Injection]]:
    pod = draw(pods(pod_level=True))
    if draw(st.booleans()):
        pod["spec"]["overhead"] = {"cpu": "250m", "memory": "120Mi"}
    for body in pod["spec"]["containers"]:
        if draw(st.integers(0, 4)) == 0:  # a value of its own that is no quantity: counted as absent
            resources = body.setdefault("resources", {})
            section = resources.setdefault(draw(st.sampled_from(["requests", "limits"])), {})
            section[draw(st.sampled_from(["cpu", "memory"]))] = "lots"
    return pod, draw(injections(pod))


class TestTheTotalsOfThePodAsCreated:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(pods_and_injections())
    def test_one_pass_over_the_spec_gives_the_totals_of_the_copied_pod(
        self, found: tuple[dict[str, Any], list[Injection]]
    ) -> None:
        pod, injected = found
        assert CreatedTotals(pod).of(injected) == totals(as_created(pod, injected))

    def test_a_pod_with_container_statuses_is_counted_the_long_way(self) -> None:
        """A Pod being resized counts the largest of spec, allocated and actual (nodefree)."""
        pod = {
            "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"containerStatuses": [{"name": "app", "allocatedResources": {"cpu": "2"}}]},
        }
        injected = [Injection("app", "requests.cpu", "500m", "why", Basis.POLICY)]
        assert CreatedTotals(pod).of(injected)["requests.cpu"] == Decimal(2)


LABELS = st.dictionaries(st.sampled_from(["pool", "disk", "kubernetes.io/arch"]),
                         st.sampled_from(["a", "b", "arm64", "amd64"]), max_size=2)  # fmt: skip
TOLERATIONS = st.lists(
    st.sampled_from([
        {"key": "spot", "operator": "Exists"},
        {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"operator": "Exists"},
        {"key": "gpu", "operator": "Exists", "effect": "NoExecute"},
    ]),
    max_size=2,
)  # fmt: skip
EXPRESSIONS = st.lists(
    st.fixed_dictionaries({"key": st.sampled_from(["pool", "disk"]),
                           "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
                           "values": st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2)}),
    min_size=1, max_size=2,
)  # fmt: skip


@st.composite
def placements(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app"}]}
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(LABELS)
    if draw(st.booleans()):
        terms = [{"matchExpressions": draw(EXPRESSIONS)} for _ in range(draw(st.integers(1, 2)))]
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms}}}  # fmt: skip
    if draw(st.booleans()):
        spec["tolerations"] = draw(TOLERATIONS)
    if draw(st.booleans()):
        spec["os"] = {"name": draw(st.sampled_from(["linux", "windows"]))}
    return {"spec": spec}


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    found = []
    for index in range(draw(st.integers(0, 6))):
        taints = draw(st.lists(st.sampled_from([taint("spot", "true"), taint("gpu", effect="NoExecute")]),
                               max_size=1))  # fmt: skip
        found.append(node(f"n{index}", cpu=draw(st.sampled_from(["2", "3920m", "8"])),
                          memory=draw(st.sampled_from(["8Gi", "15Gi"])), labels=draw(LABELS), taints=taints))
    return found


class TestTheNodesAPlacementMayUse:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(clusters(), st.lists(placements(), min_size=1, max_size=4))
    def test_the_memo_by_the_placement_fields_gives_what_reading_the_placement_gives(
        self, nodes: list[dict[str, Any]], asked: list[dict[str, Any]]
    ) -> None:
        """Asked in turn (and again) against one index, as a burst of workloads asks."""
        index = index_nodes([parse_node(n) for n in nodes])
        fresh = index_nodes([parse_node(n) for n in nodes])
        for pod in [*asked, *asked]:
            assert pod_shapes(pod, index) == matching_shapes(placement(pod), fresh)


SCOPED = [
    quota("compute", hard={"requests.cpu": "4", "limits.memory": "8Gi"}),
    quota("best-effort", hard={"requests.memory": "1Gi"}, scopes=["BestEffort"]),
    quota("not-best-effort", hard={"requests.cpu": "2"}, scopes=["NotBestEffort"]),
    quota("critical", hard={"requests.cpu": "1"},
          scope_selector=[{"scopeName": "PriorityClass", "operator": "In", "values": ["critical"]}]),
]  # fmt: skip


class TestWhatThePodChargesItsQuotas:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(pods_and_injections(), st.lists(st.sampled_from(SCOPED), min_size=1, max_size=4, unique_by=id))
    def test_the_charges_are_the_totals_of_the_created_pod_against_the_quotas_that_count_it(
        self, found: tuple[dict[str, Any], list[Injection]], objects: list[dict[str, Any]]
    ) -> None:
        pod, injected = found
        quotas = [parse_quota(q) for q in objects]
        created = as_created(pod, injected)
        expected = {q.name: {key: totals(created).get(key, Decimal(0)) for key in q.hard}
                    for q in quotas if applies(q, created)}  # fmt: skip
        assert charges(pod, injected, quotas) == expected
