"""Services, Ingresses and Gateway API routes, read into what the traffic path needs (pure).

Parsing happens once per object version (the cluster adapter caches it), never per Pod: a Pod's path
is then a scan of its namespace's few Services. Anything that cannot be read (a selector that is not a
map of strings, a port that is neither a number nor a name, an annotation that is not a number) is left
out, with the reason returned for the adapter to log: a Service must never make an admission fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType
from typing import Any

__all__ = [
    "SLEEP_ANNOTATION",
    "NamespaceTraffic",
    "PathKind",
    "Route",
    "Service",
    "index_traffic",
    "parse_ingress",
    "parse_ingress_class",
    "parse_route",
    "parse_service",
]

SLEEP_ANNOTATION = "pod-tailor.io/prestop-sleep-seconds"  # on a Service, Ingress or route: at least this
_ALB_ATTRIBUTES = "alb.ingress.kubernetes.io/target-group-attributes"
_ALB_TARGET_TYPE = "alb.ingress.kubernetes.io/target-type"
_NLB_ATTRIBUTES = "service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"
_NLB_TARGET_TYPE = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
_GKE_NEG = "cloud.google.com/neg"
_INGRESS_CLASS = "kubernetes.io/ingress.class"
_DEFAULT_CLASS = "ingressclass.kubernetes.io/is-default-class"
_DELAY = re.compile(r"(?:^|,)\s*deregistration_delay\.timeout_seconds\s*=\s*(\d{1,4})\s*(?:,|$)")
# IngressClass controllers (and legacy class names) whose load balancer sends straight to Pod IPs or
# node ports from outside the cluster: it stops only after the cloud controller deregisters the target.
_CLOUD_CONTROLLERS = {"ingress.k8s.aws/alb": "alb", "networking.gke.io/ingress-gce": "gce"}
_CLOUD_CLASSES = {"alb": "alb", "gce": "gce", "gce-internal": "gce"}
_KNOWN_CONTROLLERS = {"k8s.io/ingress-nginx": "nginx", "traefik.io/ingress-controller": "traefik"}


class PathKind(IntEnum):
    """How far a Pod's traffic comes from, in the order the pause must grow."""

    IN_CLUSTER = 1  # kube-proxy / DNS only: endpoint removal reaches every node in seconds
    INGRESS = 2  # an ingress controller or Gateway implementation inside the cluster
    LOAD_BALANCER = 3  # a load balancer outside the cluster (type LoadBalancer/NodePort, ALB, NEG)

    @property
    def key(self) -> str:
        return {1: "inCluster", 2: "ingress", 3: "loadBalancer"}[self.value]


@dataclass(frozen=True, slots=True)
class Service:
    """What of a Service the traffic path reads."""

    name: str
    selector: tuple[tuple[str, str], ...]  # empty: selects no Pod (ExternalName, manual Endpoints)
    type: str  # ClusterIP, NodePort, LoadBalancer
    headless: bool = False
    local: bool = False  # externalTrafficPolicy: Local
    target_ports: frozenset[int | str] = frozenset()  # container port numbers or names
    cloud: str = ""  # "nlb ip", "neg": a cloud load balancer that targets Pods directly
    deregistration: int | None = None  # a deregistration delay its annotations state
    sleep: int | None = None  # pod-tailor.io/prestop-sleep-seconds

    def selects(self, labels: Mapping[str, str]) -> bool:
        return bool(self.selector) and all(labels.get(key) == value for key, value in self.selector)

    @property
    def kind(self) -> PathKind:
        return PathKind.LOAD_BALANCER if self.type in ("LoadBalancer", "NodePort") else PathKind.IN_CLUSTER

    def describe(self) -> str:
        shape = "headless" if self.headless else f"type {self.type}"
        extra = ", externalTrafficPolicy Local" if self.local else ""
        return f"Service {self.name} {shape}{extra}" + (f" ({self.cloud})" if self.cloud else "")


@dataclass(frozen=True, slots=True)
class Route:
    """An Ingress, HTTPRoute or GRPCRoute, with the Services of its own namespace it sends to."""

    kind: str
    name: str
    services: frozenset[str]
    class_name: str = ""  # the IngressClass (or legacy annotation) as written
    controller: str = ""  # "alb", "gce", "nginx", ... when recognisable
    path: PathKind = PathKind.INGRESS
    deregistration: int | None = None
    sleep: int | None = None

    def describe(self) -> str:
        shown = self.controller or self.class_name
        return f"{self.kind} {self.name}" + (f", class {shown}" if shown else "")


@dataclass(frozen=True, slots=True)
class NamespaceTraffic:
    """One namespace's Services and the routes to each, plus the Pod label keys the selectors read."""

    services: tuple[Service, ...] = ()
    routes: Mapping[str, tuple[Route, ...]] = field(default_factory=dict)  # by Service name
    label_keys: frozenset[str] = frozenset()


def _string_map(value: object) -> dict[str, str] | None:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in value.items()):
        return None
    return dict(value)


def _items(parent: object, key: str) -> list[Any]:
    """`parent[key]` when it is a list, else nothing to iterate."""
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, list) else []


def _seconds(value: object) -> int | None:
    """A whole number of seconds from an annotation, 0 to 3600; None when it is anything else."""
    text = str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    return int(text) if text.isdigit() and int(text) <= 3600 else None


def _delay(annotations: Mapping[str, str], key: str) -> int | None:
    match = _DELAY.search(annotations.get(key, ""))
    return int(match[1]) if match and int(match[1]) <= 3600 else None


def _metadata(obj: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    return str(metadata.get("name") or ""), _string_map(metadata.get("annotations")) or {}


def parse_service(obj: Mapping[str, Any]) -> tuple[Service | None, tuple[str, ...]]:
    """The Service, or None with why; the second item lists what was left out of it."""
    name, annotations = _metadata(obj)
    spec = obj.get("spec")
    if not name or not isinstance(spec, Mapping):
        return None, ("no name or spec",)
    selector = _string_map(spec.get("selector"))
    if selector is None:
        return None, (f"Service {name}: selector is not a map of strings",)
    service_type = str(spec.get("type") or "ClusterIP")
    if service_type == "ExternalName":
        selector = {}
    left_out: list[str] = []
    targets: set[int | str] = set()
    for port in _items(spec, "ports"):
        target = port.get("targetPort", port.get("port")) if isinstance(port, Mapping) else None
        if isinstance(target, str) and target.isdigit():
            targets.add(int(target))
        elif (isinstance(target, str) and target) or type(target) is int:
            targets.add(target)
        else:
            left_out.append(f"Service {name}: port {port!r} has no usable targetPort")
    cloud = ""
    if annotations.get(_NLB_TARGET_TYPE) == "ip":
        cloud = "nlb ip"
    elif _neg_exposed(annotations.get(_GKE_NEG)):
        cloud = "neg"
    sleep = _seconds(annotations[SLEEP_ANNOTATION]) if SLEEP_ANNOTATION in annotations else None
    if SLEEP_ANNOTATION in annotations and sleep is None:
        left_out.append(f"Service {name}: {SLEEP_ANNOTATION} is not 0-3600 seconds")
    return Service(
        name=name,
        selector=tuple(sorted(selector.items())),
        type=service_type,
        headless=spec.get("clusterIP") == "None",
        local=spec.get("externalTrafficPolicy") == "Local" and service_type in ("LoadBalancer", "NodePort"),
        target_ports=frozenset(targets),
        cloud=cloud,
        deregistration=_delay(annotations, _NLB_ATTRIBUTES),
        sleep=sleep,
    ), tuple(left_out)


def _neg_exposed(value: str | None) -> bool:
    """GKE's `cloud.google.com/neg: '{"ingress": true}'` (or exposed ports): container-native LB."""
    if not value:
        return False
    try:
        neg = json.loads(value)
    except ValueError:
        return False
    return isinstance(neg, dict) and bool(neg.get("ingress") or neg.get("exposed_ports"))


def parse_ingress_class(obj: Mapping[str, Any]) -> tuple[str, str, bool] | None:
    """(name, controller, is the default class) of an IngressClass."""
    name, annotations = _metadata(obj)
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    if not name:
        return None
    return name, str(spec.get("controller") or ""), annotations.get(_DEFAULT_CLASS) == "true"


def _backend_service(backend: object) -> str | None:
    service = backend.get("service") if isinstance(backend, Mapping) else None
    name = service.get("name") if isinstance(service, Mapping) else None
    return name if isinstance(name, str) and name else None


def parse_ingress(
    obj: Mapping[str, Any], classes: Mapping[str, str], *, default_class: str = ""
) -> Route | None:
    """An Ingress as a Route; `classes` maps IngressClass names to their controllers."""
    name, annotations = _metadata(obj)
    spec = obj.get("spec")
    if not name or not isinstance(spec, Mapping):
        return None
    backends = [spec.get("defaultBackend")]
    for rule in _items(spec, "rules"):
        http = rule.get("http") if isinstance(rule, Mapping) else None
        for path in _items(http, "paths"):
            backends.append(path.get("backend") if isinstance(path, Mapping) else None)
    services = frozenset(service for backend in backends if (service := _backend_service(backend)))
    class_name = str(spec.get("ingressClassName") or annotations.get(_INGRESS_CLASS) or default_class)
    controller_id = classes.get(class_name, "")
    controller = (_CLOUD_CONTROLLERS.get(controller_id) or _CLOUD_CLASSES.get(class_name)
                  or _KNOWN_CONTROLLERS.get(controller_id, ""))
    cloud = controller in ("alb", "gce")
    if controller == "alb" and annotations.get(_ALB_TARGET_TYPE, "instance") == "ip":
        controller = "alb ip"
    return Route(
        kind="Ingress",
        name=name,
        services=services,
        class_name=class_name,
        controller=controller,
        path=PathKind.LOAD_BALANCER if cloud else PathKind.INGRESS,
        deregistration=_delay(annotations, _ALB_ATTRIBUTES),
        sleep=_seconds(annotations.get(SLEEP_ANNOTATION)),
    )


def parse_route(obj: Mapping[str, Any], *, namespace: str) -> Route | None:
    """A Gateway API HTTPRoute or GRPCRoute: the Services of `namespace` its rules send to."""
    name, annotations = _metadata(obj)
    spec = obj.get("spec")
    if not name or not isinstance(spec, Mapping):
        return None
    services = set()
    for rule in _items(spec, "rules"):
        for ref in _items(rule, "backendRefs"):
            if not isinstance(ref, Mapping) or ref.get("group", "") not in ("", "core"):
                continue
            service = ref.get("kind", "Service") == "Service" and ref.get("namespace", namespace) == namespace
            if service and isinstance(ref.get("name"), str):
                services.add(ref["name"])
    parents = [ref.get("name") for ref in _items(spec, "parentRefs") if isinstance(ref, Mapping)]
    return Route(
        kind=str(obj.get("kind") or "HTTPRoute"),
        name=name,
        services=frozenset(services),
        class_name=f"gateway {parents[0]}" if parents and isinstance(parents[0], str) else "",
        sleep=_seconds(annotations.get(SLEEP_ANNOTATION)),
    )


def index_traffic(
    services: Iterable[tuple[str, Service]], routes: Iterable[tuple[str, Route]]
) -> dict[str, NamespaceTraffic]:
    """(namespace, Service) and (namespace, Route) pairs -> the namespace's traffic, sorted by name."""
    by_namespace: dict[str, list[Service]] = {}
    for namespace, service in services:
        by_namespace.setdefault(namespace, []).append(service)
    to_service: dict[str, dict[str, list[Route]]] = {}
    for namespace, route in routes:
        for name in route.services:
            to_service.setdefault(namespace, {}).setdefault(name, []).append(route)
    return {
        namespace: NamespaceTraffic(
            services=tuple(sorted(namespace_services, key=lambda s: s.name)),
            routes=MappingProxyType({
                name: tuple(sorted(service_routes, key=lambda r: (r.kind, r.name)))
                for name, service_routes in to_service.get(namespace, {}).items()
            }),
            label_keys=frozenset(key for service in namespace_services for key, _ in service.selector),
        )
        for namespace, namespace_services in by_namespace.items()
    }
