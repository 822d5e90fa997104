"""The workload's peak total usage per container, read from a real Prometheus, equals the replayed data.

The synthetic history is replayed here the way Prometheus evaluates the totals query: at every
5-minute step T, the CPU rate over the last two samples (the one at T - 150 s is the usage designed
for that interval) and the memory sample at T - 150 s, summed over the workload's Pods alive then.
"""

from __future__ import annotations

import re
from collections import defaultdict
from decimal import Decimal

import pytest
import scenarios
from conftest import History
from hypothesis import given
from hypothesis import strategies as st
from synthetic import pod_times

from tests.autoscalers.kit import recommendation
from webhook.core.model.profile import ContainerProfile, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.build import BuildResult
from webhook.profiles.identity import Owners
from webhook.profiles.prometheus import Prometheus, Sample
from webhook.profiles.totals import attach_totals, fetch_totals, group_of, hpa_scope, scope_pattern

HALF = scenarios.STEP // 2


def replayed() -> dict[tuple[str, str], tuple[float, float]]:
    """(workload, container) -> (peak total cores, peak total bytes) over the build's window."""
    cpu: dict[tuple[str, str], dict[int, float]] = defaultdict(lambda: defaultdict(float))
    memory: dict[tuple[str, str], dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for wl in scenarios.workloads():
        key = f"{wl.namespace}/{wl.kind}/{wl.name}"
        for index, pod in enumerate(wl.pods):
            for k, t in enumerate(pod_times(pod, scenarios.STEP)):
                at = t + HALF  # the evaluation step that reads this sample as its latest
                if not scenarios.START < at <= scenarios.END:
                    continue
                for container, shape in wl.containers.items():
                    cores, used = shape(k + index * 7919, t, t - pod.start)
                    memory[(key, container)][at] += used
                    if k:  # a rate needs the sample before
                        cpu[(key, container)][at] += cores
    return {
        found: (max(cpu[found].values(), default=0.0), max(memory[found].values())) for found in memory
    }


@pytest.mark.parametrize(
    ("kind", "name", "container"),
    [
        ("Deployment", "steady", "app"),
        ("Deployment", "diurnal", "app"),
        ("Deployment", "jvm", "app"),
        ("Deployment", "checkout", "app"),
        ("Deployment", "checkout", "envoy"),
        ("StatefulSet", "db", "postgres"),
    ],
)
def test_the_peak_total_is_the_peak_of_the_pods_summed_at_each_step(
    history: History, built: BuildResult, kind: str, name: str, container: str
) -> None:
    profile = built.document.workloads[WorkloadKey("shop", kind, name)].containers[container]
    assert isinstance(profile, Recommendation)
    assert profile.totals is not None
    cores, used = replayed()[(f"shop/{kind}/{name}", container)]
    assert profile.totals.cpu is not None
    assert abs(float(profile.totals.cpu) - cores) <= 0.002, (profile.totals.cpu, cores)
    if name == "jvm":  # its HPA scales on cpu only: the memory total is not asked
        assert profile.totals.memory is None
        return
    assert profile.totals.memory is not None
    assert abs(float(profile.totals.memory) - used) <= 16, (profile.totals.memory, used)


def test_replicas_add_up_and_a_rollouts_replicasets_add_up_too(built: BuildResult) -> None:
    def totals(name: str) -> Decimal:
        profile = built.document.workloads[WorkloadKey("shop", "Deployment", name)].containers["app"]
        assert isinstance(profile, Recommendation)
        assert profile.totals is not None
        assert profile.totals.cpu is not None
        return profile.totals.cpu

    assert totals("steady") > Decimal("0.4")  # two replicas of 0.2-0.25 cores
    assert totals("checkout") > Decimal("3.2")  # four replicas of up to 1.2 cores, across ReplicaSets


@pytest.mark.parametrize(("kind", "name"), [("Deployment", "spiky"), ("CronJob", "nightly")])
def test_no_totals_are_asked_for_a_workload_no_hpa_scales(built: BuildResult, kind: str, name: str) -> None:
    """Only an HPA's headroom check reads totals; kube-state-metrics says which workloads HPAs scale."""
    for profile in built.document.workloads[WorkloadKey("shop", kind, name)].containers.values():
        assert isinstance(profile, Recommendation)
        assert profile.totals is None


def test_a_scopes_totals_are_sliced_by_its_own_pods_and_the_slices_agree(history: History) -> None:
    """Sliced as if every Pod were asked, a scope of a few workloads would be many small queries."""
    scaled = ("steady", "checkout")
    alive = sum(
        len(wl.containers)
        for wl in scenarios.workloads() if wl.namespace == "shop" and wl.name in scaled
        for pod in wl.pods if pod.end > scenarios.END - 3600 and pod.start <= scenarios.END
    )
    asked: list[float] = []

    def pieces(series: float) -> int:
        asked.append(series)
        return 3

    prom = Prometheus(history.prometheus.url)
    try:
        peaks = fetch_totals(
            prom, namespaces=("shop",), window=scenarios.END - scenarios.START, step=scenarios.STEP,
            rate_window=600, end=scenarios.END, live=10_000, pieces=pieces,
            scope={"cpu": frozenset(("shop", name) for name in scaled),
                   "memory": frozenset({("shop", "steady")})},
        )
    finally:
        prom.close()
    steady = sum(
        len(wl.containers)
        for wl in scenarios.workloads() if wl.namespace == "shop" and wl.name == "steady"
        for pod in wl.pods if pod.end > scenarios.END - 3600 and pod.start <= scenarios.END
    )
    # The estimate for everything (both resources), then the scope's own live series per resource.
    assert asked == [20_000, alive + steady]
    for name, kind in (("steady", "Deployment"), ("checkout", "Deployment")):
        cores, used = replayed()[(f"shop/{kind}/{name}", "app")]
        assert abs(peaks[("shop", name, "app")]["cpu"] - cores) <= 0.002
        if name == "steady":
            assert abs(peaks[("shop", name, "app")]["memory"] - used) <= 16
        else:
            assert "memory" not in peaks[("shop", name, "app")]


def sample(stat: str, value: float = 1.0, **labels: str) -> Sample:
    return Sample({"stat": stat, **labels}, value)


def target(name: str) -> Sample:
    """An HPA named as the Deployment it scales."""
    return sample("target", namespace="shop", horizontalpodautoscaler=name, scaletargetref_kind="Deployment",
                  scaletargetref_name=name)


def metric(hpa: str, name: str) -> Sample:
    return sample("metric", 80, namespace="shop", horizontalpodautoscaler=hpa, metric_name=name)


def both(scaled: set[tuple[str, str]]) -> dict[str, frozenset[tuple[str, str]]]:
    return {"cpu": frozenset(scaled), "memory": frozenset(scaled)}


class TestWhoseTotalsAreAsked:
    @pytest.mark.parametrize(
        ("samples", "scope"),
        [
            ([target("web"), sample("hpas", 1), sample("pods", 40)], both({("shop", "web")})),
            ([target("web"), metric("web", "cpu"), target("db"), metric("db", "cpu"), metric("db", "memory"),
              sample("hpas", 2)],
             {"cpu": frozenset({("shop", "web"), ("shop", "db")}), "memory": frozenset({("shop", "db")})}),
            ([target("queue"), metric("queue", "kafka_lag"), sample("hpas", 1)], both(set())),
            ([sample("pods", 40)], both(set())),  # kube-state-metrics reports Pods and no HPA: none
            ([sample("hpas", 2), sample("pods", 40)], None),  # HPAs without targets (an old version)
            ([], None),  # no kube-state-metrics: every workload, as nothing says which are scaled
        ],
        ids=["metrics-unknown-both", "on-the-resources-its-metrics-name", "custom-metrics-only-none",
             "no-hpa", "hpas-of-unknown-target", "no-kube-state-metrics"],
    )
    def test_the_scope_is_what_kube_state_metrics_can_tell(
        self, samples: list[Sample], scope: dict[str, frozenset[tuple[str, str]]] | None
    ) -> None:
        assert hpa_scope(samples) == scope

    def test_the_pattern_matches_the_pods_of_every_scaled_workload_and_no_other(self) -> None:
        pattern = re.compile(scope_pattern(frozenset({("shop", "web"), ("shop", "db.v2"), ("north", "api")})))
        for pod in ("web-7d4b9c8f6-x7k2p", "db.v2-0", "api-5f6b7c8d9-b2n4q"):
            assert pattern.fullmatch(pod)
        for pod in ("webb-7d4b9c8f6-x7k2p", "dbxv2-0", "cart-5f6b7c8d9-b2n4q", "web"):
            assert not pattern.fullmatch(pod)


class TestGroups:
    @pytest.mark.parametrize(
        ("pod", "group"),
        [
            ("web-7d4b9c8f6-x7k2p", "web"),
            ("web-api-7d4b9c8f6d-x7k2p", "web-api"),
            ("db-1", "db"),
            ("agent-x7k2p", "agent"),
            ("nightly-29512345-b2n4q", "nightly-29512345"),
            ("lonely", ""),
        ],
    )
    def test_a_pod_is_summed_with_its_siblings_by_its_name(self, pod: str, group: str) -> None:
        assert group_of(pod) == group

    def test_a_group_whose_pods_belong_to_two_workloads_gets_no_totals(self) -> None:
        containers: dict[WorkloadKey, dict[str, ContainerProfile]] = {
            WorkloadKey("ns", "StatefulSet", "web"): {"app": recommendation()},
            WorkloadKey("ns", "Deployment", "web"): {"app": recommendation()},
            WorkloadKey("ns", "StatefulSet", "db"): {"app": recommendation()},
        }
        series = [("ns", "web-0", "app"), ("ns", "web-7d4b9c8f6-x7k2p", "app"), ("ns", "db-0", "app")]
        peaks = {("ns", "web", "app"): {"cpu": 3.0}, ("ns", "db", "app"): {"cpu": 1.0, "memory": 2.0**30}}
        attach_totals(containers, peaks, owners=Owners(), series=series)
        assert all(p.totals is None for key, c in containers.items() if key.name == "web" for p in c.values()
                   if isinstance(p, Recommendation))
        db = containers[WorkloadKey("ns", "StatefulSet", "db")]["app"]
        assert isinstance(db, Recommendation)
        assert db.totals is not None
        assert (db.totals.cpu, db.totals.memory) == (Decimal(1), Decimal(2**30))

    @given(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?", fullmatch=True))
    def test_the_one_regex_groups_as_cutting_the_suffix_then_the_template_hash(self, pod: str) -> None:
        """Prometheus applies one regex per series and step; it names the group the two cuts would."""
        cut = re.fullmatch(r"(.+)-[^-]+", pod)
        group = cut[1] if cut else ""
        unhashed = re.fullmatch(r"(.+)-[bcdfghjklmnpqrstvwxz2456789]{6,10}", group)
        assert group_of(pod) == (unhashed[1] if unhashed else group)

    @given(st.lists(st.sampled_from(["web", "bcdfgh", "x7k2p", "db", "1", "bcdfghjk2"]), min_size=1,
                    max_size=6))
    def test_hash_like_parts_anywhere_in_the_name_group_as_the_two_cuts_do(self, parts: list[str]) -> None:
        pod = "-".join(parts)
        cut = re.fullmatch(r"(.+)-[^-]+", pod)
        group = cut[1] if cut else ""
        unhashed = re.fullmatch(r"(.+)-[bcdfghjklmnpqrstvwxz2456789]{6,10}", group)
        assert group_of(pod) == (unhashed[1] if unhashed else group)
