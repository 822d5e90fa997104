"""Which containers of a Pod a Service sends traffic to: only those get probes and a preStop pause.

A Service's `targetPort` names a container port (a number or a port name); a number need not be
declared in `ports`: traffic goes to the Pod's IP at that port, so it reaches whichever container
listens there. A container serves when a selecting Service sends to it:
- a declared port whose number or name is a target;
- else a numeric target its own probe checks (the author's readiness/liveness/startup probe);
- else, for a numeric target, when it is the Pod's only container.
Other containers of a selected Pod (a backup streamer, a log shipper) get no probe and no preStop: a TCP
probe on a port that does work per connection would open one every period.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.core.model.pod import ContainerRef

__all__ = ["probe_ports", "served_ports"]

_PROBES = ("readinessProbe", "livenessProbe", "startupProbe")


def probe_ports(container: Mapping[str, Any]) -> frozenset[int]:
    """Port numbers the container's own probes check (a named port resolved through `ports`)."""
    names = {
        str(port.get("name")): port["containerPort"]
        for port in container.get("ports") or ()
        if isinstance(port, Mapping) and type(port.get("containerPort")) is int and port.get("name")
    }
    ports: set[int] = set()
    for field in _PROBES:
        probe = container.get(field)
        if not isinstance(probe, Mapping):
            continue
        for handler in ("httpGet", "tcpSocket", "grpc"):
            body = probe.get(handler)
            port = body.get("port") if isinstance(body, Mapping) else None
            if type(port) is int:
                ports.add(port)
            elif isinstance(port, str) and port.isdigit():
                ports.add(int(port))
            elif isinstance(port, str) and port in names:
                ports.add(names[port])
    return frozenset(ports)


def _declared(container: Mapping[str, Any], targets: frozenset[int | str]) -> int | None:
    for port in container.get("ports") or ():
        if not isinstance(port, Mapping) or type(port.get("containerPort")) is not int:
            continue
        if port.get("protocol", "TCP") != "TCP":
            continue
        if port["containerPort"] in targets or (port.get("name") and port.get("name") in targets):
            return int(port["containerPort"])
    return None


def served_ports(regular: Iterable[ContainerRef], targets: frozenset[int | str]) -> dict[str, int]:
    """Container name -> the port number a Service sends to it, for the Pod's regular containers.

    `targets`: the target ports of the Services that select the Pod (numbers or names).
    """
    refs = list(regular)
    numbers = sorted(target for target in targets if type(target) is int)
    served: dict[str, int] = {}
    for ref in refs:
        port = _declared(ref.body, targets)
        if port is None:
            checked = probe_ports(ref.body)
            port = next((number for number in numbers if number in checked), None)
        if port is None and len(refs) == 1 and numbers:
            port = numbers[0]
        if port is not None:
            served[ref.name] = port
    return served
