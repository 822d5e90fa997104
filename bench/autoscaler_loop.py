"""The HPA feedback loop, with pod-tailor's autoscaler rule off and on: a deterministic simulation.

A service with the same total cpu demand every day (1.5 cores at night, 6 at the afternoon peak)
runs behind an HPA on cpu Utilization 70 % (2..20 replicas, the controller's formula, 10 % tolerance,
5-minute scale-down stabilization). Every round is a day, then a profile build with the real strategy
on the simulated per-Pod usage (14-day window), then the next day's Pods admitted by the real engine
(see tests/autoscalers/loopsim.py). With the rule off (`hpaUtilization: size`) the request is sized
from per-Pod usage the HPA itself holds near 70 % of the request: it falls, the HPA adds Pods until
maxReplicas, and the service runs over its target at the peak. With the rule on (`keep`, the default)
the request stays at the policy's 500m and the replica pattern repeats exactly.

    .venv/bin/python bench/autoscaler_loop.py [--rounds 30] [--quick]

Columns per mode: the cpu and memory requests the day's Pods were admitted with (`*`: held by the
step limit), the replica range and mean over the day, the per-Pod utilization at the busiest minute,
and whether the engine's headroom check warned at admission that the HPA will saturate.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.autoscalers.loopsim import Day, Service, simulate

MIB = 2**20


def _cells(day: Day) -> str:
    cpu = f"{int(day.cpu_request * 1000)}m" + ("*" if day.held else "")
    memory = f"{int(day.memory_request) // MIB}Mi"
    replicas = f"{day.replicas_low}-{day.replicas_high}"
    warns = "yes" if day.saturates else "-"
    return (
        f"{cpu:>6} {memory:>6} {replicas:>6} {day.replicas_mean:5.1f} {day.peak_utilization:4.0f}% {warns:>5}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30, help="days to simulate (default 30)")
    parser.add_argument("--quick", action="store_true", help="10 rounds")
    args = parser.parse_args(argv)
    rounds = 10 if args.quick else args.rounds
    service = Service()
    started = time.perf_counter()
    off, on = simulate(rounds, rule="size", service=service), simulate(rounds, rule="keep", service=service)
    seconds = time.perf_counter() - started
    print(
        f"demand {service.trough_cores:g}-{service.peak_cores:g} cores a day; HPA cpu {service.target} %, "
        f"{service.min_replicas}..{service.max_replicas} replicas; policy cpu request 500m\n"
    )
    head = f"{'cpu':>6} {'memory':>6} {'pods':>6} {'mean':>5} {'peak':>5} {'warns':>5}"
    print(f"{'':5} | {'rule off (hpaUtilization: size)':<39} | {'rule on (hpaUtilization: keep)':<39}")
    print(f"{'round':5} | {head} | {head}")
    for index, (a, b) in enumerate(zip(off, on, strict=True)):
        print(f"{index:5} | {_cells(a)} | {_cells(b)}")
    first, last = off[0], off[-1]
    print(
        f"\noff: cpu request {int(first.cpu_request * 1000)}m -> {int(last.cpu_request * 1000)}m "
        f"({float(last.cpu_request / first.cpu_request - 1) * 100:+.0f} %), mean replicas "
        f"{first.replicas_mean:.1f} -> {last.replicas_mean:.1f}, peak replicas {first.replicas_high} -> "
        f"{last.replicas_high} (max {service.max_replicas}), peak utilization "
        f"{first.peak_utilization:.0f} % -> {last.peak_utilization:.0f} % (target {service.target} %)"
    )
    steady = {(d.cpu_request, d.replicas_low, d.replicas_high, round(d.replicas_mean, 6)) for d in on}
    memory = {d.memory_request for d in on[1:]}
    print(
        f"on:  {len(steady)} distinct (cpu request, replica range, mean) over {rounds} rounds; "
        f"{len(memory)} distinct memory request(s) after the first build"
    )
    warned = next((d.saturates for d in off if d.saturates), None)
    print(
        f"headroom warnings at admission: off {sum(bool(d.saturates) for d in off)} rounds, "
        f"on {sum(bool(d.saturates) for d in on)}" + (f"; off says: {warned}" if warned else "")
    )
    print(f"simulated in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
