"""Right-sizing one running Pod (pure): what admission would set now, within each safety rule."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.autoscalers.kit import facts as scaler_facts
from tests.autoscalers.kit import hpa, utilization, vpa
from tests.rightsize.kit import DAY, MIB, NOW, ON, QUIETER, container, pod, policy, profiles, running
from webhook.core.facts import ClusterFacts
from webhook.core.model.timestamps import unstamp
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.inplace import open_window
from webhook.core.resize.history import RESIZED_ANNOTATION, Change, Entry, history_text, read_history
from webhook.core.resize.pacing import RateLimit, workload_room
from webhook.core.resize.plan import Around, Plan, owned_fields, plan_resize

WEB = WorkloadKey("shop", "Deployment", "web")
ROOMY = {"cpu": Decimal(4), "memory": Decimal(16 * 2**30)}
LOW_USE = {"app": Decimal(90 * MIB)}
BERLIN = {"schedule": "0 2 * * *", "duration": "3h", "timeZone": "Europe/Berlin"}


def plan(
    subject: dict[str, Any] | None = None,
    *,
    now: Any = QUIETER,
    using: Any = ON,
    facts: ClusterFacts | None = None,
    **around: Any,
) -> Plan:
    found = subject or running()
    context = {"now": NOW, "node_free": ROOMY, "memory_usage": LOW_USE, "quota_room": {},
               "history": read_history(found["metadata"].get("annotations") or {}), **around}  # fmt: skip
    return plan_resize(found, policy=using, profiles=now, facts=facts or ClusterFacts(server_version=(1, 35)),
                       workload=WEB, around=Around(**context))  # fmt: skip


def changes(found: Plan) -> dict[str, tuple[str, str]]:
    assert found.resize is not None, found.reason
    return {f"{c.container} {c.field}": (c.before, c.after) for c in found.resize.changes}


class TestWhatItResizesTo:
    def test_a_quieter_workload_comes_down_one_days_step_with_its_limit_in_ratio(self) -> None:
        found = plan()
        assert changes(found) == {
            "app requests.cpu": ("500m", "350m"),
            "app requests.memory": ("600Mi", "420Mi"),
            "app limits.memory": ("1200Mi", "840Mi"),
        }
        assert found.resize is not None
        assert found.resize.ops == (
            {"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "350m"},
            {"op": "replace", "path": "/spec/containers/0/resources/requests/memory", "value": "420Mi"},
            {"op": "replace", "path": "/spec/containers/0/resources/limits/memory", "value": "840Mi"},
        )
        assert "admission would set app cpu 200m, one step, memory 200Mi, one step now" in found.resize.why

    def test_a_busier_workload_goes_up_at_once(self) -> None:
        assert changes(plan(now=profiles("1.2", 900)))["app requests.cpu"] == ("500m", "1200m")

    def test_a_change_within_min_change_is_not_worth_a_resize(self) -> None:
        found = plan(now=profiles("0.45", 560))
        assert found.resize is None
        assert found.reason == "within minChange of what admission would set"

    def test_only_values_pod_tailor_set_move_never_the_authors(self) -> None:
        subject = running(subject=pod(container(requests={"memory": "1Gi"}, limits={"memory": "1Gi"})))
        assert set(owned_fields(subject)["app"]) == {"requests.cpu"}
        assert set(changes(plan(subject))) == {"app requests.cpu"}

    def test_a_pod_pod_tailor_never_sized_is_left_alone(self) -> None:
        limits = {"cpu": "2", "memory": "2Gi"}
        authored = running(subject=pod(container(requests={"cpu": "1", "memory": "1Gi"}, limits=limits)))
        assert plan(authored).reason.startswith("no value set by pod-tailor")

    def test_within_a_day_of_the_last_change_the_step_is_smaller(self) -> None:
        subject = running()
        earlier = Entry(NOW - DAY / 4, (Change("app", "requests.cpu", "700m", "500m"),), "earlier")
        subject["metadata"]["annotations"][RESIZED_ANNOTATION] = history_text((), earlier)
        found = plan(subject)
        assert "app requests.cpu" not in changes(found)  # 30 %/day for a quarter day: 8 %, under minChange
        assert "app: cpu waits for the step limit (history says 200m)" in found.reasons


class TestWhatItNeverDoes:
    @pytest.mark.parametrize(
        ("scaler", "left"),
        [
            (hpa(metrics=[utilization("cpu", 70)]), "cpu left alone: hpa web scales on cpu utilization 70 %"),
            (vpa(mode="Initial"), "cpu left alone: vpa web (Initial) sets it"),
        ],
    )
    def test_a_resource_an_autoscaler_owns_is_not_touched(self, scaler: dict[str, Any], left: str) -> None:
        found = plan(facts=scaler_facts(scaler))
        assert f"app: {left}" in found.reasons
        assert "app requests.cpu" not in (changes(found) if found.resize else {})

    def test_nothing_before_the_learning_period(self) -> None:
        found = plan(now=profiles("0.2", 200, hours=10))
        assert found.resize is None
        assert found.reason == "app: learning (10h of history, 24h needed)"

    def test_memory_is_not_lowered_while_the_container_uses_most_of_the_new_value(self) -> None:
        found = plan(memory_usage={"app": Decimal(400 * MIB)})
        assert set(changes(found)) == {"app requests.cpu"}
        assert "app: memory not lowered: uses 400Mi, above 80 % of 420Mi" in found.reasons

    def test_memory_is_not_lowered_without_usage_and_the_caller_is_told_to_ask(self) -> None:
        found = plan(memory_usage=None)
        assert set(changes(found)) == {"app requests.cpu"}
        assert found.needs_usage

    def test_a_resource_that_would_restart_its_container_is_left_alone(self) -> None:
        restart = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
        found = plan(running(subject=pod(container(resizePolicy=restart))))
        assert set(changes(found)) == {"app requests.cpu"}

    def test_an_increase_that_does_not_fit_the_node_is_not_asked(self) -> None:
        found = plan(now=profiles("1.2", 600), node_free={"cpu": Decimal("0.3"), "memory": Decimal(2**30)})
        assert found.resize is None
        assert found.reason == "app: cpu not raised: +700m does not fit the node's free 300m"

    def test_an_increase_over_the_quota_is_not_asked(self) -> None:
        found = plan(now=profiles("1.2", 600), quota_room={"requests.cpu": Decimal("0.5")})
        assert found.resize is None
        assert "over the quota's room" in found.reason

    def test_the_qos_class_never_changes(self) -> None:
        # The author's memory request = limit and cpu limit 1; pod-tailor's cpu request up to that limit
        # would make the Pod Guaranteed.
        subject = running(subject=pod(container(limits={"cpu": "1", "memory": "1Gi"},
                                                requests={"memory": "1Gi"})))  # fmt: skip
        subject["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m"
        found = plan(subject, now=profiles("2", 1024))
        assert found.resize is None
        assert found.reason.endswith("would change the QoS class Burstable -> Guaranteed")

    def test_a_change_once_refused_is_never_asked_again(self) -> None:
        subject = running()
        first = plan(subject)
        assert first.resize is not None
        refused = Entry(
            NOW - 60, first.resize.changes, first.resize.why, "refused: Pod QOS Class may not change"
        )
        subject["metadata"]["annotations"][RESIZED_ANNOTATION] = history_text((), refused)
        assert plan(subject).reason.endswith("asked before and refused: not again")


class TestTheRecordAndThePace:
    def test_the_record_keeps_the_newest_entries_within_its_bounds(self) -> None:
        history: tuple[Entry, ...] = ()
        for index in range(20):
            entry = Entry(NOW + index, (Change("app", "requests.cpu", "1", f"{index}m"),), "x" * 1000)
            history = read_history({RESIZED_ANNOTATION: history_text(history, entry)})
        text = history_text(history[:-1], history[-1])
        assert len(text) <= 4096
        assert history[-1].changes[0].after == "19m"
        assert 1 <= len(history) <= 8

    def test_an_unreadable_record_reads_as_none(self) -> None:
        assert read_history({RESIZED_ANNOTATION: "{not json"}) == ()

    @pytest.mark.parametrize(
        ("window", "at", "open_"),
        [
            (BERLIN, "2026-09-22T00:30:00Z", True),  # 02:30 in Berlin (summer time)
            (BERLIN, "2026-09-22T03:30:00Z", False),  # 05:30 in Berlin: closed at 05:00
            ({**BERLIN, "timeZone": "UTC"}, "2026-09-22T00:30:00Z", False),
            (
                {"schedule": "30 22 * * 5", "duration": "48h", "timeZone": "America/New_York"},
                "2026-09-20T12:00:00Z",
                True,
            ),
        ],
    )
    def test_maintenance_windows_are_cron_starts_with_a_length_in_a_time_zone(
        self, window: dict[str, str], at: str, open_: bool
    ) -> None:
        rules = policy(f"inPlace: {{enabled: true, windows: [{window}]}}", name="w").in_place
        moment = unstamp(at)
        assert moment is not None
        assert open_window(rules, moment)[0] is open_

    def test_a_workload_resizes_at_most_a_tenth_of_its_pods_at_once_and_always_one(self) -> None:
        assert ON.in_place.concurrency(3) == 1
        assert ON.in_place.concurrency(40) == 4
        assert workload_room(pods=40, resizing=3, allowed=4) is None
        assert workload_room(pods=40, resizing=4, allowed=4) == (
            "4 of the workload's 40 Pods resizing already (at most 4 at once)"
        )

    def test_the_cluster_wide_rate_limit_is_a_sliding_minute(self) -> None:
        limit = RateLimit(2)
        assert limit.allows([NOW - 61, NOW - 5], now=NOW)
        assert not limit.allows([NOW - 30, NOW - 5], now=NOW)
