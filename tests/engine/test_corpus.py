"""Every real-world review in ../shared/corpus gets a valid, applicable, idempotent patch."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import kubernetes_validate
import pytest

from tests.shared import CORPUS, corpus_params, needs_shared, review_files
from webhook.config.policies import bundled_policies
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.inputs import decision_inputs
from webhook.core.model.pod import serving_port

REVIEWS = review_files()
DEFAULT = bundled_policies().policies["default"]
LATEST = kubernetes_validate.latest_version()


@needs_shared
def test_the_corpus_is_there() -> None:
    assert len(REVIEWS) == 132, f"expected the 132 shared reviews under {CORPUS}"


def _validates_on(pod: dict[str, Any], version: str) -> bool:
    try:
        kubernetes_validate.validate(pod, version, strict=True)
    except kubernetes_validate.ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    "facts", [ClusterFacts(), ClusterFacts(server_version=(1, 29))], ids=["unknown", "1.29"]
)
@pytest.mark.parametrize("path", corpus_params(REVIEWS, ids=lambda path: path.stem))
def test_a_corpus_review_gets_a_valid_idempotent_patch(path: Path, facts: ClusterFacts) -> None:
    pod = json.loads(path.read_text())["request"]["object"]
    decision = tailor(pod, policy=DEFAULT, profiles={}, facts=facts)
    result = jsonpatch.apply_patch(copy.deepcopy(pod), copy.deepcopy(list(decision.ops)))
    kubernetes_validate.validate(result, LATEST, strict=True)
    if _validates_on(pod, "1.30"):
        kubernetes_validate.validate(result, "1.30", strict=True)
    assert tailor(result, policy=DEFAULT, profiles={}, facts=facts).ops == ()
    assert tailor(decision_inputs(pod), policy=DEFAULT, profiles={}, facts=facts) == decision
    long_running = result["spec"].get("restartPolicy") == "Always"
    # A DaemonSet's Pod is a node agent: no probes or preStop until a Service selects it (none does here).
    node_agent = any(ref.get("kind") == "DaemonSet" for ref in pod["metadata"].get("ownerReferences") or ())
    for body in result["spec"]["containers"]:
        requests = (body.get("resources") or {}).get("requests") or {}
        pod_level = (result["spec"].get("resources") or {}).get("requests") or {}
        assert {"cpu", "memory"} <= set(requests) | set(pod_level), body["name"]
        if long_running and serving_port(body) is not None and not node_agent:
            assert body.get("readinessProbe"), body["name"]
            assert (body.get("lifecycle") or {}).get("preStop"), body["name"]
