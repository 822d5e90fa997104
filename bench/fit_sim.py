"""Simulation at the field report's scale: node fit and ResourceQuota, with and without pod-tailor's rules.

    .venv/bin/python bench/fit_sim.py [--pods 50000] [--seed 7]

A modelled cluster of 1,019 nodes (general, memory and spot pools over three zones, GPU and system
nodes tainted) running a dozen DaemonSets (CNI, kube-proxy, CSI, DNS cache, log shipper,
node-exporter, security agent, tracing agent on untainted nodes, GPU device plugin and exporter,
spot termination handler), 200 namespaces of which a third carry a ResourceQuota on requests (some on limits
too), and 50,000 Pods created in bursts: ReplicaSets of 1-200 replicas, each burst decided against
the quota status of before the burst (the watch lags the creates), the quota then charged Pod by Pod
as the API server's quota admission does. Half the workloads state no requests (pod-tailor sizes them
from history); a few have history that asks more than some, or every, node they may use can hold.

Each Pod is replayed three ways, all through `webhook.admission.admit` with the server's ledger:
  authored   the Pod as its author wrote it (no pod-tailor)
  no rules   pod-tailor with `fit.enabled: false` and `quota: {respect: false, supplyRequired: false}`
  rules      pod-tailor as shipped
Printed per way: Pods pod-tailor made unschedulable (no node they may use holds their requests in the
room its DaemonSets leave, while the authored Pod fits one) or rejected (quota admission refuses them
while the authored Pod, at that moment, would pass): the goal is 0 with the rules; Pods pod-tailor
made admissible (the authored Pod is refused: no request or limit a quota requires); admission CPU
per Pod with the rules over without them and over a snapshot without nodes and quotas (target
within 10 %). Also the memory the node
watch keeps per 1,000 nodes.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonpatch
import orjson
from kubernetes.utils import parse_quantity

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.reviews import admission_review  # noqa: E402
from webhook.admission import VerdictCache, admit, default_engine  # noqa: E402
from webhook.admission.ledger import QuotaLedger  # noqa: E402
from webhook.cluster.resources import daemonset_essentials, node_essentials, quota_essentials  # noqa: E402
from webhook.cluster.snapshot import ParseCache, build_snapshot  # noqa: E402
from webhook.config.policies import bundled_policies, load_policy_text  # noqa: E402
from webhook.config.settings import Settings  # noqa: E402
from webhook.core.fit.nodefree import pod_limits, pod_requests  # noqa: E402
from webhook.core.fit.placement import allows, placement  # noqa: E402
from webhook.core.model.profile import Evidence, Recommendation  # noqa: E402
from webhook.core.model.workload import WorkloadKey  # noqa: E402
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot  # noqa: E402

Obj = dict[str, Any]
GiB = 2**30
ZONES = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
# pool, count, allocatable cpu (cores), memory (GiB), extra labels, taint
POOLS = (
    ("general-4", 480, "3920m", 14.5, {"pool": "general"}, None),
    ("general-8", 300, "7910m", 29.5, {"pool": "general"}, None),
    ("memory-4", 100, "3920m", 29.5, {"pool": "memory"}, None),
    ("spot-2", 70, "1930m", 6.5, {"pool": "spot"}, ("spot", "true")),
    ("gpu-8", 40, "7910m", 58.5, {"pool": "gpu"}, ("nvidia.com/gpu", "present")),
    ("system-2", 29, "1930m", 6.5, {"pool": "system"}, ("CriticalAddonsOnly", "true")),
)
NO_RULES = (
    "policies:\n  default:\n    fit: {enabled: false}\n    quota: {respect: false, supplyRequired: false}\n"
)


def nodes() -> list[Obj]:
    found: list[Obj] = []
    for pool, count, cpu, memory, labels, taint in POOLS:
        extra: dict[str, str] = dict(labels)
        for i in range(count):
            name = f"{pool}-{i:04d}"
            spec: Obj = {"providerID": f"aws:///{ZONES[i % 3]}/i-{i:08x}"}
            if taint:
                spec["taints"] = [{"key": taint[0], "value": taint[1], "effect": "NoSchedule"}]
            found.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "resourceVersion": str(1000 + len(found)),
                        "labels": {
                            "kubernetes.io/hostname": name,
                            "kubernetes.io/os": "linux",
                            "kubernetes.io/arch": "amd64",
                            "topology.kubernetes.io/zone": ZONES[i % 3],
                            "node.kubernetes.io/instance-type": pool,
                            **extra,
                        },
                        "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}] * 4,
                    },
                    "spec": spec,
                    "status": {
                        "allocatable": {"cpu": cpu, "memory": f"{int(memory * 1024)}Mi", "pods": "110"},
                        "capacity": {"cpu": cpu, "memory": f"{int(memory * 1024)}Mi", "pods": "110"},
                        "conditions": [
                            {"type": t, "status": "False", "reason": "KubeletHasSufficient" + t}
                            for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
                        ],
                        "images": [
                            {"names": [f"registry.example/img-{j}@sha256:{j:064x}"], "sizeBytes": 10**8}
                            for j in range(30)
                        ],
                        "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Bottlerocket OS 1.20"},
                    },
                }
            )
    return found


ALL_TAINTS = ({"operator": "Exists"},)  # what node agents tolerate: every taint
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
# name, namespace, cpu, memory, placement (nodeSelector / affinity / tolerations), hostNetwork
DAEMONSETS: tuple[tuple[str, str, str, str, Obj, bool], ...] = (
    ("aws-node", "kube-system", "25m", "128Mi", {"tolerations": ALL_TAINTS}, True),
    ("kube-proxy", "kube-system", "100m", "64Mi", {"tolerations": ALL_TAINTS}, True),
    ("ebs-csi-node", "kube-system", "30m", "120Mi", {"tolerations": ALL_TAINTS}, False),
    ("node-local-dns", "kube-system", "25m", "30Mi", {"tolerations": ALL_TAINTS}, True),
    ("fluent-bit", "logging", "100m", "200Mi", {"tolerations": ALL_TAINTS}, False),
    ("node-exporter", "monitoring", "50m", "64Mi",
     {"tolerations": ALL_TAINTS, "nodeSelector": {"kubernetes.io/os": "linux"}}, True),
    ("falco", "security", "100m", "512Mi", {"tolerations": ALL_TAINTS}, False),
    ("otel-agent", "monitoring", "200m", "256Mi", {}, False),  # no tolerations: untainted nodes only
    ("nvidia-device-plugin", "kube-system", "50m", "100Mi",
     {"nodeSelector": {"pool": "gpu"}, "tolerations": (GPU_TOLERATION,)}, False),
    ("dcgm-exporter", "monitoring", "100m", "512Mi",
     {"nodeSelector": {"pool": "gpu"}, "tolerations": (GPU_TOLERATION,)}, False),
    ("node-termination-handler", "kube-system", "50m", "64Mi", {
        "tolerations": (SPOT_TOLERATION,),
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "pool", "operator": "In", "values": ["spot"]}]}]}}},
    }, True),
    ("kured", "kube-system", "10m", "32Mi", {"nodeSelector": {"kubernetes.io/os": "linux"}}, False),
)  # fmt: skip


def daemonsets() -> list[Obj]:
    """The DaemonSets as `GET /apis/apps/v1/daemonsets` lists them (defaults filled in, status written)."""
    found: list[Obj] = []
    for name, namespace, cpu, memory, where, host_network in DAEMONSETS:
        spec: Obj = {
            "containers": [{
                "name": name, "image": f"registry.example/{name}:v1", "imagePullPolicy": "IfNotPresent",
                "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}},
                "volumeMounts": [{"name": "host", "mountPath": "/host", "readOnly": True}],
            }],
            "volumes": [{"name": "host", "hostPath": {"path": "/", "type": ""}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "priorityClassName": "system-node-critical",
            **{key: [dict(t) for t in v] if key == "tolerations" else v for key, v in where.items()},
        }
        if host_network:
            spec["hostNetwork"] = True
        found.append({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": str(500 + len(found))},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
            "status": {"desiredNumberScheduled": 1019, "numberReady": 1019},
        })
    return found


@dataclass
class Workload:
    namespace: str
    name: str
    replicas: int
    cpu: Decimal  # history's p95
    memory: Decimal
    authored: dict[str, str] | None  # the author's requests, or None
    spec: Obj = field(default_factory=dict)  # placement


def workloads(rng: random.Random, total: int) -> list[Workload]:
    found: list[Workload] = []
    count = 0
    while count < total:
        replicas = min(
            total - count, int(rng.paretovariate(1.1)) if rng.random() < 0.8 else rng.randint(20, 200)
        )
        replicas = max(1, min(replicas, 200))
        ns = f"team-{rng.randrange(200):03d}"
        cpu = Decimal(str(round(rng.lognormvariate(-1.6, 1.0), 3))).max(Decimal("0.01"))
        memory = Decimal(int(rng.lognormvariate(19.5, 0.9)))
        roll = rng.random()
        spec: Obj = {}
        if roll < 0.05:  # history larger than the nodes it may use
            cpu, memory = Decimal(rng.choice(["5", "9", "12"])), Decimal(rng.choice([12, 20, 40]) * GiB)
        elif roll < 0.15:
            spec = {"nodeSelector": {"pool": "memory"}}
        elif roll < 0.22:
            spec = {
                "tolerations": [
                    {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
                ],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["spot"]}]}
                            ]
                        }
                    }
                },
            }
        elif roll < 0.25:
            spec = {
                "nodeSelector": {"pool": "gpu"},
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            }
        elif roll < 0.27:
            spec = {"nodeSelector": {"kubernetes.io/arch": "arm64"}}  # no such node yet
        authored = None
        if rng.random() < 0.5:
            authored = {
                "cpu": f"{rng.choice([100, 250, 500])}m",
                "memory": f"{rng.choice([128, 256, 512])}Mi",
            }
        found.append(Workload(ns, f"app-{len(found):05d}", replicas, cpu, memory, authored, spec))
        count += replicas
    return found


def quotas(rng: random.Random, fleet: list[Workload]) -> list[Obj]:
    """A third of the namespaces: requests.cpu/memory at 60-120 % of what their Pods' history asks."""
    asks: dict[str, list[Decimal]] = {}
    for w in fleet:
        entry = asks.setdefault(w.namespace, [Decimal(0), Decimal(0)])
        entry[0] += w.cpu * w.replicas
        entry[1] += w.memory * w.replicas
    found = []
    for ns in sorted(asks):
        if rng.random() >= 1 / 3:
            continue
        share = Decimal(str(rng.uniform(0.6, 1.2)))
        hard = {
            "requests.cpu": f"{int(asks[ns][0] * share * 1000) + 1000}m",
            "requests.memory": str(int(asks[ns][1] * share) + GiB),
        }
        if rng.random() < 0.3:
            hard["limits.memory"] = str(int(asks[ns][1] * share * 2) + 2 * GiB)
        found.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "compute", "namespace": ns, "resourceVersion": "1"},
                "spec": {"hard": hard},
                "status": {"hard": hard, "used": {}},
            }
        )
    return found


DEFAULT_REQUEST = {"cpu": "100m", "memory": "128Mi"}  # the LimitRange of each namespace with a quota
LIMIT_RANGER = "LimitRanger plugin set: cpu, memory request for container app"


def limit_ranges(quota_objects: list[Obj]) -> list[Obj]:
    """Each namespace with a quota has a LimitRange giving Pods default requests (so Pods that state
    none are admitted), not default limits: a quota on limits refuses such Pods."""
    return [
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "defaults", "namespace": q["metadata"]["namespace"], "resourceVersion": "1"},
            "spec": {"limits": [{"type": "Container", "defaultRequest": dict(DEFAULT_REQUEST)}]},
        }
        for q in quota_objects
    ]


def pod_of(w: Workload, index: int, *, limit_ranged: bool) -> Obj:
    """The Pod as pod-tailor's webhook receives it: after LimitRanger, where the namespace has one."""
    resources: Obj = {"requests": dict(w.authored)} if w.authored else {}
    annotations = {}
    if limit_ranged and not w.authored:
        resources, annotations = (
            {"requests": dict(DEFAULT_REQUEST)},
            {"kubernetes.io/limit-ranger": LIMIT_RANGER},
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{w.name}-7d4b9-{index:05d}",
            "namespace": w.namespace,
            "labels": {"app": w.name, "pod-template-hash": "7d4b9"},
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{w.name}-7d4b9",
                    "uid": "u",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "example/app:1",
                    "resources": resources,
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            **w.spec,
        },
    }


def review(pod: Obj, uid: int) -> bytes:
    """The Pod's CREATE as the API server sends it, serialised before the admission CPU is timed."""
    return orjson.dumps(admission_review(pod, uid=f"u-{uid}"))


def apply(pod: Obj, answer: bytes) -> Obj:
    response = orjson.loads(answer)["response"]
    if "patch" not in response:
        return pod
    patched: Obj = jsonpatch.apply_patch(pod, json.loads(base64.b64decode(response["patch"])))
    return patched


class Quotas:
    """The API server's quota admission over a namespace's quota: `used` plus the Pod within `hard`,
    the containers stating what it tracks."""

    def __init__(self, objects: list[Obj]) -> None:
        self.hard = {
            q["metadata"]["namespace"]: {k: _q(v) for k, v in q["spec"]["hard"].items()} for q in objects
        }
        self.used: dict[str, dict[str, Decimal]] = {ns: {} for ns in self.hard}

    def judge(self, pod: Obj) -> str | None:
        ns = pod["metadata"]["namespace"]
        hard = self.hard.get(ns)
        if hard is None:
            return None
        for body in pod["spec"]["containers"]:
            for key in hard:
                section, resource = key.split(".")
                if resource not in ((body.get("resources") or {}).get(section) or {}):
                    return "must specify"
        usage = _usage(pod)
        if any(self.used[ns].get(k, Decimal(0)) + usage[k] > hard[k] for k in hard):
            return "exceeded quota"
        return None

    def charge(self, pod: Obj) -> None:
        ns = pod["metadata"]["namespace"]
        if ns in self.hard:
            for key, amount in _usage(pod).items():
                self.used[ns][key] = self.used[ns].get(key, Decimal(0)) + amount

    def objects(self, version: int) -> list[Obj]:
        return [
            {
                "metadata": {"name": "compute", "namespace": ns, "resourceVersion": str(version)},
                "spec": {"hard": {k: str(v) for k, v in hard.items()}},
                "status": {"used": {k: str(v) for k, v in self.used[ns].items()}},
            }
            for ns, hard in self.hard.items()
        ]


def _q(text: str) -> Decimal:
    return Decimal(str(parse_quantity(text)))  # type: ignore[no-untyped-call]


def _usage(pod: Obj) -> dict[str, Decimal]:
    found = {f"requests.{r}": v for r, v in pod_requests(pod).items()}
    found.update({f"limits.{r}": v for r, v in pod_limits(pod).items()})
    return found


Shape = tuple[str, Any, Any, Decimal, Decimal]  # name, labels, taints, cpu, memory


def schedulable(pod: Obj, shapes: list[Shape]) -> bool:
    where, need = placement(pod), pod_requests(pod)
    return any(
        allows(where, labels, taints, name=name) and cpu >= need["cpu"] and memory >= need["memory"]
        for (name, labels, taints, cpu, memory) in shapes
    )


@dataclass
class Tally:
    unschedulable_by_us: int = 0
    rejected_by_us: int = 0
    admissible_by_us: int = 0
    admitted: int = 0
    refused: int = 0
    capped: int = 0
    cpu_seconds: float = 0.0


def replay(
    fleet: list[Workload],
    *,
    cluster: Callable[[list[Obj], int], ClusterSnapshot] | None,
    profiles: ProfileSnapshot,
    quota_objects: list[Obj],
    shapes: list[Shape],
    tally: Tally,
) -> Iterator[None]:
    """One way (cluster None: authored Pods, no pod-tailor); quota and schedulability judged per Pod.

    Yields after each burst, so that the ways take turns: a machine that is busier for a minute
    then slows every way alike, and the CPU ratios between them stay fair.
    """
    quotas_now, clock = Quotas(quota_objects), [0.0]
    ledger = QuotaLedger(clock=lambda: clock[0])
    cache, engine, uid, version = VerdictCache(512), default_engine(), 0, 1
    snapshot = cluster(quotas_now.objects(version), version) if cluster else None
    for w in fleet:
        for index in range(w.replicas):
            uid += 1
            clock[0] += 0.002  # a ReplicaSet's creates are milliseconds apart
            authored = pod_of(w, index, limit_ranged=w.namespace in quotas_now.hard)
            made = authored
            if snapshot is not None:
                body = review(authored, uid)
                started = time.process_time()
                answer = admit(
                    body, cluster=snapshot, profiles=profiles, engine=engine, cache=cache, ledger=ledger
                )
                tally.cpu_seconds += time.process_time() - started
                made = apply(authored, answer.body)
                tally.capped += bool(answer.capped)
            before = quotas_now.judge(authored)
            refused = quotas_now.judge(made)
            if refused is None:
                quotas_now.charge(made)
                tally.admitted += 1
                if not schedulable(made, shapes) and schedulable(authored, shapes):
                    tally.unschedulable_by_us += 1
                if before is not None:
                    tally.admissible_by_us += 1
            else:
                tally.refused += 1
                if before is None:
                    tally.rejected_by_us += 1
        clock[0] += 10.0  # between bursts the quota status catches up
        version += 1
        if cluster is not None:
            snapshot = cluster(quotas_now.objects(version), version)
        yield


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    raw_nodes = nodes()
    tracemalloc.start()
    kept = [node_essentials(n) for n in raw_nodes]
    kept_bytes = tracemalloc.get_traced_memory()[0]
    base = build_snapshot(
        policies=bundled_policies(),
        settings=Settings(),
        objects={"nodes": kept},
        server_version=(1, 33),
        taken_at=0.0,
        source="bench",
    )
    index_bytes = tracemalloc.get_traced_memory()[0] - kept_bytes
    tracemalloc.stop()
    agents = [daemonset_essentials(d) for d in daemonsets()]
    started = time.process_time()
    base = build_snapshot(  # the rooms the DaemonSets leave: what the scheduler sees free
        policies=bundled_policies(), settings=Settings(), objects={"nodes": kept, "daemonsets": agents},
        server_version=(1, 33), taken_at=0.0, source="bench",
    )
    rebuilt = time.process_time() - started
    per_thousand = 1000 / len(raw_nodes) / 2**20  # bytes -> MiB per 1,000 nodes
    groups = len(base.nodes.groups) if base.nodes else 0
    print(
        f"nodes: {len(raw_nodes)} ({groups} groups); per 1,000 nodes: {kept_bytes * per_thousand:.2f} MiB "
        f"stored + {index_bytes * per_thousand:.2f} MiB index (the API's JSON of them: "
        f"{len(orjson.dumps(raw_nodes)) * per_thousand:.1f} MiB)"
    )
    members = [m for g in (base.nodes.groups if base.nodes else ()) for m in g.members]
    taken = sorted({(m.taken or (Decimal(0), Decimal(0)))[0] for m in members})
    print(
        f"DaemonSets: {len(agents)}, subtracted from each node's allocatable (cpu taken per node: "
        f"{', '.join(f'{t * 1000:.0f}m' for t in taken)}); snapshot with nodes and DaemonSets built in "
        f"{rebuilt * 1000:.0f} ms"
    )
    fleet = workloads(rng, args.pods)
    quota_objects = quotas(rng, fleet)
    evidence = Evidence("14d", 20_160, 336.0, 95.0, 0.15, 0.93)
    profiles = ProfileSnapshot(
        {
            WorkloadKey(w.namespace, "Deployment", w.name): {"app": Recommendation(w.cpu, w.memory, evidence)}
            for w in fleet
        }
    )
    shapes = [
        (s.name, s.labels, s.taints, s.cpu, s.memory)
        for g in (base.nodes.groups if base.nodes else ())
        for s in g.members
    ]
    namespaces = {w.namespace: {"pod-tailor.io/mode": "enforce"} for w in fleet}
    ranges = limit_ranges(quota_objects)
    pods = sum(w.replicas for w in fleet)
    print(
        f"workloads: {len(fleet)} ReplicaSets, {pods} Pods; {len(quota_objects)} of {len(namespaces)} "
        f"namespaces with a quota"
    )

    def snapshots(policies: Any, *, facts: bool) -> Callable[[list[Obj], int], ClusterSnapshot]:
        parsed = ParseCache()  # kept across rebuilds, as the refresher keeps it

        def build(quota_now: list[Obj], _version: int) -> ClusterSnapshot:
            objects: dict[str, list[Obj]] = {"limitranges": ranges}
            if facts:
                objects |= {"nodes": kept, "daemonsets": agents,
                            "resourcequotas": [quota_essentials(q) for q in quota_now]}
            snapshot = build_snapshot(
                policies=policies,
                settings=Settings(),
                objects=objects,
                server_version=(1, 33),
                taken_at=0.0,
                source="bench",
                cache=parsed,
            )
            return replace(snapshot, namespaces=namespaces)

        return build

    ways = {
        "authored": None,
        "today (no node/quota facts)": snapshots(bundled_policies(), facts=False),
        "no rules": snapshots(load_policy_text(NO_RULES), facts=True),
        "rules": snapshots(bundled_policies(), facts=True),
    }
    results = {name: Tally() for name in ways}
    turns = [
        replay(fleet, cluster=cluster, profiles=profiles, quota_objects=quota_objects, shapes=shapes,
               tally=results[name])
        for name, cluster in ways.items()
    ]  # fmt: skip
    for burst in range(len(fleet)):  # the ways burst by burst, in turn (every other burst reversed)
        for turn in turns if burst % 2 == 0 else reversed(turns):
            next(turn)
    for name, tally in results.items():
        per_pod = tally.cpu_seconds / pods * 1e6
        print(
            f"{name:28} admitted {tally.admitted:6} refused {tally.refused:6} | made unschedulable "
            f"{tally.unschedulable_by_us:5} made rejected {tally.rejected_by_us:5} made admissible "
            f"{tally.admissible_by_us:5} capped {tally.capped:5} | admission CPU {per_pod:6.1f} us/Pod"
        )
    rules, today = results["rules"].cpu_seconds, results["today (no node/quota facts)"].cpu_seconds
    print(
        f"admission CPU per Pod, rules over today: {rules / today:.3f} (target <= 1.10); "
        f"rules over no rules: {rules / results['no rules'].cpu_seconds:.3f}"
    )


if __name__ == "__main__":
    main()
