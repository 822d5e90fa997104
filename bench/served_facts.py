"""The cluster `bench/serve.py --cluster-facts` serves pod-tailor: node fit and quota rules on every Pod.

A real deployment gets its Nodes, DaemonSets and ResourceQuotas through the kubeconfig from the API
server; here that is the shared HTTP-level fake API server (tests/kubefake.py) with bench/fit_sim.py's
modelled cluster (1,019 nodes in six pools, 12 DaemonSets) plus a pool of small GKE spot nodes for the
corpus' `cloud.google.com/gke-spot` Pods. Every namespace the reviews use is opted in and has a
ResourceQuota on requests.cpu/requests.memory whose `hard` no run reaches, so the fit check, the quota
check and the ledger run on every Pod without a fallback; except `TIGHT`, whose quota leaves less than
pod-tailor's default memory request, and the spot pool, whose DaemonSets leave less than it: the
corpus Pods there are capped, which `capped` reads from the server's metrics to show that both rules
ran in the measured load.

No quota controller writes `status.used` here (the bench sends reviews, it creates no Pods), so the
quota ledger (webhook/admission/ledger.py) keeps what each admitted Pod charges until its `ttl`
(120 s), at most `max_entries` (10,000) per quota: bounded over a run of any length, and at the
bench's rates the default namespace's ledger is at that bound within seconds.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
from fit_sim import daemonsets, nodes  # bench/, on the path as serve.py runs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # kubefake is imported as the tests import it
from kubefake import FakeKube  # noqa: E402

from tests.cluster.helpers import namespace  # noqa: E402
from tests.engine.podkit import pod  # noqa: E402
from tests.fit.kit import node, quota  # noqa: E402
from tests.reviews import admission_review  # noqa: E402

TIGHT = "litmus"  # the corpus' chaos-exporter; its quota has 100Mi of requests.memory left
SPOT = {"cloud.google.com/gke-spot": "true"}  # the corpus' `workload` Job selects these nodes
SPOT_NODES = 20
# e2-small-like spot nodes: the DaemonSets on untainted nodes take 640m and 1406Mi of them, leaving
# 194Mi, under pod-tailor's default memory request (256Mi).
SPOT_CPU, SPOT_MEMORY = "940m", "1600Mi"
ROOMY = {"requests.cpu": "100000", "requests.memory": "1000Ti"}  # above 10,000 ledger entries of any Pod


def namespaces_of(reviews: Iterable[bytes]) -> set[str]:
    found = set()
    for body in reviews:
        match = re.search(rb'"namespace":"([a-z0-9-]+)"', body)
        if match:
            found.add(match.group(1).decode())
    return found


def objects(names: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """The modelled cluster's objects by resource plural, quotas in every namespace of `names` (what
    `cluster` serves, and what bench/served_admit.py builds its snapshot from)."""
    spots = [node(f"gke-spot-{index:03d}", cpu=SPOT_CPU, memory=SPOT_MEMORY, labels=SPOT)
             for index in range(SPOT_NODES)]  # fmt: skip
    found: dict[str, list[dict[str, Any]]] = {
        "nodes": [*nodes(), *spots], "daemonsets": daemonsets(), "namespaces": [], "resourcequotas": []
    }
    for name in sorted(set(names)):
        found["namespaces"].append(namespace(name, "enforce"))
        hard = dict(ROOMY, **({"requests.memory": "100Mi"} if name == TIGHT else {}))
        found["resourcequotas"].append(quota(hard=hard, used=dict.fromkeys(hard, "0"), namespace=name))
    return found


@contextlib.contextmanager
def cluster(folder: Path, names: Iterable[str]) -> Iterator[Path]:
    """The fake API server with the modelled cluster (`objects`), quotas in every namespace of
    `names`; yields the kubeconfig that `pod-tailor serve --kubeconfig` reads it through."""
    with FakeKube() as kube:
        kube.serve_version(1, 33)
        for items in objects(names).values():
            for item in items:
                kube.put(item)
        yield kube.write_kubeconfig(folder / "kubeconfig")


def probe(uid: str) -> bytes:
    """A dry-run review of a Pod stating no requests on the spot nodes: capped by node fit once the
    server has the facts."""
    subject: dict[str, Any] = pod(nodeSelector=SPOT)
    subject["metadata"]["namespace"] = "default"
    return orjson.dumps(admission_review(subject, uid=uid, dry_run=True))


def capped(metrics: str) -> dict[str, int]:
    """Rule -> decisions it capped and that were applied (not dry runs), from the server's /metrics."""
    found: dict[str, int] = {}
    pattern = r"pod_tailor_capped_decisions_total\{([^}]*)\} ([0-9.e+]+)"
    for labels, value in re.findall(pattern, metrics):
        fields = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if fields.get("applied") == "true":
            found[fields["rule"]] = found.get(fields["rule"], 0) + int(float(value))
    return found
