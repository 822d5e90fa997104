"""Decisions a careful operator would make (issue 16): no limit from a guess, the QoS class said, and
amounts nobody could mean left alone."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engine.podkit import GUESSED_LIMITS, container, first, pod, policy, run
from tests.engine.test_resources import recommendation
from webhook.core.model.pod import INJECTED_ANNOTATION, NO_LIMIT_MARK, guessed_requests


def header(result: dict[str, Any]) -> str:
    text: str = result["metadata"]["annotations"][INJECTED_ANNOTATION]
    return text.splitlines()[0]


class TestAGuessedRequestGetsNoLimit:
    @pytest.mark.parametrize(
        ("requests", "profiles", "expected_limits"),
        [
            pytest.param(None, {}, {}, id="policy guess for both: no limit at all"),
            pytest.param({"memory": "1Gi"}, {}, {}, id="a person's memory request alone: no limit"),
            pytest.param({"memory": "0"}, {}, {}, id="a person's zero request: never a zero limit"),
            pytest.param(
                {"memory": "0"}, {"app": recommendation()}, {"memory": "600Mi"},
                id="a person's zero request with history: the limit from history's value",
            ),
            pytest.param(
                {"memory": "1Gi"}, {"app": recommendation()}, {"memory": "2Gi"},
                id="a person's request with history: the limit from the larger",
            ),
            pytest.param(
                None,
                {"app": recommendation()},
                {"memory": "600Mi"},
                id="history: limit from the measured request",
            ),
        ],
    )
    def test_a_limit_is_derived_only_from_a_request_someone_measured_or_chose(
        self, requests: dict[str, str] | None, profiles: dict[str, Any], expected_limits: dict[str, str]
    ) -> None:
        _, result = run(pod(container(requests=requests)), profiles=profiles)
        assert first(result)["resources"].get("limits", {}) == expected_limits

    def test_the_explanation_says_why_the_limit_was_left_out(self) -> None:
        _, result = run(pod(container()))
        text = result["metadata"]["annotations"][INJECTED_ANNOTATION]
        assert f'requests.memory=256Mi (from policy "default"; {NO_LIMIT_MARK})' in text

    def test_limit_without_history_true_brings_the_derived_limit_back(self) -> None:
        _, result = run(pod(container()), using=GUESSED_LIMITS)
        assert first(result)["resources"]["limits"] == {"memory": "512Mi"}

    def test_a_limit_equal_to_the_request_is_not_derived_from_a_guess_either(self) -> None:
        custom = policy("resources:\n  cpu: {limit: equal}\n  memory: {limit: equal}")
        _, result = run(pod(container()), using=custom)
        assert "limits" not in first(result)["resources"]

    def test_a_reinvocation_does_not_take_its_own_guess_for_a_persons_request(self) -> None:
        _, once = run(pod(container()))
        assert guessed_requests(once) == {("app", "memory")}  # cpu: the policy sets no cpu limit anyway
        _, again = run(once)
        assert again == once

    def test_a_persons_request_in_another_container_gets_no_limit_either(self) -> None:
        subject = pod(container("app"), container("sidecar", ports=(), requests={"memory": "64Mi"}))
        _, result = run(subject)
        sidecar = result["spec"]["containers"][1]
        assert "limits" not in sidecar["resources"]
        assert "limits" not in first(result)["resources"]

    def test_limit_without_history_true_derives_a_limit_from_a_persons_request(self) -> None:
        _, result = run(pod(container(requests={"memory": "64Mi"})), using=GUESSED_LIMITS)
        assert first(result)["resources"]["limits"] == {"memory": "128Mi"}

    @pytest.mark.parametrize("using", [None, GUESSED_LIMITS], ids=["bundled", "limitWithoutHistory"])
    def test_a_zero_request_never_leads_to_a_zero_limit(self, using: Any) -> None:
        _, result = run(pod(container(requests={"cpu": "0", "memory": "0"})),
                        **({"using": using} if using else {}))  # fmt: skip
        for value in first(result)["resources"].get("limits", {}).values():
            assert value not in ("0", 0)


class TestTheQosClassIsSaid:
    @pytest.mark.parametrize(
        ("subject", "using", "expected"),
        [
            pytest.param(pod(container()), None, "Burstable", id="guessed requests, no limits"),
            pytest.param(
                pod(container(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"})),
                None,
                "Guaranteed",
                id="a person's equal requests and limits",
            ),
            pytest.param(
                pod(container()),
                policy(
                    "resources:\n  cpu: {limit: equal, limitWithoutHistory: true}\n"
                    "  memory: {limit: equal, limitWithoutHistory: true}"
                ),
                "Guaranteed",
                id="policy limit = request for both resources",
            ),
            pytest.param(
                pod(container()),
                policy("resources:\n  memory: {limit: equal, limitWithoutHistory: true}"),
                "Burstable",
                id="limit = request for memory only is not Guaranteed",
            ),
            pytest.param(
                pod(container(requests={"cpu": "500m", "memory": "256Mi"},
                              limits={"cpu": "1", "memory": "512Mi"})),
                None,
                "Burstable",
                id="requests below their limits are Burstable (kills `>` for `!=` in qos._class)",
            ),
            pytest.param(
                pod(container(requests={"cpu": "0", "memory": "0"})),
                None,
                "BestEffort",
                id="zero quantities count for nothing (kills `>=` for `>` in qos._positive)",
            ),
            pytest.param(
                pod(container(requests={"cpu": "0", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"})),
                None,
                "Burstable",
                id="an explicit zero request is not its limit (kills treating zero as missing)",
            ),
            pytest.param(
                pod(
                    container(requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}),
                    init=[container("init", ports=())],
                ),
                None,
                "Burstable",
                id="an init container without limits makes the Pod Burstable",
            ),
            pytest.param(
                pod(
                    container(),
                    resources={
                        "requests": {"cpu": "1", "memory": "1Gi"},
                        "limits": {"cpu": "1", "memory": "1Gi"},
                    },
                ),
                None,
                "Guaranteed",
                id="pod-level resources decide",
            ),
        ],
    )
    def test_the_header_names_the_class_the_pod_will_have(
        self, subject: dict[str, Any], using: Any, expected: str
    ) -> None:
        """The class GetPodQOS gives the patched Pod.

        Kills (each row's id names its mutant): `>` for `!=` when comparing a request with its limit, `>=`
        for `>` when skipping zero quantities, and an explicit zero request read as a missing one.
        """
        _, result = run(subject, **({"using": using} if using is not None else {}))
        assert header(result).endswith(f" qos={expected}")

    def test_the_class_is_not_claimed_per_resource(self) -> None:
        custom = policy("resources:\n  memory: {limit: equal, limitWithoutHistory: true}")
        _, result = run(pod(container()), using=custom)
        text = result["metadata"]["annotations"][INJECTED_ANNOTATION]
        assert "limits.memory=256Mi (= request" in text
        assert "(Guaranteed)" not in text


class TestProbesGoToTheServingPort:
    @pytest.mark.parametrize(
        ("ports", "expected"),
        [
            pytest.param([{"name": "metrics", "containerPort": 9090}, 8080], 8080, id="metrics first"),
            pytest.param(
                [{"name": "http-metrics", "containerPort": 9100}, {"name": "web", "containerPort": 3000}],
                3000,
                id="http-metrics is not http",
            ),
            pytest.param(
                [
                    {"name": "admin", "containerPort": 9901},
                    {"name": "debug-pprof", "containerPort": 6060},
                    8443,
                ],
                8443,
                id="admin and pprof",
            ),
            pytest.param(
                [{"name": "healthz", "containerPort": 8081}, {"name": "http", "containerPort": 8080}],
                8080,
                id="health port",
            ),
            pytest.param(
                [{"name": "metrics", "containerPort": 9090}], 9090, id="the only port is still probed"
            ),
            pytest.param([8080, 9090], 8080, id="unnamed ports: the first"),
        ],
    )
    def test_a_port_named_like_metrics_admin_debug_or_health_is_passed_over(
        self, ports: list[Any], expected: int
    ) -> None:
        _, result = run(pod(container(ports=ports)))
        assert first(result)["readinessProbe"]["tcpSocket"] == {"port": expected}

    def test_the_explanation_names_the_port_passed_over(self) -> None:
        _, result = run(pod(container(ports=[{"name": "metrics", "containerPort": 9090}, 8080])))
        text = result["metadata"]["annotations"][INJECTED_ANNOTATION]
        assert "tcp :8080" in text
        assert "(not metrics :9090)" in text


class TestAmountsNobodyCouldMeanAreLeftAlone:
    @pytest.mark.parametrize("raw", ["-1", "-500m", "-1Gi"])
    def test_a_negative_request_gets_no_limit_and_a_warning(self, raw: str) -> None:
        decision, result = run(pod(container(requests={"cpu": raw, "memory": raw})))
        resources = first(result)["resources"]
        assert resources["requests"] == {"cpu": raw, "memory": raw}
        assert "limits" not in resources
        assert any(raw in warning for warning in decision.warnings)

    def test_a_negative_limit_is_not_turned_into_a_request(self) -> None:
        decision, result = run(pod(container(limits={"memory": "-1Gi"})))
        assert first(result)["resources"]["limits"] == {"memory": "-1Gi"}
        assert "memory" not in first(result)["resources"].get("requests", {})
        assert decision.warnings


@settings(max_examples=60, deadline=None)
@given(
    cpu=st.one_of(st.none(), st.decimals(min_value=Decimal("0.001"), max_value=Decimal(8), places=3)),
    memory_mib=st.one_of(st.none(), st.integers(min_value=16, max_value=8192)),
)
def test_a_limit_is_never_added_beside_a_request_pod_tailor_guessed(
    cpu: Decimal | None, memory_mib: int | None
) -> None:
    requests = {
        **({"cpu": str(cpu)} if cpu is not None else {}),
        **({"memory": f"{memory_mib}Mi"} if memory_mib is not None else {}),
    }
    _, result = run(pod(container(requests=requests or None)))
    limits = first(result)["resources"].get("limits", {})
    for resource in ("cpu", "memory"):
        if resource not in requests:
            assert resource not in limits
    assert run(result)[1] == result, "a second pass changes nothing"
