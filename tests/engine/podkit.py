"""Small builders for Pods shaped like the API server sends them (already defaulted)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch

from webhook.config.policies import bundled_policies, load_policy_text
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.decision import Decision
from webhook.core.model.profile import WorkloadProfiles
from webhook.core.policy.policies import Policy

DEFAULT = bundled_policies().policies["default"]


def policy(yaml_text: str = "", name: str = "custom") -> Policy:
    """The bundled default with `yaml_text` (a partial policy body) merged over it."""
    if not yaml_text.strip():
        return DEFAULT
    body = "\n".join("    " + line for line in yaml_text.strip().splitlines())
    return load_policy_text(f"policies:\n  {name}:\n{body}\n").policies[name]


# Limits derived from the policy's own (guessed) requests too, as before issue 16: for the tests of limit
# arithmetic (ratios, LimitRange bounds), which need a limit to exist.
GUESSED_LIMITS = policy(
    "resources:\n  cpu: {limitWithoutHistory: true}\n  memory: {limitWithoutHistory: true}",
    name="guessed-limits",
)


def container(
    name: str = "app",
    *,
    ports: Sequence[int | Mapping[str, Any]] = (8080,),
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "image": f"example/{name}:1.0",
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "resources": {},
    }
    if ports:
        body["ports"] = [
            {"containerPort": port, "protocol": "TCP"} if isinstance(port, int) else dict(port)
            for port in ports
        ]
    if requests:
        body["resources"]["requests"] = dict(requests)
    if limits:
        body["resources"]["limits"] = dict(limits)
    body.update(fields)
    return body


def pod(
    *containers: dict[str, Any],
    init: Sequence[dict[str, Any]] = (),
    restart: str = "Always",
    grace: int | None = 30,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner: tuple[str, str] | None = ("ReplicaSet", "web-7d4b9c8f6d"),
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"generateName": "web-7d4b9c8f6d-", "namespace": "shop"}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": "u-1", "controller": True}
        ]
    body: dict[str, Any] = {
        "containers": list(containers or [container()]),
        "restartPolicy": restart,
        "dnsPolicy": "ClusterFirst",
        **spec,
    }
    if init:
        body["initContainers"] = list(init)
    if grace is not None:
        body["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}


def run(
    subject: Mapping[str, Any],
    *,
    using: Policy = DEFAULT,
    profiles: WorkloadProfiles | None = None,
    facts: ClusterFacts | None = None,
) -> tuple[Decision, dict[str, Any]]:
    """Run the engine and apply its patch to a copy; the input is never modified."""
    before = copy.deepcopy(subject)
    decision = tailor(subject, policy=using, profiles=profiles or {}, facts=facts or ClusterFacts())
    assert subject == before, "the engine must not modify its input"
    result = jsonpatch.apply_patch(copy.deepcopy(subject), copy.deepcopy(list(decision.ops)))
    return decision, result


def first(result: Mapping[str, Any], group: str = "containers") -> dict[str, Any]:
    container_body: dict[str, Any] = result["spec"][group][0]
    return container_body
