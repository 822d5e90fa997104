"""Steady recommendations: a bounded step a day from the value served before, kept across restarts."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path

import pytest

from tests.autoscalers.kit import MIB, recommendation
from tests.engine.podkit import container, pod, policy, run
from webhook.config.policies import load_policy_text
from webhook.core.model.profile import NoRecommendation, Recommendation, TrailPoint, UsageTotals
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.reader import PolicyError
from webhook.core.policy.sections import StepLimit
from webhook.core.sizing.steady import DAY, steadied
from webhook.profiles.runner import open_store
from webhook.profiles.store import FileStore, ProfileDocument, WorkloadEntry, decode_document, encode_document
from webhook.profiles.trailingstore import KEEP_DAYS, carry_trails

T0 = 1_780_000_000.0  # some day, 09:46 UTC
DEFAULT = StepLimit(Decimal("0.3"), None)


def memory_rec(mib: int, *, at: float, trail: tuple[TrailPoint, ...] = (), oom: int = 0) -> Recommendation:
    return recommendation("0.25", mib * MIB, built_at=at, trail=trail, oom_kills=oom)


def point(days: float, mib: int, cpu: str = "0.25") -> TrailPoint:
    return TrailPoint(T0 + days * DAY, Decimal(cpu), Decimal(mib * MIB))


class TestTheStepLimit:
    @pytest.mark.parametrize(
        ("trail", "now_days", "now_mib", "served_mib"),
        [
            pytest.param((point(0, 1000),), 1, 420, 700, id="a day after: 30 % down at most"),
            pytest.param((point(0, 1000), point(1, 420)), 2, 420, 490, id="two days: 0.7 x 0.7"),
            pytest.param((point(0, 1000), point(1, 420), point(2, 420)), 3, 420, 420, id="reached"),
            pytest.param(
                (point(0, 1000), point(0.5, 420)), 1, 420, 700, id="two builds a day: the same bound"
            ),
            pytest.param((point(0, 1000),), 0.25, 420, 915, id="six hours: 0.7^0.25"),
            pytest.param((point(0, 400),), 1, 900, 900, id="up: at once"),
            pytest.param((point(0, 1000),), 1, 800, 800, id="a small fall: as is"),
            pytest.param((), 1, 420, 420, id="no trail: as is"),
        ],
    )
    def test_memory_falls_at_most_30_percent_a_day_and_rises_at_once(
        self, trail: tuple[TrailPoint, ...], now_days: float, now_mib: int, served_mib: int
    ) -> None:
        rec = memory_rec(now_mib, at=T0 + now_days * DAY, trail=trail)
        served = steadied(rec, "memory", DEFAULT)
        assert served.history == now_mib * MIB
        assert served.value == pytest.approx(served_mib * MIB, abs=MIB)

    def test_an_up_limit_holds_a_rise_but_memory_after_an_oom_kill_rises_at_once(self) -> None:
        limit = StepLimit(Decimal("0.3"), Decimal("0.5"))
        trail = (point(0, 400, cpu="0.1"),)
        rec = memory_rec(900, at=T0 + DAY, trail=trail)
        assert steadied(rec, "memory", limit).value == 600 * MIB
        assert steadied(dataclasses.replace(rec, cpu=Decimal("0.5")), "cpu", limit).value == Decimal("0.15")
        oomed = memory_rec(900, at=T0 + DAY, trail=trail, oom=1)
        assert steadied(oomed, "memory", limit).value == 900 * MIB

    def test_down_per_day_one_is_no_limit(self) -> None:
        rec = memory_rec(100, at=T0 + DAY, trail=(point(0, 1000),))
        assert steadied(rec, "memory", StepLimit(Decimal(1), None)).value == 100 * MIB

    def test_the_annotation_says_held_at_and_what_history_says(self) -> None:
        rec = memory_rec(420, at=T0 + DAY, trail=(point(0, 1000),))
        rec = dataclasses.replace(rec, memory=Decimal(420 * MIB))
        decision, result = run(pod(container()), profiles={"app": rec})
        assert result["spec"]["containers"][0]["resources"]["requests"]["memory"] == "700Mi"
        (memory,) = [i for i in decision.injections if i.field == "requests.memory"]
        assert memory.source.startswith("held at 700Mi: step limit, history says 420Mi; profile: peak +15%")

    def test_a_held_cpu_value_is_said_in_cores(self) -> None:
        """Kills resources.py's `_candidate` with `steady.note(None)`: cpu rendered as bytes ("1")."""
        rec = recommendation("0.25", 420 * MIB, built_at=T0 + DAY, trail=(point(0, 420, cpu="1"),))
        decision, _ = run(pod(container()), profiles={"app": rec})
        (cpu,) = [i for i in decision.injections if i.field == "requests.cpu"]
        assert cpu.value == "700m"
        assert cpu.source.startswith("held at 700m: step limit, history says 250m; profile: p95 usage")

    def test_the_policy_sets_the_step(self) -> None:
        rec = memory_rec(420, at=T0 + DAY, trail=(point(0, 1000),))
        loose = policy("autoscalers: {steps: {downPerDay: 0.5}}")
        _, result = run(pod(container()), using=loose, profiles={"app": rec})
        assert result["spec"]["containers"][0]["resources"]["requests"]["memory"] == "500Mi"


class TestThePolicySection:
    def test_defaults_are_keep_defer_and_30_percent_down_unbounded_up(self) -> None:
        section = policy().autoscalers
        assert (section.hpa_utilization.value, section.vpa.value) == ("keep", "defer")
        assert section.steps == StepLimit(Decimal("0.3"), None)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            (
                "autoscalers: {hpaUtilization: always}",
                "policies.x.autoscalers.hpaUtilization: must be one of keep",
            ),
            ("autoscalers: {vpa: fight}", "policies.x.autoscalers.vpa: must be one of defer, ignore"),
            (
                "autoscalers: {steps: {downPerDay: 1.5}}",
                "policies.x.autoscalers.steps.downPerDay: must be a number",
            ),
            (
                "autoscalers: {steps: {upPerDay: -1}}",
                "policies.x.autoscalers.steps.upPerDay: must be a number",
            ),
            ("autoscalers: {hpa: keep}", "policies.x.autoscalers.hpa: unknown field"),
            ("autoscalers: keep", "policies.x.autoscalers: must be a mapping"),
        ],
    )
    def test_a_bad_value_is_refused_naming_the_field(self, text: str, message: str) -> None:
        body = "\n".join("    " + line for line in text.splitlines())
        with pytest.raises(PolicyError, match=message.replace(".", r"\.")):
            load_policy_text(f"policies:\n  x:\n{body}\n")


WEB = WorkloadKey("shop", "Deployment", "web")


def document(at: float, mib: int, *, oom: int = 0) -> ProfileDocument:
    rec = recommendation("0.25", mib * MIB, oom_kills=oom)
    return ProfileDocument({WEB: WorkloadEntry({"app": rec, "new": NoRecommendation("2h")})}, at, "test")


def served(doc: ProfileDocument) -> Recommendation:
    rec = doc.workloads[WEB].containers["app"]
    assert isinstance(rec, Recommendation)
    return rec


class TestTheTrailInTheStore:
    def test_each_write_adds_the_previous_value_one_a_day_for_a_week(self) -> None:
        doc = carry_trails(ProfileDocument({}, 0.0, "none"), document(T0, 1000))
        assert served(doc).built_at == T0
        assert served(doc).trail == ()
        for hours in range(6, 10 * 24 + 1, 6):
            doc = carry_trails(doc, document(T0 + hours * 3600, 1000 - hours))
        trail = served(doc).trail
        days = [int(p.at // DAY) for p in trail]
        assert days == sorted(set(days))  # one a day
        assert len(trail) == KEEP_DAYS
        built_at = T0 + 240 * 3600
        assert served(doc).built_at == built_at
        assert all(built_at - KEEP_DAYS * DAY < p.at < built_at for p in trail)

    def test_the_store_round_trips_totals_and_trail_and_an_old_store_still_loads(self) -> None:
        rec = dataclasses.replace(
            served(carry_trails(document(T0, 1000, oom=1), document(T0 + DAY, 420))),
            totals=UsageTotals(cpu=Decimal("4.2"), memory=Decimal(3 * 2**30)),
        )
        doc = ProfileDocument({WEB: WorkloadEntry({"app": rec})}, T0 + DAY, "test")
        encoded = encode_document(doc)
        assert encoded["workloads"][str(WEB)]["containers"]["app"]["totals"] == {
            "cpu": "4200m",
            "memory": "3Gi",
        }
        assert decode_document(encoded, where="test").workloads[WEB].containers["app"] == rec
        for key in ("totals", "builtAt", "trail"):
            del encoded["workloads"][str(WEB)]["containers"]["app"][key]
        old = decode_document(encoded, where="old")
        assert served(old).totals is None
        assert served(old).trail == ()

    def test_across_restarts_the_step_is_applied_from_the_files_trail(self, tmp_path: Path) -> None:
        path = tmp_path / "profiles.json"
        open_store(path=path).write(document(T0, 1000))
        open_store(path=path).write(document(T0 + DAY, 420))  # another process, a day later
        snapshot = FileStore(path).read().snapshot(origin="restarted")
        _, result = run(pod(container()), profiles=snapshot.for_workload(WEB))
        assert result["spec"]["containers"][0]["resources"]["requests"]["memory"] == "700Mi"
