"""The autoscaler rule per resource: what an HPA on Utilization or a VPA at admission keeps out of history."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest

from tests.autoscalers.kit import (
    MIB,
    average_value,
    external,
    facts,
    hpa,
    keda_hpa,
    recommendation,
    utilization,
    vpa,
)
from tests.engine.podkit import GUESSED_LIMITS, container, pod, policy, run
from webhook.admission.verdict import verdict
from webhook.core.engine import tailor
from webhook.core.model.decision import Basis
from webhook.core.model.namespace import Mode, NamespaceSettings
from webhook.core.model.pod import INJECTED_ANNOTATION
from webhook.core.model.profile import Recommendation

PROFILES = {
    "app": recommendation("0.25", 300 * MIB),
    "proxy": recommendation("0.05", 64 * MIB),
    "setup": recommendation("0.5", 128 * MIB),
    "mesh": recommendation("0.04", 48 * MIB),
}
HISTORY = {"app": {"cpu": "250m", "memory": "300Mi"}, "proxy": {"cpu": "50m", "memory": "64Mi"}}
POLICY = {"cpu": "100m", "memory": "256Mi"}


def requests_of(result: Mapping[str, Any], name: str = "app") -> dict[str, str]:
    for group in ("containers", "initContainers"):
        for body in result["spec"].get(group) or ():
            if body["name"] == name:
                return dict((body.get("resources") or {}).get("requests") or {})
    raise KeyError(name)


def annotation(result: Mapping[str, Any]) -> str:
    return str(result["metadata"]["annotations"][INJECTED_ANNOTATION])


class TestAnHpaOnUtilization:
    @pytest.mark.parametrize(
        ("metrics", "held"),
        [
            pytest.param([utilization("cpu", 70)], {"cpu"}, id="cpu only"),
            pytest.param([utilization("memory", 80)], {"memory"}, id="memory only"),
            pytest.param([utilization("cpu", 70), utilization("memory", 80)], {"cpu", "memory"}, id="both"),
            pytest.param([average_value("cpu", "400m")], set(), id="AverageValue: history stays"),
            pytest.param([external()], set(), id="external only: history stays"),
            pytest.param(
                [
                    {
                        "type": "Pods",
                        "pods": {
                            "metric": {"name": "rps"},
                            "target": {"type": "AverageValue", "averageValue": "10"},
                        },
                    }
                ],
                set(),
                id="Pods metric: history stays",
            ),
            pytest.param(
                [utilization("cpu", 70, container="proxy")], set(), id="ContainerResource of another"
            ),
            pytest.param(
                [utilization("cpu", 70, container="app")], {"cpu"}, id="ContainerResource of this one"
            ),
            pytest.param(
                [{"type": "Quantum", "quantum": {}}, utilization("memory", 60)],
                {"memory"},
                id="an unknown metric type is left out, the others count",
            ),
        ],
    )
    def test_the_resources_it_scales_on_keep_the_policy_request_and_the_others_follow_history(
        self, metrics: list[dict[str, Any]], held: set[str]
    ) -> None:
        _, result = run(pod(container()), profiles=PROFILES, facts=facts(hpa(metrics=metrics)))
        got = requests_of(result)
        for resource in ("cpu", "memory"):
            assert got[resource] == (POLICY if resource in held else HISTORY["app"])[resource], resource
        text = annotation(result)
        for resource in held:
            assert f"hpa web scales on {resource} utilization" in text, text
        if not held:
            assert "hpa" not in text

    def test_the_annotation_names_the_hpa_and_its_target(self) -> None:
        _, result = run(
            pod(container()), profiles=PROFILES, facts=facts(hpa(metrics=[utilization("cpu", 70)]))
        )
        assert (
            'requests.cpu=100m (from policy "default"; hpa web scales on cpu utilization 70 %)'
            in annotation(result)
        )

    def test_a_held_request_is_a_guess_so_no_limit_is_derived_from_it(self) -> None:
        big = {"app": recommendation("0.25", 1700 * MIB)}
        on_memory = facts(hpa(metrics=[utilization("memory", 80)]))
        _, result = run(pod(container()), profiles=big, facts=on_memory)
        resources = result["spec"]["containers"][0]["resources"]
        assert resources["requests"]["memory"] == "256Mi"
        assert "memory" not in resources.get("limits", {})
        assert "no limit without usage history" in annotation(result)

    def test_a_limit_below_what_history_says_the_container_uses_is_not_set(self) -> None:
        big = {"app": recommendation("0.25", 1700 * MIB)}
        on_memory = facts(hpa(metrics=[utilization("memory", 80)]))
        decision, result = run(pod(container()), profiles=big, facts=on_memory, using=GUESSED_LIMITS)
        resources = result["spec"]["containers"][0]["resources"]
        assert resources["requests"]["memory"] == "256Mi"
        assert "memory" not in resources.get("limits", {})
        assert "app: memory limit not set: 512Mi is below the 1700Mi history says it uses (hpa web)" in (
            decision.warnings
        )

    @pytest.mark.parametrize(
        ("profiles", "expected_limit", "warnings"),
        [
            pytest.param({"app": recommendation("0.25", 300 * MIB)}, None,
                         ["app: cpu limit not set: 200m is below the 250m history says it uses (hpa web)"],
                         id="cpu history above the derived limit"),
            pytest.param({"app": recommendation("0.15", 300 * MIB)}, "200m", [],
                         id="cpu history under the derived limit"),
            pytest.param({}, "200m", [], id="no history at all"),
            pytest.param({"app": recommendation("0.2", 300 * MIB)}, "200m", [],
                         id="cpu history equal to the derived limit (kills <= for <)"),
        ],
    )
    def test_a_cpu_limit_beside_a_held_request_is_set_only_at_or_above_what_history_says_it_uses(
        self, profiles: dict[str, Any], expected_limit: str | None, warnings: list[str]
    ) -> None:
        """Kills resources.py's `_need` mutants on the cpu side: cpu not looked up (`"XXcpuXX"`/`"CPU"` in
        the tuple), memory's bytes read for cpu (`and False`, `"XXcpuXX"`/`"CPU"` in the comparison), and
        `and` for `or` (no history: None's cpu read)."""
        cpu_limits = policy("resources:\n  cpu: {limit: ratio, limitRatio: 2, limitWithoutHistory: true}")
        on_cpu = facts(hpa(metrics=[utilization("cpu", 70)]))
        decision, result = run(pod(container()), profiles=profiles, facts=on_cpu, using=cpu_limits)
        resources = result["spec"]["containers"][0]["resources"]
        assert resources["requests"]["cpu"] == "100m"
        assert resources.get("limits", {}).get("cpu") == expected_limit
        assert [warning for warning in decision.warnings if "limit not set" in warning] == warnings

    @pytest.mark.parametrize(
        ("profile", "expected"),
        [
            pytest.param(recommendation("0.15", 300 * MIB),
                         {"requests.cpu": Basis.HELD, "limits.cpu": Basis.HELD},
                         id="the limit derived from the held request"),
            pytest.param(recommendation("0.15", 300 * MIB, startup_cpu=Decimal("1.5"), startup_seconds=40),
                         {"requests.cpu": Basis.HELD, "limits.cpu": Basis.HISTORY},
                         id="the limit raised to the start-up peak history saw"),
        ],
    )
    def test_a_held_value_rests_on_the_hold_and_a_start_up_peak_on_history(
        self, profile: Recommendation, expected: dict[str, Basis]
    ) -> None:
        """Kills resources.py's `_candidate` mutants that drop `held` (`held=None`, `held=False`, omitted:
        the request said to rest on the policy) and `size_container`'s start-up peak basis mutants."""
        cpu_limits = policy("resources:\n  cpu: {limit: ratio, limitRatio: 2, limitWithoutHistory: true}")
        on_cpu = facts(hpa(metrics=[utilization("cpu", 70)]))
        decision, _ = run(pod(container()), profiles={"app": profile}, facts=on_cpu, using=cpu_limits)
        assert {i.field: i.basis for i in decision.injections if i.field.endswith(".cpu")} == expected

    def test_min_equal_to_max_never_scales_so_history_stays_on(self) -> None:
        fixed = hpa(metrics=[utilization("cpu", 70)], min_replicas=4, max_replicas=4)
        _, result = run(pod(container()), profiles=PROFILES, facts=facts(fixed))
        assert requests_of(result) == HISTORY["app"]

    def test_a_request_the_author_set_is_kept_and_the_other_resource_still_follows_history(self) -> None:
        _, result = run(
            pod(container(requests={"cpu": "500m"})),
            profiles=PROFILES,
            facts=facts(hpa(metrics=[utilization("cpu", 70)])),
        )
        assert requests_of(result) == {"cpu": "500m", "memory": "300Mi"}

    def test_a_container_resource_metric_holds_only_its_container(self) -> None:
        two = pod(container("app"), container("proxy", ports=()))
        _, result = run(two, profiles=PROFILES, facts=facts(hpa(metrics=[utilization("cpu", 70, "app")])))
        assert requests_of(result, "app")["cpu"] == "100m"
        assert requests_of(result, "proxy") == HISTORY["proxy"]

    def test_native_sidecars_count_for_the_hpa_and_plain_init_containers_do_not(self) -> None:
        sidecar = container("mesh", ports=(), restartPolicy="Always")
        subject = pod(container("app"), init=[container("setup", ports=()), sidecar])
        _, result = run(subject, profiles=PROFILES, facts=facts(hpa(metrics=[utilization("cpu", 70)])))
        assert requests_of(result, "mesh")["cpu"] == "100m"
        assert requests_of(result, "setup")["cpu"] == "500m"

    def test_the_knob_size_sizes_from_history_anyway(self) -> None:
        sized = policy("autoscalers: {hpaUtilization: size}")
        _, result = run(
            pod(container()),
            using=sized,
            profiles=PROFILES,
            facts=facts(hpa(metrics=[utilization("cpu", 70)])),
        )
        assert requests_of(result) == HISTORY["app"]

    def test_an_hpa_of_another_workload_changes_nothing(self) -> None:
        other = hpa("api", target=("apps/v1", "Deployment", "api"))
        _, result = run(pod(container()), profiles=PROFILES, facts=facts(other))
        assert requests_of(result) == HISTORY["app"]

    def test_a_keda_scaled_object_on_cpu_is_an_ordinary_hpa(self) -> None:
        scaled = keda_hpa("web", metrics=[utilization("cpu", 60), external()])
        _, result = run(pod(container()), profiles=PROFILES, facts=facts(scaled))
        assert requests_of(result)["cpu"] == "100m"
        assert "hpa keda-hpa-web scales on cpu utilization 60 %" in annotation(result)

    @pytest.mark.parametrize(
        "broken",
        [
            pytest.param({"spec": {"maxReplicas": 5}}, id="no scaleTargetRef"),
            pytest.param(
                {"spec": {"scaleTargetRef": {"kind": "Deployment"}, "maxReplicas": 5}}, id="no name"
            ),
            pytest.param(
                {"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}}}, id="no maxReplicas"
            ),
            pytest.param(
                {
                    "spec": {
                        "scaleTargetRef": {"kind": "Deployment", "name": "web"},
                        "maxReplicas": 5,
                        "metrics": "cpu",
                    }
                },
                id="metrics not a list",
            ),
        ],
    )
    def test_an_hpa_pod_tailor_cannot_read_is_ignored(self, broken: dict[str, Any]) -> None:
        obj = {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "odd", "namespace": "shop"},
            **broken,
        }
        decision, result = run(pod(container()), profiles=PROFILES, facts=facts(obj))
        assert requests_of(result) == HISTORY["app"]
        assert not any("hpa" in w for w in decision.warnings)

    def test_a_statefulset_and_a_rollout_are_found_by_their_own_names(self) -> None:
        stateful = pod(container(), owner=("StatefulSet", "db"))
        _, result = run(
            stateful, profiles=PROFILES, facts=facts(hpa("db", target=("apps/v1", "StatefulSet", "db")))
        )
        assert requests_of(result)["cpu"] == "100m"
        rollout = pod(
            container(),
            owner=("ReplicaSet", "web-6d8f9c7b5"),
            labels={"rollouts-pod-template-hash": "6d8f9c7b5"},
        )
        by_rollout = hpa(target=("argoproj.io/v1alpha1", "Rollout", "web"))
        _, result = run(rollout, profiles=PROFILES, facts=facts(by_rollout))
        assert requests_of(result)["cpu"] == "100m"
        _, result = run(rollout, profiles=PROFILES, facts=facts(hpa()))  # the same-named Deployment's HPA
        assert requests_of(result)["cpu"] == "250m"


class TestAVpa:
    @pytest.mark.parametrize(
        ("mode", "left"),
        [
            ("Auto", True),
            ("Recreate", True),
            ("InPlaceOrRecreate", True),
            ("Initial", True),
            ("Off", False),
            (None, True),
        ],
    )
    def test_a_vpa_that_sizes_pods_at_admission_is_left_its_resources(
        self, mode: str | None, left: bool
    ) -> None:
        decision, result = run(pod(container()), profiles=PROFILES, facts=facts(vpa(mode=mode)))
        app = result["spec"]["containers"][0]
        if left:
            assert app["resources"] == {}
            shown = "Auto" if mode is None else mode
            assert f"app: cpu, memory left to vpa web ({shown})" in [str(note) for note in decision.notes]
            assert f"cpu, memory left to vpa web ({shown})" in annotation(result)
        else:
            assert requests_of(result) == HISTORY["app"]
            assert decision.notes == ()

    @pytest.mark.parametrize(
        ("policies", "app_left", "proxy_left"),
        [
            pytest.param(
                [{"containerName": "*", "controlledResources": ["memory"]}],
                {"memory"},
                {"memory"},
                id="controlledResources memory",
            ),
            pytest.param(
                [{"containerName": "*", "controlledResources": ["cpu"]}],
                {"cpu"},
                {"cpu"},
                id="controlledResources cpu",
            ),
            pytest.param(
                [{"containerName": "*", "mode": "Off"}, {"containerName": "app"}],
                {"cpu", "memory"},
                set(),
                id="only app",
            ),
            pytest.param(
                [{"containerName": "proxy", "mode": "Off"}],
                {"cpu", "memory"},
                set(),
                id="proxy off, the rest by default",
            ),
            pytest.param(
                [
                    {
                        "containerName": "app",
                        "controlledResources": ["cpu"],
                        "controlledValues": "RequestsOnly",
                    },
                    {"containerName": "*", "controlledResources": ["memory"]},
                ],
                {"cpu"},
                {"memory"},
                id="per container",
            ),
        ],
    )
    def test_container_policies_say_which_resources_it_controls(
        self, policies: list[dict[str, Any]], app_left: set[str], proxy_left: set[str]
    ) -> None:
        two = pod(container("app"), container("proxy", ports=()))
        _, result = run(two, profiles=PROFILES, facts=facts(vpa(policies=policies)))
        for name, left in (("app", app_left), ("proxy", proxy_left)):
            got = requests_of(result, name)
            assert set(got) == {"cpu", "memory"} - left, name
            for resource in got:
                assert got[resource] == HISTORY[name][resource]

    def test_init_containers_and_native_sidecars_are_not_the_vpas(self) -> None:
        subject = pod(
            container("app"),
            init=[container("setup", ports=()), container("mesh", ports=(), restartPolicy="Always")],
        )
        _, result = run(subject, profiles=PROFILES, facts=facts(vpa()))
        assert requests_of(result, "app") == {}
        assert requests_of(result, "setup") == {"cpu": "500m", "memory": "128Mi"}
        assert requests_of(result, "mesh") == {"cpu": "40m", "memory": "48Mi"}

    def test_the_knob_ignore_sizes_as_if_there_were_no_vpa(self) -> None:
        _, result = run(
            pod(container()),
            using=policy("autoscalers: {vpa: ignore}"),
            profiles=PROFILES,
            facts=facts(vpa()),
        )
        assert requests_of(result) == HISTORY["app"]

    def test_nothing_is_said_when_the_author_set_everything_the_vpa_controls(self) -> None:
        done = container(requests={"cpu": "1", "memory": "1Gi"}, limits={"memory": "2Gi"})
        decision, _ = run(pod(done), profiles=PROFILES, facts=facts(vpa()))
        assert decision.notes == ()

    def test_a_vpa_wins_over_an_hpa_on_the_same_resource(self) -> None:
        _, result = run(
            pod(container()),
            profiles=PROFILES,
            facts=facts(hpa(), vpa(policies=[{"containerName": "*", "controlledResources": ["cpu"]}])),
        )
        assert requests_of(result) == {"memory": "300Mi"}

    def test_probes_pre_stop_and_grace_are_unaffected(self) -> None:
        plain, _ = run(pod(container()), profiles=PROFILES)
        held, _ = run(pod(container()), profiles=PROFILES, facts=facts(hpa(), vpa()))
        untouched = {"readinessProbe", "startupProbe", "preStop", "terminationGracePeriodSeconds"}
        assert {(i.field, i.value) for i in plain.injections if i.field in untouched} == {
            (i.field, i.value) for i in held.injections if i.field in untouched
        }


class TestTheDryRunSaysWhy:
    def test_dry_run_warnings_name_the_hpa_and_the_vpa(self) -> None:
        two = pod(container("app"), container("proxy", ports=()))
        scalers = facts(
            hpa(metrics=[utilization("cpu", 70, "app")]),
            vpa(
                policies=[
                    {"containerName": "proxy", "controlledResources": ["memory"]},
                    {"containerName": "*", "mode": "Off"},
                ]
            ),
        )
        decision = tailor(two, policy=policy(), profiles=PROFILES, facts=scalers)
        shown = verdict(NamespaceSettings(Mode.DRY_RUN, "default"), decision).warnings
        assert (
            'pod-tailor would set app: requests.cpu=100m (from policy "default"; hpa web scales on cpu '
            "utilization 70 %)" in shown
        )
        assert "pod-tailor left proxy: memory left to vpa web (Auto)" in shown
        assert all(len(w) < 120 for w in shown)
