"""What DaemonSets take on each node: the room node fit holds a Pod to, and the offline preview's answer
with DaemonSets in its input (the server's is in tests/fit/test_served.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine.podkit import pod, policy, run
from tests.fit.kit import daemonset, node, taint
from tests.fit.test_offline import POLICIES, _lines, _review, server_says
from tests.fit.test_rules import requested
from webhook.cluster.resources import daemonset_essentials
from webhook.core.facts import ClusterFacts
from webhook.core.fit.daemonsets import index_with_daemonsets, members, parse_daemonset, rooms
from webhook.core.fit.nodes import new_node_share
from webhook.core.fit.placement import DaemonSetShare, NodeShape, Placement, allows, parse_node
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.preview import run_preview

POOLS = ("general", "gpu", "arm")
TAINTS = {"general": [], "gpu": [taint("dedicated", "gpu")], "arm": [taint("arch", "arm", "NoExecute")]}


def _share(raw: dict[str, Any]) -> DaemonSetShare:
    share = parse_daemonset(raw)
    assert isinstance(share, DaemonSetShare)
    return share


nodes_strategy = st.lists(
    st.tuples(st.sampled_from(POOLS), st.integers(0, 8000), st.integers(0, 32)), min_size=1, max_size=12
)
daemonsets_strategy = st.lists(
    st.tuples(st.integers(0, 3000), st.integers(0, 8), st.sampled_from((None, *POOLS)), st.booleans()),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(nodes_strategy, daemonsets_strategy)
def test_a_nodes_room_is_its_allocatable_less_every_daemonset_that_lands_on_it_never_negative(
    raw_nodes: list[tuple[str, int, int]], raw_daemonsets: list[tuple[int, int, str | None, bool]]
) -> None:
    parsed = [
        parse_node(node(f"n{i}", cpu=f"{cpu}m", memory=f"{gi}Gi", labels={"pool": pool}, taints=TAINTS[pool]))
        for i, (pool, cpu, gi) in enumerate(raw_nodes)
    ]
    shares = [
        _share(daemonset(f"ds{i}", cpu=f"{cpu}m", memory=f"{gi}Gi",
                         node_selector={"pool": pool} if pool else None,
                         tolerations=[{"operator": "Exists"}] if tolerant else ()))
        for i, (cpu, gi, pool, tolerant) in enumerate(raw_daemonsets)
    ]  # fmt: skip
    index = index_with_daemonsets(parsed, shares)
    assert index.count == len(parsed)
    for member in members(index):
        own = next(n for n in parsed if isinstance(n, NodeShape) and n.name == member.name)
        landing = [s for s in shares if allows(s.where, own.labels, own.taints, name=own.name)]
        assert member.cpu == max(own.cpu - sum((s.cpu for s in landing), Decimal(0)), Decimal(0))
        assert member.memory == max(own.memory - sum((s.memory for s in landing), Decimal(0)), Decimal(0))
        assert member.cpu >= 0
        assert member.memory >= 0
        assert set(member.daemonsets) == {s.key for s in landing}
        # A DaemonSet's own Pod (pinned to the node by matchFields, as the controller pins it): every
        # share there but its own is taken.
        by_name = (((), (("metadata.name", "In", (member.name,)),)),)
        pinned = Placement({}, by_name, ({"operator": "Exists"},), None)
        for share in landing:
            others = [s for s in landing if s is not share]
            assert rooms(pinned, index, share) == [(
                max(own.cpu - sum((s.cpu for s in others), Decimal(0)), Decimal(0)),
                max(own.memory - sum((s.memory for s in others), Decimal(0)), Decimal(0)),
            )]


class TestWhereADaemonSetLands:
    def test_the_controllers_own_tolerations_land_it_on_cordoned_and_pressured_nodes(self) -> None:
        cordoned = parse_node(node("n1", cpu="2", unschedulable=True,
                                   taints=[taint("node.kubernetes.io/memory-pressure")]))  # fmt: skip
        (room,) = members(index_with_daemonsets([cordoned], [_share(daemonset("agent", cpu="500m"))]))
        assert room.cpu == Decimal("1.5")

    def test_network_unavailable_is_tolerated_by_host_network_daemonsets_only(self) -> None:
        waiting = parse_node(node("n1", cpu="2", taints=[taint("node.kubernetes.io/network-unavailable")]))
        shares = [_share(daemonset("cni", cpu="300m", host_network=True)),
                  _share(daemonset("agent", cpu="1"))]  # fmt: skip
        (room,) = members(index_with_daemonsets([waiting], shares))
        assert room.cpu == Decimal("1.7")
        assert room.daemonsets == ("kube-system/cni",)

    def test_what_the_watch_keeps_of_a_daemonset_gives_the_same_share(self) -> None:
        raw = daemonset("agent", cpu="250m", node_selector={"pool": "gpu"},
                        tolerations=[{"key": "dedicated", "operator": "Exists"}])  # fmt: skip
        assert _share(daemonset_essentials(raw)) == _share(raw)

    def test_daemonsets_not_known_leave_every_node_whole(self) -> None:
        parsed = [parse_node(node("n1", cpu="2"))]
        counted = index_with_daemonsets(parsed, [_share(daemonset("a"))])
        index = index_with_daemonsets(members(counted), None)
        assert index.daemonsets is None
        assert members(index)[0].cpu == Decimal(2)


NODES = [node("small-1", cpu="1930m"), node("gpu-1", cpu="7910m", taints=[taint("dedicated", "gpu")])]
AGENT = daemonset("agent", cpu="400m", namespace="default")  # not on gpu-1: no toleration of its taint
AGENT["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox:1.37"})
del AGENT["spec"]["template"]["spec"]["priorityClassName"]  # a node-critical agent is left alone
DAEMONSETS = [
    AGENT,
    daemonset("driver", cpu="5", node_selector={"kubernetes.io/hostname": "gpu-1"},
              tolerations=[{"key": "dedicated", "operator": "Exists"}]),
]  # fmt: skip


def test_the_preview_with_daemonsets_in_its_input_answers_as_the_server_and_spares_their_own_pods() -> None:
    review = _review({"tolerations": [{"key": "dedicated", "operator": "Exists"}]})
    listed = {"apiVersion": "v1", "kind": "List", "items": NODES}
    text = yaml.safe_dump_all([review["request"]["object"], listed, *DAEMONSETS])
    found = run_preview(text, cluster=ClusterSnapshot(policies=POLICIES, server_version=(1, 33)),
                        profiles=ProfileSnapshot(), namespace="default")  # fmt: skip
    plain, *own = found
    lines, warnings = server_says(review, NODES, [], daemonsets=DAEMONSETS)
    assert any("capped to 2910m" in line for line in lines)  # gpu-1: 7910m less the driver's 5
    assert _lines(plain.document) == lines
    said = [w if w.startswith("pod-tailor") else f"pod-tailor: {w}" for w in plain.decision.warnings]
    assert " ".join(said) == " ".join(warnings).replace(" ... ", " ")  # the server cuts at 120 characters
    (agent, _driver) = own
    # agent's own Pods land on small-1 only; its share there is its own: 3 cores injected into its
    # sidecar are held to 1930m less its 400m (1530m), not to 1930m less 400m twice.
    assert "sidecar: cpu 3 capped to 1530m" in " ".join(agent.decision.warnings)


class TestTheNodeAnAutoscalerWouldAdd:
    """`fit.maxNode` less the DaemonSets that would run on it: those whose placement allows a node with
    the Pod's nodeSelector labels and OS and no taint (tests of `new_node_share` through the engine)."""

    GROWS = policy("resources:\n  cpu: {request: '4'}\nfit:\n  maxNode: {cpu: '4', memory: 16Gi}",
                   name="grows")
    SHARES = [
        daemonset("everywhere", cpu="300m", tolerations=[{"operator": "Exists"}]),
        daemonset("linux-only", cpu="100m", node_selector={"kubernetes.io/os": "linux"}),
        daemonset("gpu-plugin", cpu="200m", node_selector={"pool": "gpu"},
                  tolerations=[{"key": "dedicated", "operator": "Exists"}]),
        daemonset("pinned", cpu="1", node_selector={"kubernetes.io/hostname": "small-1"}),
    ]  # fmt: skip

    def facts(self, *, known: bool = True) -> ClusterFacts:
        nodes = [parse_node(node("small-1", cpu="1930m"))]
        shares = [_share(d) for d in self.SHARES] if known else None
        return ClusterFacts(nodes=index_with_daemonsets(nodes, shares))

    @pytest.mark.parametrize(
        ("spec", "expected", "taken"),
        [
            ({"nodeSelector": {"pool": "new"}}, "3600m", "400m of it taken by 2 DaemonSets"),
            ({"nodeSelector": {"pool": "gpu"}}, "3400m", "600m of it taken by 3 DaemonSets"),
            ({"nodeSelector": {"pool": "new"}, "os": {"name": "windows"}}, "3700m",
             "300m of it taken by 1 DaemonSet"),
        ],
    )  # fmt: skip
    def test_the_daemonsets_that_would_land_on_it_are_not_free_for_the_pod(
        self, spec: dict[str, Any], expected: str, taken: str
    ) -> None:
        decision, result = run(pod(**spec), using=self.GROWS, facts=self.facts())
        assert requested(result) == expected
        assert any(f"cpu 4 capped to {expected}: fit.maxNode (the largest node an autoscaler may add) has 4 "
                   f"allocatable, {taken}" in w for w in decision.warnings), decision.warnings  # fmt: skip

    def test_with_daemonsets_not_known_it_counts_whole(self) -> None:
        subject = pod(nodeSelector={"pool": "new"})
        decision, result = run(subject, using=self.GROWS, facts=self.facts(known=False))
        assert requested(result) == "4"
        assert not decision.caps

    def test_a_daemonsets_own_pod_is_not_held_to_its_own_share(self) -> None:
        index = self.facts().nodes
        assert index is not None
        assert index.daemonsets is not None
        subject = pod(nodeSelector={"pool": "new"})
        own = index.daemonsets["kube-system/everywhere"]
        assert new_node_share(subject, index) == (Decimal("0.4"), Decimal(400 * 2**20), 2)
        assert new_node_share(subject, index, own) == (Decimal("0.1"), Decimal(200 * 2**20), 1)
