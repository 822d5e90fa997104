"""The headroom check: an HPA that cannot hold its target at the workload's observed peak is named."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.autoscalers.kit import MIB, average_value, facts, hpa, recommendation, utilization
from tests.engine.podkit import container, pod, run
from webhook.core.model.pod import EXCLUDE_CONTAINERS_ANNOTATION
from webhook.core.model.profile import UsageTotals


def peak(cpu: str | None = None, memory: int | None = None) -> UsageTotals:
    return UsageTotals(
        cpu=None if cpu is None else Decimal(cpu), memory=None if memory is None else Decimal(memory)
    )


def warnings_for(subject: dict[str, Any], *objects: dict[str, Any], **profiles: Any) -> list[str]:
    decision, _ = run(subject, profiles=profiles, facts=facts(*objects))
    return [w for w in decision.warnings if w.startswith("hpa ")]


class TestSaturation:
    def test_the_issue_example_word_for_word(self) -> None:
        found = warnings_for(
            pod(container(requests={"cpu": "500m"})),
            hpa(metrics=[utilization("cpu", 70)], max_replicas=10),
            app=recommendation(totals=peak(cpu="4.2")),
        )
        assert found == [
            "hpa web: at maxReplicas 10 x 500m x 70 % = 3.5 cores < observed peak 4.2 cores; it will saturate"
        ]

    @pytest.mark.parametrize(
        ("metric", "peak_total", "expected"),
        [
            pytest.param(utilization("cpu", 70), peak(cpu="3.4"), None, id="room to spare"),
            pytest.param(
                average_value("cpu", "400m"),
                peak(cpu="4.2"),
                "hpa web: at maxReplicas 10 x 400m = 4 cores < observed peak 4.2 cores; it will saturate",
                id="AverageValue",
            ),
            pytest.param(
                utilization("memory", 80),
                peak(memory=3 * 2**30),
                "hpa web: at maxReplicas 10 x 256Mi x 80 % = 2Gi < observed peak 3Gi; it will saturate",
                id="memory, the policy request injected",
            ),
        ],
    )
    def test_capacity_at_max_replicas_against_the_observed_peak(
        self, metric: dict[str, Any], peak_total: UsageTotals, expected: str | None
    ) -> None:
        found = warnings_for(
            pod(container(requests={"cpu": "500m"})),
            hpa(metrics=[metric]),
            app=recommendation(memory=200 * MIB, totals=peak_total),
        )
        assert found == ([expected] if expected else [])

    def test_requests_and_peaks_of_every_counted_container_add_up(self) -> None:
        two = pod(
            container("app", requests={"cpu": "400m"}), container("proxy", ports=(), requests={"cpu": "100m"})
        )
        found = warnings_for(
            two,
            hpa(metrics=[utilization("cpu", 80)], max_replicas=4),
            app=recommendation(totals=peak(cpu="1.5")),
            proxy=recommendation(totals=peak(cpu="0.2")),
        )
        assert found == [
            "hpa web: at maxReplicas 4 x 500m x 80 % = 1.6 cores < observed peak 1.7 cores; it will saturate"
        ]

    def test_a_container_resource_metric_counts_its_container_only(self) -> None:
        two = pod(
            container("app", requests={"cpu": "400m"}), container("proxy", ports=(), requests={"cpu": "100m"})
        )
        found = warnings_for(
            two,
            hpa(metrics=[utilization("cpu", 80, container="app")], max_replicas=4),
            app=recommendation(totals=peak(cpu="1.2")),
            proxy=recommendation(totals=peak(cpu="5")),
        )
        assert found == []  # 4 x 400m x 80 % = 1.28 cores >= 1.2; the proxy's 5 cores do not count

    def test_min_equal_to_max_and_thin_history_say_nothing(self) -> None:
        subject = pod(container(requests={"cpu": "500m"}))
        fixed = hpa(metrics=[utilization("cpu", 70)], min_replicas=10, max_replicas=10)
        assert warnings_for(subject, fixed, app=recommendation(totals=peak(cpu="9"))) == []
        assert warnings_for(subject, hpa(), app=recommendation(confidence=0.2, totals=peak(cpu="9"))) == []


class TestAMissingRequest:
    def test_a_counted_container_left_without_a_request_is_named(self) -> None:
        excluded = pod(
            container("app"),
            container("proxy", ports=()),
            annotations={EXCLUDE_CONTAINERS_ANNOTATION: "proxy"},
        )
        assert warnings_for(excluded, hpa()) == [
            "hpa web scales on cpu utilization but proxy has no cpu request: it cannot scale"
        ]

    def test_pod_tailor_gives_every_counted_container_the_request_the_hpa_needs(self) -> None:
        assert warnings_for(pod(container("app"), container("proxy", ports=())), hpa()) == []
