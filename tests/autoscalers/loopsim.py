"""The feedback loop between an HPA on cpu Utilization and requests sized from per-Pod history, simulated.

A service with a fixed total demand curve (the same every day) runs behind an HPA computing what the
HPA controller computes: desired = ceil(current x utilization / target), skipped within the 10 %
tolerance, clamped to min/max replicas, scale-down held for the 5-minute stabilization window. Each
round is one day: the day is run minute by minute on the requests the Pods were admitted with; then
a profile build runs the REAL strategy (`webhook.profiles.strategy.recommend`) on the simulated
per-Pod usage of the last 14 days, the REAL store logic carries the step limit's trail
(`webhook.profiles.trailingstore.carry_trails`), and the next day's Pods are admitted by the REAL engine
(`webhook.core.engine.tailor`) with the HPA in its snapshot. Deterministic: no clock, no randomness
beyond a fixed hash. Used by `bench/autoscaler_loop.py` and, shortened, by the tests.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass, field
from decimal import Decimal

from tests.autoscalers.kit import hpa, utilization
from webhook.config.policies import load_policy_text
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.autoscalers import Ignored, index_autoscalers, parse_hpa
from webhook.core.model.profile import ContainerProfile, Recommendation, UsageTotals
from webhook.core.model.quantity import parse
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.policies import Policy
from webhook.profiles.store import ProfileDocument, WorkloadEntry
from webhook.profiles.strategy import ContainerHistory, SeriesStats, StrategySettings, recommend, round_up
from webhook.profiles.trailingstore import carry_trails

__all__ = ["Day", "Service", "policy", "simulate"]

DAY = 86_400
MIB = 2**20
SAMPLE_MINUTES = 5  # one usage sample per Pod every 5 minutes (cadvisor at 1 m, thinned for speed)
WEB = WorkloadKey("shop", "Deployment", "web")


def policy(rule: str) -> Policy:
    """The simulation's namespace policy: a 500m cpu default, the HPA rule `keep` (on) or `size` (off)."""
    text = (
        "policies:\n  sim:\n    resources: {cpu: {request: 500m}}\n"
        f"    autoscalers: {{hpaUtilization: {rule}}}\n"
    )
    return load_policy_text(text).policies["sim"]


def _noise(minute: int) -> float:
    """Deterministic [-1, 1) from the minute of the day: every day has exactly the same demand."""
    x = (minute * 2_654_435_761 + 12_345) & 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x45D9F3B) & 0xFFFFFFFF
    x ^= x >> 16
    return x / 2**31 - 1


@dataclass(frozen=True)
class Service:
    """What the service needs in total (the same every day) and what its HPA says."""

    trough_cores: float = 1.5  # total cpu demand at night
    peak_cores: float = 6.0  # at the afternoon peak
    memory_base: int = 160 * MIB  # per Pod, idle
    memory_per_core: int = 300 * MIB  # per Pod, per core of the load it serves
    target: int = 70  # HPA averageUtilization, percent
    min_replicas: int = 2
    max_replicas: int = 20
    tolerance: float = 0.1  # the HPA controller's default
    stabilization_minutes: int = 5  # scale-down stabilization window (300 s default)

    def demand(self, minute: int) -> float:
        wave = 0.5 - 0.5 * math.cos(2 * math.pi * minute / 1440)
        return (self.trough_cores + (self.peak_cores - self.trough_cores) * wave) * (
            1 + 0.05 * _noise(minute)
        )


@dataclass(frozen=True)
class Day:
    """What one round shows: the requests the Pods ran with, and what the HPA did with them."""

    cpu_request: Decimal  # cores
    memory_request: Decimal  # bytes
    replicas_low: int
    replicas_high: int
    replicas_mean: float
    peak_utilization: float  # percent of the request, per Pod, at the busiest minute
    held: bool = False  # the cpu request came from the step limit, not the history alone
    saturates: str | None = None  # the engine's headroom warning at admission, if any


@dataclass
class _Hpa:
    service: Service
    replicas: int
    recent: deque[int] = field(default_factory=deque)

    def step(self, usage_per_pod: float, request: float) -> None:
        """One sync: the HPA's formula, tolerance, bounds and scale-down stabilization."""
        ratio = usage_per_pod / request / (self.service.target / 100)
        desired = (
            self.replicas if abs(ratio - 1) <= self.service.tolerance else math.ceil(self.replicas * ratio)
        )
        desired = min(self.service.max_replicas, max(self.service.min_replicas, desired))
        self.recent.append(desired)
        while len(self.recent) > self.service.stabilization_minutes:
            self.recent.popleft()
        self.replicas = desired if desired > self.replicas else max(self.recent)


def _admit(
    rule: Policy, profile: ContainerProfile | None, facts: ClusterFacts
) -> tuple[Decimal, Decimal, bool, str | None]:
    """The requests the engine gives a new `web` Pod (no requests of its own) under `rule`, and its
    headroom warning."""
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6", "controller": True}
    app = {"name": "app", "image": "example/web:1", "ports": [{"containerPort": 8080}]}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "web-7d4b9c8f6-", "namespace": "shop", "ownerReferences": [owner]},
        "spec": {"containers": [app]},
    }
    decision = tailor(
        pod, policy=rule, profiles={"app": profile} if profile else {}, facts=facts, workload=WEB
    )
    found = {i.field: i for i in decision.injections if i.target == "app"}
    cpu, memory = found["requests.cpu"], found["requests.memory"]
    warning = next((w for w in decision.warnings if w.endswith("it will saturate")), None)
    return parse(cpu.value), parse(memory.value), cpu.source.startswith("held at"), warning


def simulate(rounds: int, *, rule: str, service: Service | None = None, window_days: int = 14) -> list[Day]:
    """`rounds` days of the loop with the HPA rule `keep` (on) or `size` (off)."""
    service = service or Service()
    chosen = policy(rule)
    parsed, _ = parse_hpa(
        hpa(
            metrics=[utilization("cpu", service.target)],
            min_replicas=service.min_replicas,
            max_replicas=service.max_replicas,
        )
    )
    assert not isinstance(parsed, Ignored)
    facts = ClusterFacts(server_version=(1, 33), autoscalers=index_autoscalers([("shop", parsed)])["shop"])
    settings = StrategySettings()
    # Day 0 starts where the HPA would stand at midnight with the policy's request, not at min replicas.
    settled = math.ceil(service.demand(0) / (float(chosen.resources["cpu"].request) * service.target / 100))
    autoscaler = _Hpa(service, min(service.max_replicas, max(service.min_replicas, settled)))
    series: deque[list[SeriesStats]] = deque(maxlen=window_days)  # per day: one per Pod (slot)
    totals: deque[tuple[float, float]] = deque(maxlen=window_days)  # per day: peak total cores, bytes
    document = ProfileDocument({}, 0.0, "none")
    profile: ContainerProfile | None = None
    days: list[Day] = []
    for day in range(rounds):
        cpu, memory, held, saturates = _admit(chosen, profile, facts)
        start = day * DAY
        usage: dict[int, list[float]] = {}
        peaks: dict[int, float] = {}
        replicas_seen: list[int] = []
        peak_utilization, total_cpu, total_memory = 0.0, 0.0, 0.0
        for minute in range(1440):
            demand = service.demand(minute)
            per_pod = demand / autoscaler.replicas
            replicas_seen.append(autoscaler.replicas)
            peak_utilization = max(peak_utilization, per_pod / float(cpu) * 100)
            if minute % SAMPLE_MINUTES == 0:
                total_cpu = max(total_cpu, demand)  # what the Pods use together: the demand
                pod_memory = service.memory_base + service.memory_per_core * per_pod
                total_memory = max(total_memory, pod_memory * autoscaler.replicas)
                for slot in range(autoscaler.replicas):
                    usage.setdefault(slot, []).append(per_pod)
                    bytes_used = service.memory_base + service.memory_per_core * per_pod
                    peaks[slot] = max(peaks.get(slot, 0.0), bytes_used)
            autoscaler.step(per_pod, float(cpu))
        series.append([
            SeriesStats(samples=len(values), first=start, last=start + len(values) * SAMPLE_MINUTES * 60,
                        memory_peak=peaks[slot], cpu_values=tuple(values))
            for slot, values in usage.items()
        ])  # fmt: skip
        totals.append((total_cpu, total_memory))
        days.append(
            Day(
                cpu,
                memory,
                min(replicas_seen),
                max(replicas_seen),
                sum(replicas_seen) / len(replicas_seen),
                peak_utilization,
                held,
                saturates,
            )
        )
        history = ContainerHistory(series=[s for each in series for s in each])
        built = recommend(history, settings=settings, window=f"{window_days}d")
        if isinstance(built, Recommendation):  # what `webhook.profiles.totals` reads from Prometheus
            peak_cpu, peak_memory = max(c for c, _ in totals), max(m for _, m in totals)
            built = dataclasses.replace(
                built,
                totals=UsageTotals(
                    cpu=round_up(peak_cpu, Decimal("0.001"), Decimal(0)),
                    memory=Decimal(math.ceil(peak_memory)),
                ),
            )
        end = (day + 1) * DAY
        document = carry_trails(document, ProfileDocument({WEB: WorkloadEntry({"app": built})}, end, "sim"))
        profile = document.workloads[WEB].containers["app"]
        assert isinstance(profile, Recommendation) or day == 0
    return days
