"""Start-up time of a new Pod on a node packed with Burstable Pods: no boost, limit-only, request boost.

A deterministic simulation of the Linux CFS scheduler's fair share (no clock, no randomness). Each
container gets CPU in proportion to its weight, which the kubelet sets from its CPU request, up to
what it wants and up to its limit; what one does not use is shared among the rest (water-filling).
The node's neighbours are Burstable Pods that want more than their requests (a packed node at its
busy hour). A new Pod needs `--work` CPU-seconds to start (JIT, class loading, caches) and could use
`--threads` cores meanwhile. Printed: its start-up time, what the scheduler reserved for it (its
request) over time, and what its neighbours got meanwhile, for
- no boost: its steady request, no CPU limit (pod-tailor's default policy);
- limit-only boost: the CPU limit raised to the start-up peak (`startupCpuInLimit`, today's behaviour);
- request boost: the request raised to the start-up peak until Ready, then given back (`startupBoost`).
Then the same on an idle node, where nothing contends and no boost can help.

    .venv/bin/python bench/boost_sim.py [--cores 4] [--neighbours 5] [--work 60] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

STEP = 0.1  # seconds


@dataclass(frozen=True)
class Container:
    request: float  # cores: the CFS weight comes from it
    want: float  # cores it could use right now
    limit: float | None = None


def shares(capacity: float, containers: list[Container]) -> list[float]:
    """CPU each container gets: weight-proportional, capped by want and limit, leftovers shared again."""
    caps = [min(c.want, c.limit if c.limit is not None else c.want) for c in containers]
    given = [0.0] * len(containers)
    open_ = [i for i, cap in enumerate(caps) if cap > 0]
    left = capacity
    while open_ and left > 1e-9:
        weight = sum(max(containers[i].request, 0.002) for i in open_)  # the kernel's minimum weight
        offer = {i: left * max(containers[i].request, 0.002) / weight for i in open_}
        done = [i for i in open_ if given[i] + offer[i] >= caps[i] - 1e-12]
        if not done:
            for i in open_:
                given[i] += offer[i]
            break
        for i in done:
            left -= caps[i] - given[i]
            given[i] = caps[i]
        open_ = [i for i in open_ if i not in done]
    return given


@dataclass(frozen=True)
class Outcome:
    seconds: float  # until the new Pod had its start-up work done (Ready)
    reserved: float  # core-seconds the scheduler reserved for it over the first `horizon` seconds
    neighbours: float  # cores its neighbours got on average while it started


def start(
    *,
    cores: float,
    neighbours: int,
    work: float,
    threads: float,
    request: float,
    boosted: float | None,
    limit: float | None,
    horizon: float = 300.0,
) -> Outcome:
    busy = [Container(request=0.5, want=1.0) for _ in range(neighbours)]  # Burstable, wanting 2x request
    done, t, reserved, theirs = 0.0, 0.0, 0.0, 0.0
    while done < work and t < horizon:
        mine = Container(request=boosted or request, want=threads, limit=limit)
        got = shares(cores, [mine, *busy])
        done += got[0] * STEP
        theirs += sum(got[1:]) * STEP
        reserved += mine.request * STEP
        t += STEP
    ready = t
    while t < horizon:  # after Ready the request is the steady one again
        reserved += request * STEP
        t += STEP
    return Outcome(ready, reserved, theirs / ready if ready else 0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cores", type=float, default=4.0, help="node CPUs [4]")
    parser.add_argument("--neighbours", type=int, default=5, help="busy Burstable Pods, 500m requests [5]")
    parser.add_argument(
        "--work", type=float, default=60.0, help="CPU-seconds to start [60]"
    )
    parser.add_argument("--threads", type=float, default=2.0, help="cores it could use while starting [2]")
    parser.add_argument("--request", type=float, default=0.25, help="its steady request, cores [0.25]")
    parser.add_argument("--peak", type=float, default=1.4, help="its start-up peak from history, cores [1.4]")
    args = parser.parse_args()
    cases = [
        ("no boost (request only)", None, None),
        ("limit-only boost (today)", None, args.peak),
        ("request boost until Ready", args.peak, None),
    ]
    for node, neighbours in (("packed node", args.neighbours), ("idle node", 0)):
        demand = neighbours * 1.0 + args.threads
        print(
            f"{node}: {args.cores:g} cores, {neighbours} neighbours wanting 1 core on 500m requests "
            f"(demand {demand:g} cores); new Pod: {args.work:g} CPU-s to start, up to "
            f"{args.threads:g} cores, request {args.request * 1000:.0f}m, start-up peak {args.peak:g}"
        )
        titles = ("start-up", "reserved core-s (300 s)", "neighbours got")
        print(f"  {'':30} {titles[0]:>9} {titles[1]:>24} {titles[2]:>15}  requests on node")
        for name, boosted, limit in cases:
            requested = neighbours * 0.5 + (boosted or args.request)
            fits = "fits" if requested <= args.cores else "does NOT fit: scheduled elsewhere"
            found = start(
                cores=args.cores,
                neighbours=neighbours,
                work=args.work,
                threads=args.threads,
                request=args.request,
                boosted=boosted,
                limit=limit,
            )
            shown = f"{found.seconds:>8.1f}s {found.reserved:>24.1f} {found.neighbours:>10.2f} cores"
            print(f"  {name:30} {shown}  {requested:g} of {args.cores:g} ({fits})")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
