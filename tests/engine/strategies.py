"""Hypothesis strategies for Pods as the API server hands them to a mutating webhook."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from webhook.core.facts import ClusterFacts
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.pod import EXCLUDE_ANNOTATION, PROBE_PATH_ANNOTATION, SKIP_LABEL
from webhook.core.model.profile import Evidence, NoRecommendation, Recommendation

names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
cpu = st.sampled_from(["10m", "50m", "100m", "250m", "500m", "1", "2", "1500m"])
memory = st.sampled_from(["16Mi", "64Mi", "128Mi", "256Mi", "1Gi", "2Gi", "1G", "500M"])
ORDER = {
    "cpu": ["10m", "50m", "100m", "250m", "500m", "1", "1500m", "2"],
    "memory": ["16Mi", "64Mi", "128Mi", "256Mi", "500M", "1G", "1Gi", "2Gi"],
}


@st.composite
def resources(draw: st.DrawFn) -> dict[str, Any]:
    """Requests and limits as defaulting leaves them: limits imply equal-or-lower requests."""
    out: dict[str, dict[str, str]] = {}
    for resource, values in ORDER.items():
        shape = draw(st.sampled_from(["none", "request", "limit", "both"]))
        if shape == "none":
            continue
        low = draw(st.integers(0, len(values) - 1))
        high = draw(st.integers(low, len(values) - 1))
        if shape in ("request", "both", "limit"):
            out.setdefault("requests", {})[resource] = values[low if shape != "limit" else high]
        if shape in ("limit", "both"):
            out.setdefault("limits", {})[resource] = values[high]
    return out


HANDLERS: list[dict[str, Any]] = [
    {"tcpSocket": {"port": 8080}},
    {"httpGet": {"path": "/", "port": 8080, "scheme": "HTTP"}},
    {"exec": {"command": ["/bin/true"]}},
    {"grpc": {"port": 9090, "service": ""}},
]


@st.composite
def probes(draw: st.DrawFn) -> dict[str, Any]:
    probe: dict[str, Any] = dict(draw(st.sampled_from(HANDLERS)))
    probe.update(
        initialDelaySeconds=0, timeoutSeconds=1, periodSeconds=10, successThreshold=1, failureThreshold=3
    )
    return probe


@st.composite
def containers(draw: st.DrawFn, name: str, *, init: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "image": "example/app:1.0",
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "resources": draw(resources()),
    }
    port_names = draw(st.lists(st.sampled_from(["http", "http-alt", "metrics", "grpc", None]), max_size=3))
    ports: list[dict[str, Any]] = []
    for index, port_name in enumerate(port_names):
        port: dict[str, Any] = {
            "containerPort": 8000 + index,
            "protocol": draw(st.sampled_from(["TCP", "TCP", "UDP"])),
        }
        if port_name and port_name not in {p.get("name") for p in ports}:
            port["name"] = port_name
        ports.append(port)
    if ports:
        body["ports"] = ports
    if init and draw(st.booleans()):
        body["restartPolicy"] = "Always"  # a native sidecar
    if not init or body.get("restartPolicy") == "Always":
        for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
            if draw(st.integers(0, 3)) == 0:
                body[kind] = draw(probes())
        hook = draw(
            st.sampled_from([None, {"sleep": {"seconds": 3}}, {"exec": {"command": ["sleep", "12"]}}])
        )
        if hook and not init:
            body["lifecycle"] = {"preStop": hook}
    return body


@st.composite
def pods(draw: st.DrawFn, *, pod_level: bool = False) -> dict[str, Any]:
    all_names = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    split = draw(st.integers(1, len(all_names)))
    regular = [draw(containers(name)) for name in all_names[:split]]
    init = [draw(containers(name, init=True)) for name in all_names[split:]]
    job = draw(st.booleans()) and draw(st.booleans())
    annotations: dict[str, str] = draw(
        st.dictionaries(
            st.sampled_from(["team", "a~b", "x/y", "example.com/odd~key/path"]), st.just("v"), max_size=2
        )
    )
    if draw(st.integers(0, 4)) == 0:
        annotations[EXCLUDE_ANNOTATION] = draw(
            st.sampled_from(["probes", "preStop", "resources", "gracePeriod"])
        )
    if draw(st.integers(0, 4)) == 0:
        annotations[PROBE_PATH_ANNOTATION] = "/healthz"
    labels = {"app": "web"}
    if draw(st.sampled_from([False] * 9 + [True])):
        labels[SKIP_LABEL] = "true"
    metadata: dict[str, Any] = {"generateName": "web-", "namespace": "shop", "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    if job:
        metadata["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "migrate", "uid": "u1", "controller": True}
        ]
    spec: dict[str, Any] = {
        "containers": regular,
        "restartPolicy": "Never" if job else "Always",
        "terminationGracePeriodSeconds": draw(st.sampled_from([30, 30, 5, 60, 0])),
        "dnsPolicy": "ClusterFirst",
    }
    if init:
        spec["initContainers"] = init
    if draw(st.booleans()):
        spec["hostNetwork"] = True
    if pod_level and draw(st.booleans()):
        spec["resources"] = {
            "limits": {"cpu": "4", "memory": "8Gi"},
            "requests": {"cpu": "4", "memory": "8Gi"},
        }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


facts = st.builds(
    ClusterFacts,
    server_version=st.sampled_from([None, (1, 28), (1, 30), (1, 34)]),
    limit_ranges=st.sampled_from(
        [
            (),
            (LimitRangeItem("Container", min={"cpu": Decimal("0.05")}, max={"memory": Decimal(4 * 2**30)}),),
            (LimitRangeItem("Container", max_limit_request_ratio={"memory": Decimal("1.5")}),),
            (
                LimitRangeItem(
                    "Pod", max={"memory": Decimal(2**30)}, max_limit_request_ratio={"cpu": Decimal(2)}
                ),
            ),
            (LimitRangeItem("Pod", min={"cpu": Decimal("0.1")}, max={"cpu": Decimal(1)}),),
        ]
    ),
)


def profile_for(draw: st.DrawFn, names: list[str]) -> dict[str, Any]:
    evidence = Evidence(
        window="14d", samples=2000, hours=200, cpu_percentile=95, memory_margin=0.15, confidence=0.9
    )
    out: dict[str, Any] = {}
    for name in names:
        choice = draw(st.integers(0, 2))
        if choice == 1:
            out[name] = Recommendation(
                cpu=Decimal(draw(st.sampled_from(["0.005", "0.3", "3.3333"]))),
                memory=Decimal(draw(st.sampled_from([2**20, 300 * 2**20 + 7, 2**33]))),
                evidence=evidence,
                startup_cpu=Decimal("2"),
                startup_seconds=draw(st.sampled_from([None, 30.0, 900.0])),
            )
        elif choice == 2:
            out[name] = NoRecommendation("too little history")
    return out
