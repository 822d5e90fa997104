"""The synthetic cluster the profile tests run against: one workload per shape, 14 days at 5-minute steps."""

from __future__ import annotations

import math
import os
import time

from synthetic import DAY, MIB, Pod, Workload, noise

STEP = 300  # 5-minute resolution keeps the data small without weakening any assertion below
# An hour ago, on the hour: the build's evaluation time. POD_TAILOR_TEST_END_HOUR (0-23, UTC) moves it to
# that hour of the last day before, to replay a run made at another time of day.
_NOW = (int(time.time()) // 3600) * 3600 - 3600
_HOUR = os.environ.get("POD_TAILOR_TEST_END_HOUR") or None
END = _NOW if _HOUR is None else _NOW - ((_NOW // 3600 - int(_HOUR)) % 24) * 3600
START = END - 14 * DAY
STARTUP_WINDOW = 1200  # seconds after a container start counted as start-up in these tests
SPIKE_AGE = 750  # the JVM-like containers burn 2 cores for their first 750 s


def _grid(t: float) -> int:
    return int(t // STEP) * STEP


def steady(k: int, t: int, age: int) -> tuple[float, float]:
    return 0.2 + 0.05 * noise(1, k), 200 * MIB + 10 * MIB * noise(2, k)


def diurnal(k: int, t: int, age: int) -> tuple[float, float]:
    phase = math.sin(2 * math.pi * (t % DAY) / DAY)
    return 0.5 + 0.4 * phase + 0.05 * noise(3, k), 300 * MIB + 100 * MIB * phase + 5 * MIB * noise(4, k)


def spiky(k: int, t: int, age: int) -> tuple[float, float]:
    if noise(5, k) < 0.08:  # 8 % of the time: bursts of 1 to 2 cores, so p95 lies inside the bursts
        return 1.0 + noise(6, k), 150 * MIB + 50 * MIB * noise(7, k)
    return 0.1 + 0.02 * noise(8, k), 120 * MIB + 5 * MIB * noise(9, k)


def jvm(k: int, t: int, age: int) -> tuple[float, float]:
    if age <= SPIKE_AGE:
        return 2.0, 400 * MIB
    return 0.3 + 0.05 * noise(10, k), 500 * MIB + 20 * MIB * noise(11, k)


def growing(k: int, t: int, age: int) -> tuple[float, float]:
    return 0.1 + 0.01 * noise(12, k), 100 * MIB + 300 * MIB * (t - START) / (14 * DAY)


def oomy(k: int, t: int, age: int) -> tuple[float, float]:
    return 0.15 + 0.05 * noise(13, k), min(256 * MIB, 180 * MIB + 60 * MIB * noise(14, k) + age * 10)


def envoy(k: int, t: int, age: int) -> tuple[float, float]:
    return 0.05 + 0.03 * noise(15, k), 60 * MIB + 4 * MIB * noise(16, k)


def checkout(k: int, t: int, age: int) -> tuple[float, float]:
    phase = math.sin(2 * math.pi * (t % DAY) / DAY)
    return 0.8 + 0.3 * phase + 0.1 * noise(17, k), 700 * MIB + 50 * MIB * phase + 20 * MIB * noise(18, k)


def _full(name: str) -> Pod:
    return Pod(name, START, END)


def _churned(prefix: str, hashes: list[tuple[str, int, int]], replicas: int, life: int) -> list[Pod]:
    """Pods of successive ReplicaSets (hash, from, to), each Pod replaced every `life` seconds."""
    suffixes = iter(f"{a}{b}{c}{d}{e}" for a in "bcdfg" for b in "hjklm" for c in "npqrs" for d in "tvwxz"
                    for e in "24567")
    pods = []
    for rs_hash, lo, hi in hashes:
        for replica in range(replicas):
            t = lo + replica * STEP * 7
            t = lo if replica == 0 else min(t, hi - STEP)
            while t < hi:
                end = min(hi, t + life + replica * 3600)
                pods.append(Pod(f"{prefix}-{rs_hash}-{next(suffixes)}", _grid(t), _grid(end),
                                replicaset=f"{prefix}-{rs_hash}"))
                t = end
    return pods


def workloads() -> list[Workload]:
    jvm_pods = _churned("jvm", [("6b8f9c7d5", START, END)], replicas=2, life=2 * DAY)
    checkout_pods = _churned(
        "checkout",
        [("5f6b7c8d9", START, START + 4 * DAY), ("7c9d8f5b6", START + 4 * DAY, START + 9 * DAY),
         ("9d6c5b8f7", START + 9 * DAY, END)],
        replicas=4, life=int(1.5 * DAY),
    )
    nightly = [
        Pod(f"nightly-{(START + day * DAY + 3600) // 60}-{'bcdfghjklmnpqrstvwxz'[day]}wk2p",
            START + day * DAY + 3600, START + day * DAY + 4 * 3600)
        for day in range(14)
    ]
    return [
        Workload("shop", "Deployment", "steady", {"app": steady},
                 [_full("steady-7d4b9c8f6-x7k2p"), _full("steady-7d4b9c8f6-b2n4q")],
                 requests={"app": (0.5, 512 * MIB)}, hpa=True),
        Workload("shop", "Deployment", "diurnal", {"app": diurnal},
                 [_full("diurnal-58c9d7b6f4-hq2zx"), _full("diurnal-58c9d7b6f4-lm4tw")], hpa=True),
        Workload("shop", "Deployment", "spiky", {"app": spiky},
                 [_full(f"spiky-6d5c4b7f9-{s}") for s in ("wq9zt", "pk4xr", "mn7vh")]),
        Workload("shop", "Deployment", "jvm", {"app": jvm}, jvm_pods, hpa=True, hpa_metrics=("cpu",)),
        Workload("shop", "Deployment", "growing", {"app": growing}, [_full("growing-84c7d9f5b6-zz2kq")]),
        Workload("shop", "Deployment", "oomy", {"app": oomy},
                 [Pod("oomy-5b7c9d8f6-tr5xw", START, END, oom=frozenset({"app"})),
                  Pod("oomy-5b7c9d8f6-kd2vb", START, END)]),
        Workload("shop", "Deployment", "fresh", {"app": steady},
                 [Pod("fresh-7f6d5c9b8-qq4rt", END - 2 * 3600, END)]),
        Workload("shop", "Deployment", "checkout", {"app": checkout, "envoy": envoy}, checkout_pods,
                 owners=True, requests={"app": (1.0, 1024 * MIB), "envoy": (0.1, 128 * MIB)}, hpa=True),
        Workload("shop", "StatefulSet", "db", {"postgres": steady}, [_full("db-0"), _full("db-1")], hpa=True),
        Workload("shop", "CronJob", "nightly", {"job": spiky}, nightly),
        Workload("partial", "Deployment", "edge", {"app": steady}, [_full("edge-6c7d8f9b5-vv2mn")]),
    ]
