"""Engine cost per Pod against the diffing approach (`jsonpatch.make_patch` on the same change).

Prints medians measured in this one run and their ratio; the machines are shared and noisy, so the
ratio is the figure to read. Targets: engine <= 1/10 of make_patch, and under 100 us for a typical Pod.

    .venv/bin/python bench/engine.py [--rounds N]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonpatch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: find the tests package
from tests.shared import CORPUS as SHARED_CORPUS
from tests.shared import MISSING
from webhook.config.policies import bundled_policies
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts

POLICY = bundled_policies().policies["default"]
FACTS = ClusterFacts(server_version=(1, 31))
CORPUS = SHARED_CORPUS / "reviews"


def typical_pod() -> dict[str, Any]:
    """A Deployment Pod with an app and a sidecar, nothing sized, as the API server sends it."""
    review = json.loads((CORPUS / "microservices-demo__Deployment__frontend.json").read_text())
    pod: dict[str, Any] = review["request"]["object"]
    app = pod["spec"]["containers"][0]
    for key in ("resources", "readinessProbe", "livenessProbe"):
        app.pop(key, None)
    sidecar = copy.deepcopy(app)
    sidecar.update(name="proxy", ports=[{"containerPort": 15001, "protocol": "TCP"}])
    pod["spec"]["containers"].append(sidecar)
    return pod


def median_ns(work: Callable[[], object], rounds: int) -> float:
    for _ in range(min(rounds, 50)):
        work()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        work()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples)


def measure(pod: dict[str, Any], rounds: int) -> tuple[float, float]:
    decision = tailor(pod, policy=POLICY, profiles={}, facts=FACTS)
    mutated = jsonpatch.apply_patch(pod, list(decision.ops))
    engine = median_ns(lambda: tailor(pod, policy=POLICY, profiles={}, facts=FACTS), rounds)
    diffing = median_ns(lambda: jsonpatch.make_patch(pod, mutated), rounds)
    return engine, diffing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000, help="timed runs per Pod for the typical Pod")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"bench/engine.py {MISSING}")

    engine, diffing = measure(typical_pod(), args.rounds)
    print(
        f"typical 2-container Pod: engine {engine / 1000:.1f} us, make_patch {diffing / 1000:.1f} us, "
        f"ratio engine/make_patch {engine / diffing:.3f} (target <= 0.100; engine target < 100 us)"
    )

    per_pod = [
        measure(json.loads(p.read_text())["request"]["object"], max(args.rounds // 20, 50))
        for p in sorted(CORPUS.glob("*.json"))
    ]
    engine_all = statistics.median(e for e, _ in per_pod)
    diff_all = statistics.median(d for _, d in per_pod)
    ratios = [e / d for e, d in per_pod]
    print(
        f"corpus ({len(per_pod)} Pods): median engine {engine_all / 1000:.1f} us, "
        f"median make_patch {diff_all / 1000:.1f} us, median ratio {statistics.median(ratios):.3f}, "
        f"worst ratio {max(ratios):.3f}"
    )


if __name__ == "__main__":
    main()
