"""The QoS class as GetPodQOS computes it, asked of `qos_class` directly: the class drives the boost and the
in-place rules, so each rule below is one row, and each row's id names the mutant of core/model/qos.py it
kills (found by `bench/mutation.py --only webhook/core/model/qos.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.podkit import container, pod
from webhook.core.model.decision import Injection
from webhook.core.model.qos import qos_class

FULL = {"cpu": "1", "memory": "1Gi"}


def injection(field: str, value: str, target: str = "app") -> Injection:
    return Injection(target, field, value, "test")


class TestTheClassOfAPod:
    @pytest.mark.parametrize(
        ("subject", "injections", "expected"),
        [
            pytest.param(pod(container()), (), "BestEffort",
                         id="nothing anywhere is BestEffort (kills any_value starting True)"),
            pytest.param(pod(container(requests={"memory": "1Gi"})), (), "Burstable",
                         id="a memory request alone counts (kills `break` for `continue` on a missing cpu)"),
            pytest.param(pod(container(requests={"cpu": "250m"})), (), "Burstable",
                         id="a request without a limit counts (kills `and` for `or` in any_value)"),
            pytest.param(pod(container(requests={"cpu": "0", "memory": "0"}, limits={"cpu": "1"})), (),
                         "Burstable",
                         id="a limit whose requests are explicit zeros counts (kills dropping the limits from"
                            " any_value)"),
            pytest.param(pod(container(requests={"cpu": "500m", "memory": "64Mi"},
                                       limits={"cpu": "500m", "memory": "64Mi"})), (), "Guaranteed",
                         id="half a CPU equal to its limit is Guaranteed (kills `> 1` for `> 0`)"),
            pytest.param(pod(container(requests={"cpu": "a lot", "memory": "1Gi"})), (), "Burstable",
                         id="an unreadable cpu does not hide the memory (kills `break` for `continue` on a"
                            " QuantityError)"),
            pytest.param(pod(container(limits=FULL)), (), "Guaranteed",
                         id="limits alone are Guaranteed: the API server sets the requests to them"),
            pytest.param(pod(container(limits=FULL), container("side")), (), "Burstable",
                         id="one container without limits makes the Pod Burstable"),
            pytest.param(pod(container(limits=FULL), init=[container("setup", ports=())]), (), "Burstable",
                         id="init containers count"),
        ],
    )
    def test_containers_decide_without_pod_level_resources(
        self, subject: dict[str, Any], injections: tuple[Injection, ...], expected: str
    ) -> None:
        assert qos_class(subject, injections) == expected

    @pytest.mark.parametrize(
        ("resources", "expected"),
        [
            pytest.param({"requests": {"cpu": "1"}}, "Burstable",
                         id="pod-level requests alone (kills `and` for `or`, and their requests not read)"),
            pytest.param({"limits": FULL}, "Guaranteed",
                         id="pod-level limits alone (kills their limits not read)"),
            pytest.param({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": FULL}, "Burstable",
                         id="pod-level requests below the limits"),
            pytest.param({"requests": {"cpu": "0"}}, "BestEffort",
                         id="pod-level zeros leave the containers to decide"),
        ],
    )
    def test_pod_level_resources_decide_when_set(self, resources: dict[str, Any], expected: str) -> None:
        """Containers that say nothing: whatever the class, it came from `spec.resources`."""
        assert qos_class(pod(container(), resources=resources), ()) == expected

    @pytest.mark.parametrize(
        ("injections", "expected"),
        [
            pytest.param((injection("requests.cpu", "100m"),), "Burstable",
                         id="an injected request counts (kills injections not read)"),
            pytest.param((injection("limits.cpu", "1"), injection("limits.memory", "1Gi")), "Guaranteed",
                         id="injected limits count (kills the limits section's name mutated)"),
            pytest.param((injection("requests.ephemeral-storage", "1Gi"), injection("readinessProbe", "x")),
                         "BestEffort",
                         id="only cpu and memory count (kills `or` for `and` on section and name)"),
        ],
    )
    def test_injections_count_as_if_applied(self, injections: tuple[Injection, ...], expected: str) -> None:
        assert qos_class(pod(container()), injections) == expected

    def test_injected_requests_below_the_existing_limits_are_burstable(self) -> None:
        subject = pod(container(limits=FULL))
        assert qos_class(subject, (injection("requests.cpu", "250m"),)) == "Burstable"
        assert qos_class(subject, ()) == "Guaranteed"
