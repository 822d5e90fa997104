"""The node index (nodes grouped by pool, what each placement found remembered) answers exactly as
checking every node one by one does, however often and in whatever order it is asked."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engine.podkit import pod
from tests.fit.kit import node, taint
from webhook.core.fit.placement import NodeShape, allows, index_nodes, matching_shapes, parse_node, placement

VALUES = ("a", "b", "c")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
BY_NAME = [{"key": "metadata.name", "operator": "In", "values": ["n1", "n3"]}]
KEYS = ("pool", "zone", "kubernetes.io/hostname", "kubernetes.io/os")

nodes = st.lists(
    st.builds(
        lambda index, labels, taints, cpu, unschedulable: node(
            f"n{index}", cpu=f"{cpu}m", labels={**labels, "kubernetes.io/hostname": f"n{index}"},
            taints=taints, unschedulable=unschedulable,
        ),
        index=st.integers(min_value=0, max_value=40),
        labels=st.dictionaries(st.sampled_from(KEYS[:2] + KEYS[3:]), st.sampled_from(VALUES)),
        taints=st.lists(st.builds(taint, st.sampled_from(("spot", "gpu")), st.sampled_from(("", "true")),
                                  st.sampled_from(EFFECTS)), max_size=2),
        cpu=st.sampled_from((1000, 2000, 4000)),
        unschedulable=st.booleans(),
    ),
    max_size=30,
    unique_by=lambda n: n["metadata"]["name"],
)  # fmt: skip
expression = st.fixed_dictionaries({
    "key": st.sampled_from(KEYS),
    "operator": st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
    "values": st.lists(st.sampled_from((*VALUES, "n1", "n2")), min_size=1, max_size=2),
})  # fmt: skip
affinity = st.lists(
    st.fixed_dictionaries(
        {"matchExpressions": st.lists(expression, max_size=2)},
        optional={"matchFields": st.just(BY_NAME)},
    ),
    min_size=1, max_size=2,
).map(lambda terms: {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": terms}}})  # fmt: skip
toleration = st.fixed_dictionaries(
    {"operator": st.sampled_from(("Exists", "Equal"))},
    optional={"key": st.sampled_from(("spot", "gpu", "node.kubernetes.io/unschedulable")),
              "value": st.sampled_from(("", "true")), "effect": st.sampled_from(("NoSchedule", "NoExecute"))},
)  # fmt: skip
specs = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": st.dictionaries(st.sampled_from(KEYS), st.sampled_from((*VALUES, "n1")), max_size=2),
        "affinity": affinity,
        "tolerations": st.lists(toleration, max_size=2),
        "os": st.sampled_from(({"name": "linux"}, {"name": "windows"})),
    },
)


def one_by_one(spec: dict[str, Any], shapes: list[NodeShape]) -> list[tuple[Decimal, Decimal]]:
    where = placement(pod(**spec))
    return sorted({(n.cpu, n.memory) for n in shapes if allows(where, n.labels, n.taints, name=n.name)})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(listed=nodes, asked=st.lists(specs, min_size=1, max_size=6), order=st.randoms(use_true_random=False))
def test_the_index_answers_as_every_node_checked_one_by_one(
    listed: list[dict[str, Any]], asked: list[dict[str, Any]], order: Any
) -> None:
    shapes = [s for s in (parse_node(n) for n in listed) if isinstance(s, NodeShape)]
    index = index_nodes(shapes)
    twice = asked + asked
    order.shuffle(twice)
    for spec in twice:
        found = matching_shapes(placement(pod(**spec)), index)
        assert found == one_by_one(spec, shapes)
        found.append((Decimal(1), Decimal(1)))  # a caller's change never reaches the next answer


def test_the_memo_stays_bounded_when_every_pod_asks_for_its_own_placement() -> None:
    index = index_nodes([parse_node(node("a", cpu="1"))])
    for number in range(5000):
        matching_shapes(placement(pod(nodeSelector={"team": str(number)})), index)
    assert len(index.memo) <= 4096
