"""A workload's report row as an OpenReports `Report` (openreports.io/v1alpha1): one per workload.

Policy Reporter, Kyverno and Kubewarden read this format; pod-tailor writes the same findings the
webhook acts on and `pod-tailor report` prints (the `WorkloadReport` of `webhook.report.evaluate`),
never a second opinion. Per container, one result per rule (feature): `requests`, `limits`,
`probes`, `preStop`, `boost`, `fit`, and `grace` once for the Pod. `pass`: nothing would change;
`warn`: pod-tailor would set something (or did, in enforce mode); `fail`: a person's value is outside
the policy's bounds, or a memory limit is below the peak history saw (an OOM kill waiting); `skip`:
not decided, with the reason. Numbers go to `properties` (current, recommended, source, evidence).
Pure: no clock (no timestamps, so an unchanged decision is an unchanged object), no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from webhook.core.model.profile import NoRecommendation, Recommendation
from webhook.core.policy.policies import Policy
from webhook.report.model import Added, ContainerReport, Origin, WorkloadReport
from webhook.report.units import amount

__all__ = [
    "API_VERSION",
    "DIGEST_ANNOTATION",
    "MANAGED_BY",
    "RULES",
    "SOURCE",
    "build_report",
    "report_name",
]

API_VERSION = "openreports.io/v1alpha1"
SOURCE = "pod-tailor"
POLICY = "pod-tailor"
RULES = ("requests", "limits", "probes", "preStop", "grace", "boost", "fit")
# The digest of the Report's content as pod-tailor wrote it: a controller that computes the same digest has
# nothing to write (a new leader included, which knows nothing else of what was written before it).
DIGEST_ANNOTATION = "pod-tailor.io/report-digest"
MANAGED_BY = {"app.kubernetes.io/managed-by": "pod-tailor"}
_SEVERITY = {"fail": "medium", "warn": "low"}
_CATEGORY = {"requests": "Resources", "limits": "Resources", "fit": "Resources", "boost": "Resources",
             "probes": "Probes", "preStop": "Shutdown", "grace": "Shutdown"}  # fmt: skip
_PROBES = ("readinessProbe", "livenessProbe", "startupProbe")
Obj = dict[str, Any]


def report_name(kind: str, name: str) -> str:
    """`pod-tailor-deployment-web`; a name past the 253-character limit keeps a digest of the whole."""
    full = f"pod-tailor-{kind.lower()}-{name}"
    if len(full) <= 253:
        return full
    return f"{full[:236]}-{hashlib.sha256(full.encode()).hexdigest()[:16]}"


def _result(rule: str, result: str, message: str, *, container: str, **numbers: str) -> Obj:
    properties = {"container": container, **{k: v for k, v in numbers.items() if v}}
    out: Obj = {"policy": POLICY, "rule": rule, "result": result, "message": message[:1024],
                "source": SOURCE, "category": _CATEGORY[rule], "properties": properties}  # fmt: skip
    if result in _SEVERITY:
        out["severity"] = _SEVERITY[result]
    return out


def _values(values: Mapping[str, Decimal]) -> str:
    if not values:
        return "none"
    return ", ".join(f"{resource}={amount(resource, value)}" for resource, value in sorted(values.items()))


def _evidence(container: ContainerReport) -> str:
    profile = container.profile
    if isinstance(profile, Recommendation):
        ev = profile.evidence
        oom = f", {ev.oom_kills} OOM kill(s)" if ev.oom_kills else ""
        return (f"{ev.hours:.0f}h of history over {ev.window}, {ev.samples} samples, "
                f"confidence {ev.confidence:.2f}{oom}")  # fmt: skip
    if isinstance(profile, NoRecommendation):
        return f"no history: {profile.reason}"
    return "no profile"


def _sources(origins: Iterable[tuple[str, Origin]]) -> str:
    return "; ".join(f"{key}: {origin.kind}{f' ({origin.detail})' if origin.detail else ''}"
                     for key, origin in origins)  # fmt: skip


def _sized(container: ContainerReport, section: str, *, policy: Policy | None, evidence: str) -> Obj:
    """`requests` or `limits` of one container."""
    name = container.name
    origins = sorted((k, o) for k, o in container.sources.items() if k.startswith(f"{section}."))
    now, after = container.current.get(section, {}), container.recommended.get(section, {})
    numbers = {"current": _values(now), "recommended": _values(after), "source": _sources(origins),
               "evidence": evidence}  # fmt: skip
    changed = {k.partition(".")[2]: o for k, o in origins if now.get(k.partition(".")[2]) != after.get(
        k.partition(".")[2])}  # fmt: skip
    if changed:
        shown = ", ".join(f"{r} {amount(r, now.get(r)) if r in now else 'unset'} -> {amount(r, after[r])} "
                          f"({o.kind})" for r, o in sorted(changed.items()) if r in after)  # fmt: skip
        return _result(section, "warn", f"{section}: {shown}", container=name, **numbers)
    problem = _outside(container, section, policy) or (_oom(container) if section == "limits" else "")
    if problem:
        return _result(section, "fail", problem, container=name, **numbers)
    held = [o for _, o in origins if o.kind == "held"]
    if held:
        return _result(section, "skip", f"{section}: {held[0].detail or 'left to an autoscaler'}",
                       container=name, **numbers)  # fmt: skip
    unset = [k for k, o in origins if o.kind == "unset"]
    if unset and section == "requests":
        reason = next(o.detail for k, o in origins if k == unset[0])
        return _result(section, "skip", f"{', '.join(unset)} not set: {reason}", container=name, **numbers)
    return _result(section, "pass", f"{section}: nothing to change", container=name, **numbers)


def _outside(container: ContainerReport, section: str, policy: Policy | None) -> str:
    """A request the author set outside the policy's min..max."""
    if policy is None or section != "requests":
        return ""
    for resource, rules in sorted(policy.resources.items()):
        origin = container.sources.get(f"requests.{resource}")
        value = container.current.get("requests", {}).get(resource)
        if value is None or origin is None or origin.kind != "author":
            continue
        if value < rules.min:
            return f"requests.{resource} {amount(resource, value)} is below policy {policy.name}'s min " \
                   f"{amount(resource, rules.min)}"  # fmt: skip
        if value > rules.max:
            return f"requests.{resource} {amount(resource, value)} is above policy {policy.name}'s max " \
                   f"{amount(resource, rules.max)}"  # fmt: skip
    return ""


def _oom(container: ContainerReport) -> str:
    """A memory limit below the peak working set history saw: the container would be OOM-killed."""
    profile, limit = container.profile, container.recommended.get("limits", {}).get("memory")
    if not isinstance(profile, Recommendation) or limit is None or profile.evidence.memory_peak is None:
        return ""
    peak = Decimal(str(profile.evidence.memory_peak))
    if limit >= peak:
        return ""
    return f"limits.memory {amount('memory', limit)} is below the {amount('memory', peak)} peak history saw"


def _added(adds: Sequence[Added], fields: Sequence[str]) -> list[Added]:
    return [a for a in adds if a.field in fields]


def _feature(rule: str, container: ContainerReport, fields: Sequence[str], *, present: bool, applies: str,
             verb: str) -> Obj:  # fmt: skip
    """`probes`, `preStop` or `boost`: added (warn), already there (pass), or why it does not apply."""
    name, added = container.name, _added(container.adds, fields)
    if added:
        shown = "; ".join(f"{a.field} {a.value}" for a in added)
        return _result(rule, "warn", f"{verb} {shown}", container=name, current="none", recommended=shown,
                       source="; ".join(dict.fromkeys(a.source for a in added)))  # fmt: skip
    if present:
        return _result(rule, "pass", f"{rule}: set by the author", container=name, current="set")
    return _result(rule, "skip", applies, container=name)


def _container(
    container: ContainerReport, *, policy: Policy | None, skipped: str | None, enforce: bool
) -> list[Obj]:
    name, verb = container.name, "adds" if enforce else "would add"
    if skipped:
        return [_result(rule, "skip", skipped, container=name) for rule in RULES if rule != "grace"]
    evidence = _evidence(container)
    serving = "a serving container of a long-running Pod" if container.serving else ""
    not_serving = "not a serving container of a long-running Pod: no probes or preStop"
    probes_there = container.readiness[0]
    boost_off = "start-up boost is off in the policy" if policy is None or not policy.startup_boost.enabled \
        else "no start-up peak above the request, or not boostable (see the Pod's annotation)"  # fmt: skip
    return [
        _sized(container, "requests", policy=policy, evidence=evidence),
        _sized(container, "limits", policy=policy, evidence=evidence),
        _feature("probes", container, _PROBES, present=probes_there, verb=verb,
                 applies=not_serving if not serving else "probes off in the policy or excluded"),
        _feature("preStop", container, ("preStop",), present=container.pre_stop[0], verb=verb,
                 applies=not_serving if not serving else "preStop off in the policy or excluded"),
        _feature("boost", container, ("startupBoost",), present=False, verb=verb, applies=boost_off),
        _fit(container),
    ]  # fmt: skip


def _fit(container: ContainerReport) -> Obj:
    """Whether the values fit what is around them: LimitRange bounds, the author's own limit."""
    moved = sorted(k for k, o in container.sources.items() if o.kind == "limitrange")
    capped = [w for w in container.warnings if "capped at its limit" in w or "limit not set" in w]
    if capped:
        return _result("fit", "warn", capped[0], container=container.name, source="; ".join(capped))
    if moved:
        return _result("fit", "warn", f"{', '.join(moved)} moved to a LimitRange bound",
                       container=container.name, source=", ".join(moved))  # fmt: skip
    return _result("fit", "pass", "within the LimitRange and the container's own limits",
                   container=container.name)  # fmt: skip


def _grace(workload: WorkloadReport) -> Obj:
    added = [a for a in workload.pod_adds if a.field == "terminationGracePeriodSeconds"]
    verb = "sets" if workload.mode == "enforce" else "would set"
    if workload.skipped:
        return _result("grace", "skip", workload.skipped, container="")
    if added:
        return _result("grace", "warn", f"{verb} terminationGracePeriodSeconds {added[0].value}",
                       container="", recommended=added[0].value, source=added[0].source)  # fmt: skip
    return _result("grace", "pass", "terminationGracePeriodSeconds: nothing to change", container="")


def build_report(
    workload: WorkloadReport,
    *,
    owner: Mapping[str, str],
    policy: Policy | None,
) -> Obj:
    """The `Report` for `workload`, owned by `owner` ({apiVersion, kind, name, uid}), with the digest of
    its content in an annotation (`DIGEST_ANNOTATION`)."""
    results = [r for c in workload.containers
               for r in _container(c, policy=policy, skipped=workload.skipped,
                                   enforce=workload.mode == "enforce")]  # fmt: skip
    results.append(_grace(workload))
    for warning in workload.warnings:  # about the whole Pod: HPA headroom and the like
        results.append(_result("fit", "warn", warning, container=""))
    summary = {state: sum(1 for r in results if r["result"] == state)
               for state in ("pass", "fail", "warn", "error", "skip")}  # fmt: skip
    reference = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["name"],
                 "uid": owner["uid"]}  # fmt: skip
    report: Obj = {
        "apiVersion": API_VERSION,
        "kind": "Report",
        "metadata": {
            "name": report_name(owner["kind"], owner["name"]),
            "namespace": workload.namespace,
            "labels": {**MANAGED_BY, "pod-tailor.io/mode": workload.mode},
            "ownerReferences": [reference],
        },
        "scope": {**reference, "namespace": workload.namespace},
        "source": SOURCE,
        "summary": summary,
        "results": results,
    }
    canonical = json.dumps(report, sort_keys=True, separators=(",", ":")).encode()
    report["metadata"]["annotations"] = {DIGEST_ANNOTATION: hashlib.sha256(canonical).hexdigest()[:32]}
    return report
