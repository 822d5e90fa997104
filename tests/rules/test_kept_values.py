"""An author's value outside the policy's bounds is kept, with a warning (issue 26, item 4); a limit
comes only from evidence (item 2). Through the server and the preview (`both`)."""

from __future__ import annotations

import pytest

from tests.rules.kit import both, box, svc, workload
from tests.server.conftest import RunningServer


@pytest.mark.parametrize(
    ("requests", "warning"),
    [
        pytest.param({"memory": "1Mi"},
                     "pod-tailor: app: memory request 1Mi is below the policy min 16Mi; kept",
                     id="memory below the minimum"),
        pytest.param({"cpu": "1m"}, "pod-tailor: app: cpu request 1m is below the policy min 10m; kept",
                     id="cpu below the minimum"),
        pytest.param({"cpu": "32"}, "pod-tailor: app: cpu request 32 is above the policy max 16; kept",
                     id="cpu above the maximum"),
    ],
)  # fmt: skip
def test_a_persons_request_outside_the_bounds_is_kept_with_a_warning(
    server: RunningServer, requests: dict[str, str], warning: str
) -> None:
    decided = both(server, workload("Deployment", box(resources={"requests": requests})), svc())
    assert decided.container("app")["resources"]["requests"].items() >= requests.items()
    assert warning in decided.warnings


def test_a_request_within_the_bounds_says_nothing(server: RunningServer) -> None:
    within = {"requests": {"cpu": "200m", "memory": "90Mi"}}
    decided = both(server, workload("Deployment", box(resources=within)))
    assert not [w for w in decided.warnings if "policy min" in w or "policy max" in w]


@pytest.mark.parametrize(
    "resources",
    [
        pytest.param({"requests": {"memory": "90Mi"}}, id="an ingress controller's 90Mi request"),
        pytest.param({"requests": {"memory": "0", "cpu": "0"}}, id="a zero request"),
        pytest.param({}, id="nothing set"),
    ],
)
def test_no_limit_is_added_without_history(server: RunningServer, resources: dict[str, object]) -> None:
    decided = both(server, workload("Deployment", box(resources=resources)), svc())
    assert "limits" not in decided.container("app")["resources"]
