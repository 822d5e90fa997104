"""What the API server does to a new Pod before the mutating webhooks see it, for Pods built from templates.

A Pod made from a workload's template is not the Pod pod-tailor is asked about: on CREATE the API
server first defaults it (`SetDefaults_Pod`: a container with a limit but no request gets the
request = the limit; this runs on Pods only, never on templates) and LimitRanger fills in the
namespace's LimitRange defaults (`default` limits, `defaultRequest` requests), naming what it set in
the `kubernetes.io/limit-ranger` annotation. Both run before the webhooks, so a report that skipped
them would claim pod-tailor sets requests that the cluster had already set.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import orjson

from webhook.core.model.limitrange import LimitRangeItem
from webhook.core.model.pod import LIMIT_RANGER_ANNOTATION, containers, malformed
from webhook.core.model.quantity import render

__all__ = ["as_created", "json_copy", "limit_range_defaults"]


def limit_range_defaults(items: Sequence[LimitRangeItem]) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """(default requests, default limits) of the Container items, as the API server stores them.

    The API server defaults a LimitRange item when it is written (`SetDefaults_LimitRangeItem`): a
    missing `default` comes from `max`, a missing `defaultRequest` from `default`, then from `min`.
    Applied again here because a LimitRange read from elsewhere (a test, a file) may lack them.
    """
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    for item in items:
        if item.type != "Container":
            continue
        default = {**item.max, **item.default}
        default_request = {**item.min, **default, **item.default_request}
        requests.update(default_request)
        limits.update(default)
    return requests, limits


def _requests_from_limits(body: dict[str, Any]) -> None:
    resources = body.get("resources")
    if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
        return
    requests = resources.setdefault("requests", {})
    if isinstance(requests, dict):
        for resource, value in resources["limits"].items():
            requests.setdefault(resource, value)


def _fill(body: dict[str, Any], section: str, defaults: Mapping[str, Decimal]) -> list[str]:
    """Set the missing `defaults` in `body.resources[section]`; the names set, sorted."""
    resources = body.setdefault("resources", {})
    if not isinstance(resources, dict):
        return []
    values = resources.setdefault(section, {})
    if not isinstance(values, dict):
        return []
    missing = sorted(name for name in defaults if name not in values)
    for name in missing:
        values[name] = render(name, defaults[name])
    return missing


def json_copy(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON object, several times faster than `copy.deepcopy` (a report copies
    thousands of Pods); anything orjson cannot encode is copied the slow way."""
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    except TypeError:
        copied = copy.deepcopy(dict(obj))
    return copied


def as_created(pod: Mapping[str, Any], *, limit_ranges: Sequence[LimitRangeItem] = ()) -> dict[str, Any]:
    """A copy of `pod` as the webhooks would receive it on CREATE (see the module docstring)."""
    created = json_copy(pod)
    if malformed(created) is not None:
        return created  # the engine says why; nothing here may fail on it first
    for ref in containers(created):
        _requests_from_limits(ref.body)  # type: ignore[arg-type]
    requests, limits = limit_range_defaults(limit_ranges)
    if not requests and not limits:
        return created
    notes: list[str] = []
    for ref in containers(created):
        body: dict[str, Any] = ref.body  # type: ignore[assignment]
        what = "init container" if ref.group == "initContainers" else "container"
        set_limits = _fill(body, "limits", limits)
        set_requests = _fill(body, "requests", requests)
        if set_requests:
            notes.append(f"{', '.join(set_requests)} request for {what} {ref.name}")
        if set_limits:
            notes.append(f"{', '.join(set_limits)} limit for {what} {ref.name}")
    if notes:
        metadata = created.setdefault("metadata", {})
        annotations = metadata.setdefault("annotations", {}) or {}
        annotations[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
        metadata["annotations"] = annotations
    return created
