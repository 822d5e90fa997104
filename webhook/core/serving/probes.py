"""Readiness, startup and liveness probes for serving containers that lack them.

The check reuses a probe the container already has (the author knows their health endpoint best),
else httpGet on a path from the Pod's annotation or the policy, else tcpSocket on the serving port.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

from webhook.core.model.decision import Injection
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import ContainerRef, is_side_port, serving_port
from webhook.core.model.profile import ContainerProfile
from webhook.core.policy.policies import Policy, ProbeShape
from webhook.core.sizing.resources import usable_recommendation

__all__ = ["probe_container"]

_HANDLERS = ("httpGet", "tcpSocket", "grpc", "exec")
_KINDS = ("readiness", "startup", "liveness")


def _existing_handler(container: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    for kind in _KINDS:
        probe = container.get(f"{kind}Probe")
        if isinstance(probe, dict):
            for handler in _HANDLERS:
                if isinstance(probe.get(handler), dict):
                    return f"{kind}Probe", {handler: copy.deepcopy(dict(probe[handler]))}
    return None


def _handler(
    container: Mapping[str, Any], *, port: int, path: str | None, path_source: str, to_service: bool
) -> tuple[dict[str, Any], str, str]:
    """(handler, how it reads, why) for a new probe. `to_service`: a selecting Service sends to `port`."""
    reused = _existing_handler(container)
    if reused is not None:
        origin, handler = reused
        kind = next(iter(handler))
        return handler, f"{kind} as in {origin}", f"same check as the container's {origin}"
    if path is not None:
        return {"httpGet": {"path": path, "port": port, "scheme": "HTTP"}}, f"http :{port}{path}", path_source
    why = "the port the Service sends to" if to_service else "serving port"
    return {"tcpSocket": {"port": port}}, f"tcp :{port}", why


def _shape(shape: ProbeShape, *, failure_threshold: int | None = None) -> dict[str, int]:
    return {
        "initialDelaySeconds": shape.initial_delay_seconds,
        "timeoutSeconds": shape.timeout_seconds,
        "periodSeconds": shape.period_seconds,
        "successThreshold": shape.success_threshold,
        "failureThreshold": failure_threshold or shape.failure_threshold,
    }


def probe_container(
    ref: ContainerRef,
    *,
    policy: Policy,
    path_annotation: str | None,
    profile: ContainerProfile | None,
    patch: PatchBuilder,
    targeted: frozenset[int | str] = frozenset(),
    served: int | None = None,
) -> list[Injection]:
    """Add each enabled probe the container lacks; nothing for containers without a TCP port.

    `targeted`: the container ports (numbers or names) the Pod's Services send to, preferred.
    `served`: the port a selecting Service sends to this container (`webhook.core.serving.ports`), probed
    when the container declares no TCP port. A startup probe only beside a liveness probe (the
    author's or the policy's): it exists to hold liveness back; alone it only adds a kill.
    """
    port = serving_port(ref.body, targeted)
    if port is None and served is not None:  # traffic comes to a port the container does not declare
        port = {"containerPort": served}
    if port is None:
        return []
    number = int(port["containerPort"])
    path: str | None = path_annotation or policy.http_path
    path_source = "path from pod annotation" if path_annotation else f'path from policy "{policy.name}"'
    to_service = number in targeted or port.get("name") in targeted
    handler, reads, why = _handler(
        ref.body, port=number, path=path, path_source=path_source, to_service=to_service
    )
    passed_over = [
        f"{other['name']} :{other['containerPort']}"
        for other in ref.body.get("ports") or ()
        if isinstance(other, dict) and other.get("containerPort") != number and is_side_port(other)
    ]
    if passed_over and reads.startswith(("tcp", "http")):
        why += f" (not {', '.join(passed_over[:3])})"
    injections = []
    rec = usable_recommendation(profile, policy)
    liveness = policy.liveness.enabled or ref.body.get("livenessProbe") is not None
    for kind in _KINDS:
        shape: ProbeShape = getattr(policy, kind)
        field = f"{kind}Probe"
        if not shape.enabled or ref.body.get(field) is not None or (kind == "startup" and not liveness):
            continue
        threshold, budget_note = None, ""
        if kind == "startup" and rec is not None and rec.startup_seconds:
            # Budget twice the observed start-up so a slow start is not killed by its own probe.
            needed = math.ceil(2 * rec.startup_seconds / shape.period_seconds)
            if needed > shape.failure_threshold:
                threshold = needed
                budget_note = f"; budget 2 x observed start-up {rec.startup_seconds:.0f}s"
        probe = {**handler, **_shape(shape, failure_threshold=threshold)}
        patch.set((*ref.path, field), probe)
        budget = probe["periodSeconds"] * probe["failureThreshold"]
        injections.append(
            Injection(
                ref.name,
                field,
                f"{reads} every {probe['periodSeconds']}s x{probe['failureThreshold']} (budget {budget}s)",
                f'{why}, policy "{policy.name}"{budget_note}',
            )
        )
    return injections
