"""Reading HPAs and VPAs: the API server's defaults for manifests, and what is left out and why."""

from __future__ import annotations

from typing import Any

import pytest

from tests.autoscalers.kit import as_listed, hpa, utilization, vpa
from webhook.core.model.autoscalers import (
    Hpa,
    Ignored,
    ResourceTarget,
    Vpa,
    parse_autoscaler,
    parse_hpa,
    parse_vpa,
)


def manifest_hpa(api_version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, **spec},
    }


class TestHorizontalPodAutoscalers:
    def test_a_listed_hpa_reads_as_its_spec_says(self) -> None:
        found, left_out = parse_hpa(
            as_listed(hpa(metrics=[utilization("cpu", 70), utilization("memory", 60, "app")]))
        )
        assert found == Hpa(
            "web",
            ("Deployment", "web"),
            2,
            10,
            (
                ResourceTarget("cpu", None, "Utilization", utilization=70),
                ResourceTarget("memory", "app", "Utilization", utilization=60),
            ),
        )
        assert left_out == ()

    @pytest.mark.parametrize(
        ("api_version", "spec", "min_replicas", "percent"),
        [
            pytest.param("autoscaling/v2", {"maxReplicas": 5}, 1, 80, id="v2 without metrics: cpu 80 %"),
            pytest.param("autoscaling/v1", {"maxReplicas": 5}, 1, 80, id="v1 default target"),
            pytest.param(
                "autoscaling/v1",
                {"maxReplicas": 5, "minReplicas": 3, "targetCPUUtilizationPercentage": 55},
                3,
                55,
                id="v1 target",
            ),
            pytest.param(
                "autoscaling/v2beta2",
                {"maxReplicas": 5, "metrics": [utilization("cpu", 65)]},
                1,
                65,
                id="v2beta2 reads like v2",
            ),
        ],
    )
    def test_manifests_get_the_api_servers_defaults(
        self, api_version: str, spec: dict[str, Any], min_replicas: int, percent: int
    ) -> None:
        found, _ = parse_hpa(manifest_hpa(api_version, spec))
        assert isinstance(found, Hpa)
        assert found.min_replicas == min_replicas
        assert found.resources == (ResourceTarget("cpu", None, "Utilization", utilization=percent),)

    @pytest.mark.parametrize(
        ("metric", "reason"),
        [
            ({"type": "Resource", "resource": {"name": "ephemeral-storage", "target": {"type": "Utilization",
              "averageUtilization": 50}}}, "Resource metric on 'ephemeral-storage'"),
            ({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Value", "value": "1"}}},
             "cpu target type 'Value'"),
            ({"type": "ContainerResource", "containerResource": {"name": "cpu", "target": {
              "type": "Utilization", "averageUtilization": 50}}},
             "ContainerResource metric without a container"),
            ({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue",
              "averageValue": "lots"}}}, "cpu AverageValue target without a readable averageValue"),
            ({"type": "Quantum"}, "metric type 'Quantum' is not known"),
        ],
    )  # fmt: skip
    def test_a_metric_pod_tailor_cannot_read_is_left_out_with_its_reason(
        self, metric: dict[str, Any], reason: str
    ) -> None:
        found, left_out = parse_hpa(hpa(metrics=[metric, utilization("cpu", 70)]))
        assert isinstance(found, Hpa)
        assert found.resources == (ResourceTarget("cpu", None, "Utilization", utilization=70),)
        assert left_out == (f"hpa web: {reason}",)

    def test_v2beta1_is_not_read(self) -> None:
        found, _ = parse_hpa(manifest_hpa("autoscaling/v2beta1", {"maxReplicas": 5}))
        assert isinstance(found, Ignored)
        assert "v2beta1" in found.reason


class TestVerticalPodAutoscalers:
    def test_defaults_auto_mode_and_both_resources(self) -> None:
        found, _ = parse_vpa(vpa(mode=None))
        assert isinstance(found, Vpa)
        assert found.mode == "Auto"
        assert found.controls("app") == {"cpu", "memory"}

    def test_an_unknown_mode_is_ignored_and_off_controls_nothing(self) -> None:
        unknown, _ = parse_vpa(vpa(mode="Sometimes"))
        assert isinstance(unknown, Ignored)
        off, _ = parse_vpa(vpa(mode="Off"))
        assert isinstance(off, Vpa)
        assert off.controls("app") == frozenset()

    def test_a_container_policy_that_is_not_an_object_is_left_out(self) -> None:
        policies: list[Any] = ["app", {"containerName": "*", "controlledResources": ["memory"]}]
        found, left_out = parse_vpa(vpa(policies=policies))
        assert isinstance(found, Vpa)
        assert found.controls("app") == {"memory"}
        assert left_out == ("vpa web: a containerPolicies entry is not an object",)

    def test_either_kind_is_told_apart_and_anything_else_is_not_an_autoscaler(self) -> None:
        assert isinstance(parse_autoscaler(as_listed(hpa()))[0], Hpa)  # list items of HPAs carry no kind
        assert isinstance(parse_autoscaler(vpa())[0], Vpa)
        assert isinstance(parse_autoscaler({"kind": "ScaledObject"})[0], Ignored)
