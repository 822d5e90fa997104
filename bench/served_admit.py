"""In process: what the node fit and quota rules cost per request on bench/serve.py's served workload.

    .venv/bin/python bench/served_admit.py [--rounds 60] [--warm-rounds 15]

The corpus replicas exactly as `bench/serve.py` sends them (`replicas`: 8 of each review, interleaved,
so consecutive requests come from different templates) through `webhook.admission.admit` with the
verdict cache and a quota ledger, as the server calls it, without TLS, HTTP or the event loop around
it: once against the snapshot `serve.py --cluster-facts` serves (bench/served_facts.py's Nodes,
DaemonSets, opted-in namespaces and a ResourceQuota in each, built in process with
`build_snapshot`), once against the snapshot of a server reading no cluster (today's). The two
alternate in many short rounds (every other round the other first), each pass over every replica,
caches and ledgers kept across rounds as a server keeps them; printed: CPU per request of each and
facts/today, medians of rounds. The warm-up rounds fill the verdict caches and take the default
namespace's ledger to its bound (10,000 charges a quota), where bench/serve.py's runs spend most of
their time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import served_facts  # noqa: E402
from serve import CORPUS, REPLICAS, replicas  # noqa: E402

from tests.shared import MISSING  # noqa: E402
from webhook.admission import Engine, VerdictCache, admit, default_engine  # noqa: E402
from webhook.admission.ledger import QuotaLedger  # noqa: E402
from webhook.cluster.resources import daemonset_essentials, node_essentials, quota_essentials  # noqa: E402
from webhook.cluster.snapshot import build_snapshot  # noqa: E402
from webhook.config.policies import bundled_policies  # noqa: E402
from webhook.config.settings import Settings  # noqa: E402
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot  # noqa: E402


class Server:
    """One server's state: its snapshot, verdict cache and ledger, kept across rounds."""

    def __init__(self, cluster: ClusterSnapshot, engine: Engine) -> None:
        settings = Settings()
        self.cluster, self.engine, self.profiles = cluster, engine, ProfileSnapshot()
        self.cache = VerdictCache(settings.verdict_cache_size, max_bytes=settings.verdict_cache_bytes)
        self.ledger = QuotaLedger()

    def round(self, bodies: list[bytes]) -> float:
        """CPU seconds to answer every body once."""
        cluster, profiles, engine = self.cluster, self.profiles, self.engine
        cache, ledger = self.cache, self.ledger
        started = time.process_time()
        for body in bodies:
            admit(body, cluster=cluster, profiles=profiles, engine=engine, cache=cache, ledger=ledger)
        return time.process_time() - started


def facts_snapshot(names: set[str]) -> ClusterSnapshot:
    """What the --cluster-facts server's refreshers build from the fake API server's objects."""
    found = served_facts.objects(names)
    objects = {
        "nodes": [node_essentials(n) for n in found["nodes"]],
        "daemonsets": [daemonset_essentials(d) for d in found["daemonsets"]],
        "namespaces": found["namespaces"],
        "resourcequotas": [quota_essentials(q) for q in found["resourcequotas"]],
    }
    return build_snapshot(policies=bundled_policies(), settings=Settings(), objects=objects,
                          server_version=(1, 33), taken_at=0.0, source="bench")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="measured rounds per server")
    parser.add_argument("--warm-rounds", type=int, default=15, help="rounds first, not measured")
    args = parser.parse_args()
    paths = sorted(CORPUS.glob("*.json"))
    if not paths:
        raise SystemExit(f"no reviews under {CORPUS}: {MISSING} (or set POD_TAILOR_CORPUS)")
    bodies = replicas([p.read_bytes() for p in paths], count=REPLICAS)
    engine = default_engine()
    settings = Settings()
    today = ClusterSnapshot(policies=bundled_policies(), default_mode=settings.default_mode, source="bench")
    facts = replace(facts_snapshot(served_facts.namespaces_of(bodies)), source="bench")
    servers = {"today": Server(today, engine), "facts": Server(facts, engine)}
    spent: dict[str, list[float]] = {name: [] for name in servers}
    for index in range(args.warm_rounds + args.rounds):
        order = list(servers.items()) if index % 2 == 0 else list(reversed(servers.items()))
        for name, server in order:
            seconds = server.round(bodies)
            if index >= args.warm_rounds:
                spent[name].append(seconds)
    per = {name: statistics.median(s) / len(bodies) * 1e6 for name, s in spent.items()}
    ratios = [f / t for f, t in zip(spent["facts"], spent["today"], strict=True)]
    charged = len(servers["facts"].ledger)
    print(f"{len(paths)} reviews x {REPLICAS} replicas interleaved ({len(bodies)} requests a round), "
          f"{args.rounds} rounds after {args.warm_rounds} warm-up; ledger: {charged} charges kept")
    print(f"CPU per request through admit: today {per['today']:.1f} us, facts {per['facts']:.1f} us "
          f"(+{per['facts'] - per['today']:.1f} us); facts/today {statistics.median(ratios):.3f} "
          f"(median of rounds; quartiles {statistics.quantiles(ratios, n=4)[0]:.3f}-"
          f"{statistics.quantiles(ratios, n=4)[2]:.3f})")
    print("uptime:" + os.popen("uptime").read().split("load average")[-1].strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
