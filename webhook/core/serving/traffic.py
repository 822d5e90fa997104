"""The path a Pod's traffic takes, and the preStop pause that path needs (pure).

Endpoint removal and SIGTERM start together. Traffic that only crosses kube-proxy stops within seconds;
an ingress controller must first update its upstreams, and a load balancer outside the cluster must
first deregister the target, so the pause grows with the furthest hop. A Pod no Service selects yet
keeps the policy's default pause: Services are often created after the first Pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.core.model.routes import NamespaceTraffic, PathKind, Route, Service
from webhook.core.policy.policies import PathSleeps

__all__ = ["TrafficPath", "pause_for", "readiness_gap", "traffic_path"]


@dataclass(frozen=True, slots=True)
class TrafficPath:
    """The Services that select a Pod and the routes to them (both empty: none selects it yet)."""

    services: tuple[Service, ...] = ()
    routes: tuple[Route, ...] = ()

    @property
    def kind(self) -> PathKind | None:
        kinds = [service.kind for service in self.services] + [route.path for route in self.routes]
        kinds += [PathKind.LOAD_BALANCER for service in self.services if service.cloud]
        return max(kinds, default=None)

    @property
    def deregistration(self) -> int | None:
        delays = [s.deregistration for s in self.services if s.deregistration]
        delays += [r.deregistration for r in self.routes if r.deregistration]
        return max(delays, default=None)

    @property
    def asked(self) -> int | None:
        """The longest pause a Service or route asks for with `pod-tailor.io/prestop-sleep-seconds`."""
        sleeps = [s.sleep for s in self.services if s.sleep is not None]
        sleeps += [r.sleep for r in self.routes if r.sleep is not None]
        return max(sleeps, default=None)

    def targeted(self) -> frozenset[int | str]:
        """Container ports (numbers or names) the selecting Services send to."""
        return frozenset(port for service in self.services for port in service.target_ports)

    def describe(self) -> str:
        """`behind Service web type LoadBalancer + Ingress web, class alb, deregistration 20s`."""
        if not self.services:
            return "no Service selects the Pod yet"
        shown = [service.describe() for service in self.services[:2]]
        shown += [route.describe() for route in self.routes[:2]]
        more = len(self.services) + len(self.routes) - len(shown)
        text = "behind " + " + ".join(shown) + (f" + {more} more" if more > 0 else "")
        if self.deregistration:
            text += f", deregistration {self.deregistration}s"
        return text


def traffic_path(traffic: NamespaceTraffic | None, labels: Mapping[str, str]) -> TrafficPath | None:
    """The Pod's path; None when the cluster's Services are not known at all (no cluster watch)."""
    if traffic is None:
        return None
    services = tuple(service for service in traffic.services if service.selects(labels))
    routes: dict[tuple[str, str], Route] = {}
    for service in services:
        for route in traffic.routes.get(service.name, ()):
            routes.setdefault((route.kind, route.name), route)
    return TrafficPath(services, tuple(routes.values()))


def pause_for(path: TrafficPath | None, *, default: int, sleeps: PathSleeps) -> tuple[int, str]:
    """(seconds, why) of the preStop pause for `path`; `default` when the path is unknown or empty.

    The pause is the policy's value for the furthest hop; a stated deregistration delay counts from
    when the removal reaches the controller (plus the in-cluster pause), and a Service or route that
    asks for more gets it.
    """
    if path is None:
        return default, ""
    kind = path.kind
    if kind is None:
        return default, f"{path.describe()}: default pause"
    seconds = sleeps.for_kind(kind)
    why = f"{path.describe()}; {kind.key} {seconds}s"
    if path.deregistration is not None and path.deregistration + sleeps.in_cluster > seconds:
        seconds = path.deregistration + sleeps.in_cluster
        why = f"{path.describe()} + {sleeps.in_cluster}s to reach the controller"
    if path.asked is not None and path.asked > seconds:
        seconds = path.asked
        why = f"{path.describe()}; asked for {seconds}s by pod-tailor.io/prestop-sleep-seconds"
    return seconds, why


def _port_number(port: object, ports: list[Mapping[str, Any]]) -> int | None:
    if type(port) is int:
        return port
    named = [p["containerPort"] for p in ports if p.get("name") == port]
    return named[0] if named else None


def readiness_gap(container: Mapping[str, Any], path: TrafficPath | None) -> str | None:
    """Why the container's readiness probe cannot tell the Services it is ready, or None.

    A probe on a port no selecting Service sends to can pass while the served port still refuses
    requests, so the Pod joins the endpoints (and the load balancer's targets) too early on scale-out.
    Containers the Services do not send to (sidecars) and exec probes are not judged.
    """
    if path is None or not path.services:
        return None
    targeted = path.targeted()
    ports = [p for p in container.get("ports") or ()
             if isinstance(p, Mapping) and type(p.get("containerPort")) is int]
    served = sorted({p["containerPort"] for p in ports
                     if p["containerPort"] in targeted or p.get("name") in targeted})
    probe = container.get("readinessProbe")
    if not served or not isinstance(probe, Mapping):
        return None
    handlers = [probe[key] for key in ("httpGet", "tcpSocket", "grpc") if isinstance(probe.get(key), Mapping)]
    handler = handlers[0] if handlers else None
    if handler is None:
        return None
    number = _port_number(handler.get("port"), ports)
    if number is None or number in served:
        return None
    names = ", ".join(service.name for service in path.services[:2])
    sent = ", ".join(f":{port}" for port in served)
    return f"readinessProbe checks :{number}, but Service {names} sends to {sent}: may be ready too early"
