"""The preview and the report take Nodes and ResourceQuotas from their input files and answer as the
server does with the same objects watched."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.fit.kit import node, quota, taint
from webhook.admission import admit, default_engine
from webhook.cluster.resources import daemonset_essentials, node_essentials, quota_essentials
from webhook.cluster.snapshot import build_snapshot
from webhook.config.policies import load_policy_text
from webhook.config.settings import Settings
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.preview import run_preview

SAMPLE = Path(__file__).resolve().parents[2] / "webhook/data/sample-review.json"
POLICIES = load_policy_text("policies:\n  default:\n    resources:\n      cpu: {request: '3'}\n")
NODES = [node("small-1", cpu="1930m"), node("gpu-1", cpu="7910m", taints=[taint("dedicated", "gpu")])]

CASES = {
    "capped by the largest node": ({}, NODES, []),
    "no node matches the selector": ({"nodeSelector": {"pool": "arm"}}, NODES, []),
    "tolerated taint": ({"tolerations": [{"key": "dedicated", "operator": "Exists"}]}, NODES, []),
    "quota near full, limits required": (
        {}, NODES, [quota(hard={"requests.cpu": "4", "limits.memory": "8Gi"}, used={"requests.cpu": "3800m"},
                          namespace="default")],
    ),
    "quota only": ({}, [], [quota(hard={"cpu": "2"}, used={"cpu": "500m"}, namespace="default")]),
}  # fmt: skip


def _review(spec_changes: dict[str, Any]) -> dict[str, Any]:
    review: dict[str, Any] = json.loads(SAMPLE.read_text())
    review["request"]["object"]["spec"].update(spec_changes)
    return review


def _lines(pod: dict[str, Any]) -> set[str]:
    text = str(((pod.get("metadata") or {}).get("annotations") or {}).get("pod-tailor.io/injected", ""))
    return set(text.splitlines()[1:])


def server_says(
    review: dict[str, Any], nodes: list[dict[str, Any]], quotas: list[dict[str, Any]],
    *, daemonsets: list[dict[str, Any]] | None = None,
) -> tuple[set[str], list[str]]:
    objects: dict[str, list[dict[str, Any]]] = {"resourcequotas": [quota_essentials(q) for q in quotas]}
    if nodes:
        objects["nodes"] = [node_essentials(n) for n in nodes]
    if daemonsets is not None:
        objects["daemonsets"] = [daemonset_essentials(d) for d in daemonsets]
    cluster = build_snapshot(policies=POLICIES, settings=Settings(), objects=objects, server_version=(1, 33),
                             taken_at=0.0, source="test")  # fmt: skip
    answer = json.loads(admit(json.dumps(review).encode(), cluster=cluster, profiles=ProfileSnapshot(),
                              engine=default_engine()).body)["response"]  # fmt: skip
    ops = json.loads(base64.b64decode(answer["patch"])) if "patch" in answer else []
    pod = jsonpatch.apply_patch(copy.deepcopy(review["request"]["object"]), ops)
    return _lines(pod), answer.get("warnings", [])


@pytest.mark.parametrize(("spec", "nodes", "quotas"), CASES.values(), ids=CASES.keys())
def test_the_preview_of_a_pod_with_nodes_and_quotas_in_the_input_answers_as_the_server(
    spec: dict[str, Any], nodes: list[dict[str, Any]], quotas: list[dict[str, Any]]
) -> None:
    review = _review(spec)
    listed = {"apiVersion": "v1", "kind": "List", "items": nodes}  # as `kubectl get nodes -o yaml` writes
    text = yaml.safe_dump_all([review["request"]["object"], listed, *quotas])
    (found,) = run_preview(text, cluster=ClusterSnapshot(policies=POLICIES, server_version=(1, 33)),
                           profiles=ProfileSnapshot(), namespace="default")  # fmt: skip
    lines, warnings = server_says(review, nodes, quotas)
    assert lines
    assert _lines(found.document) == lines
    said = [w if w.startswith("pod-tailor") else f"pod-tailor: {w}" for w in found.decision.warnings]
    assert said == warnings
    assert any("capped" in line or "required by ResourceQuota" in line for line in lines) is bool(
        spec.get("nodeSelector") is None and "tolerations" not in spec
    )
