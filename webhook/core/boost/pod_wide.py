"""The start-up boost applied to a whole Pod: which containers, the patch, the record, the notes (pure).

`webhook.core.boost.container` decides one container; this adds the Pod-wide rules (in-place resize needs
1.33+, autoscalers that hold cpu, the Pod's own resources), writes the boosted values, a `resizePolicy`, the
label the boost controller watches and the record it reads (`webhook.core.boost.record`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from webhook.core.boost.container import Boosted, boost_container, boost_record, cluster_can_resize
from webhook.core.boost.record import BOOST_ANNOTATION, BOOSTED_LABEL
from webhook.core.model.decision import POD_TARGET, Injection, Note
from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import ContainerRef
from webhook.core.model.profile import ContainerProfile, WorkloadProfiles
from webhook.core.model.quantity import parse, render
from webhook.core.policy.policies import Policy
from webhook.core.policy.sections import BoostPolicy
from webhook.core.sizing.holds import Hold

__all__ = ["apply_boost", "boost_pod"]


def boost_pod(
    sized: Sequence[ContainerRef],
    *,
    policy: BoostPolicy,
    profiles: Mapping[str, ContainerProfile],
    injections: Sequence[Injection],
    limit_ranges: Sequence[LimitRangeItem],
    server_version: tuple[int, int] | None,
    blocked: Mapping[str, str],
    room: dict[str, tuple[Decimal, str]] | None = None,
) -> tuple[list[tuple[ContainerRef, Boosted]], list[tuple[str, str]]]:
    """The boosts of a Pod's regular containers, and (target, note) for what was not boosted and why.

    `blocked`: container -> why its cpu must not be boosted (an autoscaler holds it, a VPA sets it, the
    Pod's own resources); the caller knows those rules.
    """
    if not cluster_can_resize(server_version):
        shown = "cluster version unknown"
        if server_version is not None:
            shown = f"cluster {server_version[0]}.{server_version[1]}"
        return [], [(POD_TARGET, f"no start-up boost: in-place resize needs Kubernetes 1.33+ ({shown})")]
    values: dict[str, dict[str, str]] = {}
    for injection in injections:
        values.setdefault(injection.target, {})[injection.field] = injection.value
    boosted: list[tuple[ContainerRef, Boosted]] = []
    notes: list[tuple[str, str]] = []
    for ref in sized:
        if ref.group != "containers":
            continue
        if ref.name in blocked:
            notes.append((ref.name, f"no start-up boost: {blocked[ref.name]}"))
            continue
        boost, why_not = boost_container(
            ref,
            policy=policy,
            profile=profiles.get(ref.name),
            injected=values.get(ref.name, {}),
            limit_ranges=limit_ranges,
            room=room,
        )
        if boost is not None:
            boosted.append((ref, boost))
            if room:
                _take(room, boost)
        elif why_not:
            notes.append((ref.name, why_not))
    return boosted, notes


def _take(room: dict[str, tuple[Decimal, str]], boost: Boosted) -> None:
    """Less room for the next container: what this boost added to the request and the limit."""
    steady_request = parse(boost.steady.request)
    added = {"requests.cpu": boost.request - steady_request}
    if boost.limit is not None and boost.steady.limit is not None:
        added["limits.cpu"] = boost.limit - parse(boost.steady.limit)
    for key, amount in added.items():
        if key in room:
            room[key] = (room[key][0] - amount, room[key][1])


def apply_boost(
    pod: Mapping[str, Any],
    sizeable: list[ContainerRef],
    *,
    policy: Policy,
    profiles: WorkloadProfiles,
    injections: list[Injection],
    limit_ranges: Sequence[LimitRangeItem],
    server_version: tuple[int, int] | None,
    holds: Mapping[str, Mapping[str, Hold]],
    pod_level: frozenset[str],
    patch: PatchBuilder,
    notes: list[Note],
    room: dict[str, tuple[Decimal, str]] | None = None,
    boosted_values: list[Injection] | None = None,
) -> list[Injection]:
    """The start-up boost (webhook.core.boost.container): patched in, recorded for the boost controller,
    explained.

    Once per Pod: a Pod that carries the record was boosted by an earlier pass.
    """
    metadata = pod.get("metadata") or {}
    if BOOST_ANNOTATION in (metadata.get("annotations") or {}):
        return []
    rules = policy.startup_boost
    blocked: dict[str, str] = {}
    for ref in sizeable:
        hold = holds.get(ref.name, {}).get("cpu")
        if "cpu" in pod_level:
            blocked[ref.name] = "the Pod's own resources set cpu"
        elif hold is not None and (hold.defer or not rules.hpa_utilization):
            off = "" if hold.defer else "; startupBoost.hpaUtilization is off"
            blocked[ref.name] = hold.reason + off
    boosted, said = boost_pod(
        sizeable,
        policy=rules,
        profiles=profiles,
        injections=injections,
        limit_ranges=limit_ranges,
        server_version=server_version,
        blocked=blocked,
        room=room,
    )
    notes += [Note(target, text) for target, text in said]
    for ref, boost in boosted:
        if boosted_values is not None:  # as the Pod is created, for what it charges its quotas
            boosted_values.append(Injection(ref.name, "requests.cpu", render("cpu", boost.request), ""))
            if boost.limit is not None:
                boosted_values.append(Injection(ref.name, "limits.cpu", render("cpu", boost.limit), ""))
        patch.set((*ref.path, "resources", "requests", "cpu"), render("cpu", boost.request))
        if boost.limit is not None:
            patch.set((*ref.path, "resources", "limits", "cpu"), render("cpu", boost.limit))
        if not ref.body.get("resizePolicy"):
            patch.set((*ref.path, "resizePolicy"), [{"resourceName": "cpu", "restartPolicy": "NotRequired"}])
    if boosted:
        patch.set(("metadata", "labels", BOOSTED_LABEL), "true")
        record = boost_record([boost for _, boost in boosted], rules)
        patch.set(("metadata", "annotations", BOOST_ANNOTATION), record.dumps())
    return [boost.injection for _, boost in boosted]
