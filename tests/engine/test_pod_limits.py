"""LimitRanges of type Pod: what the engine adds never tips a fitting Pod over one (LimitRanger rejects
the whole Pod after the webhooks), and the Pod totals are summed as Kubernetes sums them."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.engine.podkit import GUESSED_LIMITS, container, pod, run
from webhook.core.facts import ClusterFacts
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.sizing.podlimits import breaches, pod_total

MiB = 2**20
FULL = {"memory": "768Mi"}  # a container the person sized: request = limit = 768Mi


def resources_of(result: dict[str, object], name: str) -> dict[str, dict[str, str]]:
    spec = result["spec"]
    assert isinstance(spec, dict)
    (found,) = [c for c in spec["containers"] if c["name"] == name]
    resources: dict[str, dict[str, str]] = found["resources"]
    return resources


class TestWhatTheEngineWithholds:
    @pytest.mark.parametrize(
        ("item", "sidecar_requests", "sidecar_limits", "warning"),
        [
            pytest.param(
                LimitRangeItem("Pod", max={"memory": Decimal(1024 * MiB)}),
                {"cpu": "100m", "memory": "256Mi"},
                None,
                "memory limits not set",
                id="max: the request fits, the limit would not",
            ),
            pytest.param(
                LimitRangeItem("Pod", max={"memory": Decimal(900 * MiB)}),
                {"cpu": "100m"},
                None,
                "memory requests and limits not set",
                id="max: even the request would not fit",
            ),
            pytest.param(
                LimitRangeItem("Pod", max_limit_request_ratio={"memory": Decimal("1.2")}),
                {"cpu": "100m", "memory": "256Mi"},
                None,
                "memory limits not set",
                id="maxLimitRequestRatio",
            ),
            pytest.param(
                LimitRangeItem(
                    "Pod", min={"memory": Decimal(768 * MiB)}, max={"memory": Decimal(1024 * MiB)}
                ),
                {"cpu": "100m", "memory": "256Mi"},
                None,
                "memory limits not set",
                id="min and max: the request is needed for neither, the limit would break max",
            ),
            pytest.param(
                LimitRangeItem("Pod", max={"memory": Decimal(2048 * MiB)}),
                {"cpu": "100m", "memory": "256Mi"},
                {"memory": "512Mi"},
                None,
                id="room enough: everything is set",
            ),
        ],
    )
    def test_values_that_would_break_a_pod_limit_range_are_not_set_and_a_warning_says_so(
        self,
        item: LimitRangeItem,
        sidecar_requests: dict[str, str],
        sidecar_limits: dict[str, str] | None,
        warning: str | None,
    ) -> None:
        subject = pod(container("app", requests=FULL, limits=FULL), container("proxy", ports=()))
        decision, result = run(subject, using=GUESSED_LIMITS, facts=ClusterFacts(limit_ranges=(item,)))
        assert resources_of(result, "proxy").get("requests") == sidecar_requests
        assert resources_of(result, "proxy").get("limits") == sidecar_limits
        held = [w for w in decision.warnings if "not set" in w]
        assert held == ([] if warning is None else [held[0]])
        if warning is not None:
            assert held[0].startswith(warning)
            assert len(held[0]) < 120
        assert (
            breaches(pod_total(result, "requests", added={}), pod_total(result, "limits", added={}), (item,))
            == {}
        )

    def test_a_pod_that_breaks_the_limit_range_on_its_own_values_still_gets_the_engines(self) -> None:
        item = LimitRangeItem("Pod", max={"memory": Decimal(512 * MiB)})  # app alone is over it
        subject = pod(container("app", requests=FULL, limits=FULL), container("proxy", ports=()))
        decision, result = run(subject, using=GUESSED_LIMITS, facts=ClusterFacts(limit_ranges=(item,)))
        assert resources_of(result, "proxy")["limits"] == {"memory": "512Mi"}
        assert not [w for w in decision.warnings if "not set" in w]

    def test_withholding_is_idempotent(self) -> None:
        item = LimitRangeItem("Pod", max={"memory": Decimal(1024 * MiB)})
        facts = ClusterFacts(limit_ranges=(item,))
        subject = pod(container("app", requests=FULL, limits=FULL), container("proxy", ports=()))
        _, once = run(subject, using=GUESSED_LIMITS, facts=facts)
        assert "limits" not in resources_of(once, "proxy")
        again, _ = run(once, using=GUESSED_LIMITS, facts=facts)
        assert again.ops == ()


class TestPodTotals:
    @pytest.mark.parametrize(
        ("init", "expected"),
        [
            pytest.param([], Decimal(2), id="app containers add up"),
            pytest.param([{"cpu": "3"}], Decimal(3), id="an init container that needs more counts alone"),
            pytest.param([{"cpu": "1", "sidecar": True}], Decimal(3), id="a native sidecar adds up"),
            pytest.param(
                [{"cpu": "1", "sidecar": True}, {"cpu": "2.5"}],
                Decimal("3.5"),
                id="an init container after a sidecar runs beside it",
            ),
        ],
    )
    def test_requests_are_summed_as_kubernetes_sums_them(
        self, init: list[dict[str, object]], expected: Decimal
    ) -> None:
        inits = []
        for i, spec in enumerate(init):
            inits.append(container(f"init{i}", ports=(), requests={"cpu": str(spec["cpu"])}))
            if spec.get("sidecar"):
                inits[-1]["restartPolicy"] = "Always"
        apps = [container(name, requests={"cpu": "1"}) for name in ("a", "b")]
        subject = pod(*apps, init=inits)
        assert pod_total(subject, "requests", added={})["cpu"] == expected

    def test_a_value_the_engine_would_add_fills_a_gap_and_a_resource_nobody_sets_is_absent(self) -> None:
        subject = pod(container("a", requests={"cpu": "1"}), container("b"))
        added = {("requests", "b", "cpu"): Decimal("0.5"), ("limits", "b", "memory"): Decimal(MiB)}
        assert pod_total(subject, "requests", added=added) == {"cpu": Decimal("1.5")}
        assert pod_total(subject, "limits", added={}) == {}

    def test_limits_of_native_sidecars_add_up_and_a_plain_init_container_counts_alone(self) -> None:
        sidecar = container("mesh", ports=(), limits={"memory": "128Mi"}, restartPolicy="Always")
        setup = container("setup", ports=(), limits={"memory": "1Gi"})
        app = container("app", limits={"memory": "256Mi"})
        assert pod_total(pod(app, init=[sidecar]), "limits", added={}) == {"memory": Decimal(384 * MiB)}
        assert pod_total(pod(app, init=[sidecar, setup]), "limits", added={}) == {
            "memory": Decimal(1152 * MiB)
        }


class TestBreaches:
    @pytest.mark.parametrize(
        ("requests", "limits", "item", "breached"),
        [
            pytest.param(
                {"cpu": "1"},
                {"cpu": "2"},
                LimitRangeItem("Pod", max={"cpu": Decimal(2)}),
                False,
                id="max: at the bound fits",
            ),
            pytest.param(
                {"cpu": "1"},
                {},
                LimitRangeItem("Pod", max={"cpu": Decimal(2)}),
                True,
                id="max: no limit at all breaks it",
            ),
            pytest.param(
                {"cpu": "3"},
                {"cpu": "2"},
                LimitRangeItem("Pod", max={"cpu": Decimal(2)}),
                True,
                id="max bounds requests too",
            ),
            pytest.param(
                {},
                {"cpu": "1"},
                LimitRangeItem("Pod", min={"cpu": Decimal("0.5")}),
                True,
                id="min: no request breaks it",
            ),
            pytest.param(
                {"cpu": "1"},
                {"cpu": "0.4"},
                LimitRangeItem("Pod", min={"cpu": Decimal("0.5")}),
                True,
                id="min bounds limits too",
            ),
            pytest.param(
                {"cpu": "1"},
                {"cpu": "1.5"},
                LimitRangeItem("Pod", max_limit_request_ratio={"cpu": Decimal("1.5")}),
                False,
                id="ratio: equal fits",
            ),
            pytest.param(
                {"cpu": "0.0001"},
                {"cpu": "0.0015"},
                LimitRangeItem("Pod", max_limit_request_ratio={"cpu": Decimal(10)}),
                False,
                id="ratio in thousandths rounded up: 1.5m/0.1m is 2m/1m, within 10",
            ),
            pytest.param(
                {"cpu": "0.001"},
                {"cpu": "0.003"},
                LimitRangeItem("Pod", max_limit_request_ratio={"cpu": Decimal(2)}),
                True,
                id="ratio: 3m/1m is over 2",
            ),
            pytest.param(
                {},
                {"cpu": "1"},
                LimitRangeItem("Pod", max_limit_request_ratio={"cpu": Decimal(2)}),
                True,
                id="ratio: no request breaks it",
            ),
        ],
    )
    def test_pod_totals_are_judged_as_limit_ranger_judges_them(
        self, requests: dict[str, str], limits: dict[str, str], item: LimitRangeItem, breached: bool
    ) -> None:
        totals = [{key: Decimal(value) for key, value in section.items()} for section in (requests, limits)]
        assert bool(breaches(totals[0], totals[1], (item,))) is breached
