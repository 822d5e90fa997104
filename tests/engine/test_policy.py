"""Policy files: merged over the bundled default, and errors that name the field."""

from __future__ import annotations

import pytest

from webhook.config.policies import bundled_policies, load_policy_text
from webhook.core.policy.policies import LimitMode
from webhook.core.policy.reader import PolicyError


def test_the_bundled_policy_is_valid_and_documented_defaults_hold() -> None:
    default = bundled_policies().policies["default"]
    assert default.resources["cpu"].limit is LimitMode.NONE
    assert default.resources["memory"].limit is LimitMode.RATIO
    assert not default.liveness.enabled
    assert default.pre_stop_seconds == 5
    assert default.drain_seconds == 30


def test_a_named_policy_only_lists_what_it_changes() -> None:
    policies = load_policy_text("policies:\n  batch:\n    resources:\n      cpu: {request: 500m}\n")
    assert set(policies.policies) == {"default", "batch"}
    assert str(policies.policies["batch"].resources["cpu"].request) == "0.500"
    assert policies.policies["batch"].resources["memory"] == policies.policies["default"].resources["memory"]


def test_a_files_own_default_is_the_base_for_its_other_policies() -> None:
    policies = load_policy_text(
        "policies:\n  default: {drainSeconds: 60}\n  web: {preStop: {sleepSeconds: 10}}\n"
    )
    assert policies.policies["web"].drain_seconds == 60


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "policies: {x: {resources: {cpu: {limit: bogus}}}}",
            "policies.x.resources.cpu.limit: must be one of none",
        ),
        (
            "policies: {x: {resources: {cpu: {request: lots}}}}",
            "policies.x.resources.cpu.request: not a Kubernetes",
        ),
        (
            "policies: {x: {resources: {cpu: {request: 100, max: 1}}}}",
            "policies.x.resources.cpu: need min <= request",
        ),
        (
            "policies: {x: {probes: {readiness: {periodSeconds: 0}}}}",
            "policies.x.probes.readiness.periodSeconds",
        ),
        (
            "policies: {x: {probes: {httpPath: healthz}}}",
            "policies.x.probes.httpPath: must be null or an absolute",
        ),
        ("policies: {x: {features: {probes: maybe}}}", "policies.x.features.probes: must be true or false"),
        ("policies: {x: {resources: {gpu: {}}}}", "policies.x.resources: unknown resource 'gpu'"),
        ("policies: {x: {preStop: {whenVersionUnknown: later}}}", "policies.x.preStop.whenVersionUnknown"),
        ("policies: {}", "at least one policy"),
        ("policies: [a]", "policies: must be a mapping"),
        ("- just a list", "policy file: must be a mapping"),
        ("policies: {x: {drainSeconds: -1}}", "policy file:1:30: policies.x.drainSeconds"),
        ("policies: {x: {drainSeconds: -1}}", "policies.x.drainSeconds: must be an integer"),
        ("a: [", "policy file:1:5: expected the node content, but found '<stream end>'"),
        ("policies: {x: {resources: {cpu: {reqest: 1}}}}", "policies.x.resources.cpu.reqest: unknown field"),
        ("policies: {x: {probes: {startup: {successThreshold: 2}}}}", "startup.successThreshold: unknown"),
        ("policies: {x: {drain: 5}}", "policies.x.drain: unknown field"),
    ],
)
def test_an_invalid_policy_file_gets_an_error_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=None) as caught:
        load_policy_text(text)
    assert message in str(caught.value)
