"""Services, Ingresses, IngressClasses and Gateway API routes as a 1.33 API server returns them.

What `kubectl get -o json` prints after `kubectl apply`: the defaults the API server fills in (a
Service's clusterIP(s), ipFamilies, sessionAffinity, port protocol and targetPort, internalTrafficPolicy;
a LoadBalancer's nodePorts, allocateLoadBalancerNodePorts and externalTrafficPolicy; its status once the
cloud controller gave it an address). The fake API server (tests/kubefake.py) adds resourceVersion, uid
and creationTimestamp.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.cluster.snapshot import ParseCache, traffic_index
from webhook.core.facts import ClusterFacts
from webhook.core.model.routes import NamespaceTraffic

GATEWAY_PREFIX = "/apis/gateway.networking.k8s.io/v1"


def service(
    name: str = "web",
    *,
    selector: Mapping[str, str] | None = None,
    kind: str = "ClusterIP",
    ports: Sequence[Mapping[str, Any]] = ({"port": 80, "targetPort": 8080},),
    annotations: Mapping[str, str] | None = None,
    headless: bool = False,
    local: bool = False,
    namespace: str = "shop",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": kind,
        "sessionAffinity": "None",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster",
    }
    status: dict[str, Any] = {"loadBalancer": {}}
    if kind == "ExternalName":
        spec = {"type": kind, "externalName": "db.example.com", "sessionAffinity": "None"}
    else:
        spec["selector"] = dict(selector if selector is not None else {"app": name})
        spec["clusterIP"] = "None" if headless else "10.96.41.17"
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec["ports"] = []
        for index, port in enumerate(ports):
            entry = {"name": f"p{index}", "protocol": "TCP", "targetPort": port["port"], **port}
            if kind in ("NodePort", "LoadBalancer"):
                entry["nodePort"] = 30080 + index
            spec["ports"].append(entry)
    if kind in ("NodePort", "LoadBalancer"):
        spec["externalTrafficPolicy"] = "Local" if local else "Cluster"
    if kind == "LoadBalancer":
        spec["allocateLoadBalancerNodePorts"] = True
        status = {
            "loadBalancer": {"ingress": [{"hostname": "k8s-shop-web-0a1b2c.elb.eu-west-1.amazonaws.com"}]}
        }
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec, "status": status}


def ingress(
    name: str = "web",
    *,
    backends: Sequence[str] = ("web",),
    class_name: str | None = "nginx",
    annotations: Mapping[str, str] | None = None,
    default_backend: str | None = None,
    namespace: str = "shop",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "rules": [
            {
                "host": "shop.example.com",
                "http": {
                    "paths": [
                        {
                            "path": f"/{backend}",
                            "pathType": "Prefix",
                            "backend": {"service": {"name": backend, "port": {"number": 80}}},
                        }
                        for backend in backends
                    ]
                },
            }
        ],
    }
    if class_name is not None:
        spec["ingressClassName"] = class_name
    if default_backend is not None:
        spec["defaultBackend"] = {"service": {"name": default_backend, "port": {"name": "http"}}}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "generation": 1}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": metadata,
        "spec": spec,
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}},
    }


def ingress_class(name: str, controller: str, *, default: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "generation": 1}
    if default:
        metadata["annotations"] = {"ingressclass.kubernetes.io/is-default-class": "true"}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": metadata,
        "spec": {"controller": controller},
    }


def route(
    name: str = "web",
    *,
    kind: str = "HTTPRoute",
    backends: Sequence[Mapping[str, Any]] = ({"name": "web", "port": 80},),
    gateway: str = "public",
    namespace: str = "shop",
) -> dict[str, Any]:
    refs = [{"group": "", "kind": "Service", "weight": 1, **backend} for backend in backends]
    rule: dict[str, Any] = {"backendRefs": refs}
    if kind == "HTTPRoute":
        rule["matches"] = [{"path": {"type": "PathPrefix", "value": "/"}}]
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {
            "parentRefs": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "name": gateway,
                    "namespace": "gateways",
                }
            ],
            "rules": [rule],
        },
        "status": {"parents": []},
    }


PLURALS = {
    "Service": "services",
    "Ingress": "ingresses",
    "IngressClass": "ingressclasses",
    "HTTPRoute": "httproutes",
    "GRPCRoute": "grpcroutes",
}


def facts(*objects: Mapping[str, Any], namespace: str = "shop") -> ClusterFacts:
    """Cluster facts for `namespace` with these objects watched (Services watched even when none)."""
    grouped: dict[str, list[Any]] = {"services": []}
    for obj in objects:
        grouped.setdefault(PLURALS[obj["kind"]], []).append(obj)
    found = traffic_index(grouped, ParseCache()) or {}
    return ClusterFacts(server_version=(1, 33), traffic=found.get(namespace, NamespaceTraffic()))
