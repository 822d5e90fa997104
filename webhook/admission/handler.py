"""The admission decision for one request body: the one place where every failure becomes an outcome.

Bad input is a 400 with a clear message; a fault of ours (engine error, a patch that would not
apply) lets the Pod through unchanged with a warning, because a patch that fails to apply fails the
Pod's creation even under `failurePolicy: Ignore`. Nothing here raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import jsonpatch
import orjson

from webhook.admission.budget import fit_audit, fit_warnings
from webhook.admission.response import bad_request_body, review_answer
from webhook.admission.review import BadRequest, Review, parse_review
from webhook.core.decision import Decision, Injection
from webhook.core.namespace import Mode, NamespaceSettings
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.core.workload import pod_workload

__all__ = ["Answer", "Engine", "ErrorReason", "Outcome", "admit", "default_engine", "too_large"]


class Engine(Protocol):
    """`webhook.core.engine.decide`, or anything with its signature."""

    def __call__(
        self, pod: Mapping[str, Any], *, namespace: str, cluster: ClusterSnapshot, profiles: ProfileSnapshot
    ) -> tuple[NamespaceSettings, Decision]: ...


class Outcome(StrEnum):
    PATCHED = "patched"  # enforce: a patch was returned
    UNCHANGED = "unchanged"  # enforce: nothing to add
    DRY_RUN = "dry-run"  # namespace in dry-run mode: warnings say what would change
    OFF = "off"  # namespace mode off
    SKIPPED = "skipped"  # the engine left the Pod alone (opt-out label, excluded, ...)
    IGNORED = "ignored"  # not a Pod CREATE: another kind, operation or a subresource
    BAD_REQUEST = "bad-request"  # 400
    TOO_LARGE = "too-large"  # 413
    ERROR = "error"  # our fault: allowed unchanged, with a warning


class ErrorReason(StrEnum):
    """Bounded label values for the errors metric."""

    BAD_REQUEST = "bad_request"
    TOO_LARGE = "body_too_large"
    ENGINE = "engine_fault"
    PATCH = "patch_does_not_apply"


@dataclass(frozen=True, slots=True)
class Answer:
    """What to send back and what to record about it (for logs and metrics; never object contents)."""

    status: int
    body: bytes
    outcome: Outcome
    uid: str | None = None
    namespace: str | None = None
    workload: str | None = None
    policy: str | None = None
    injections: tuple[Injection, ...] = ()
    applied: bool = False  # injections took effect: enforce mode and not request.dryRun
    dry_run: bool = False  # request.dryRun
    error: ErrorReason | None = None
    detail: str | None = None  # for the log line only


def too_large(limit: int) -> Answer:
    message = f"request body larger than {limit} bytes"
    return Answer(413, orjson.dumps({"detail": message}), Outcome.TOO_LARGE, error=ErrorReason.TOO_LARGE,
                  detail=message)


def _bad(problem: BadRequest) -> Answer:
    return Answer(
        400,
        bad_request_body(problem.message, problem.uid),
        Outcome.BAD_REQUEST,
        uid=problem.uid,
        error=ErrorReason.BAD_REQUEST,
        detail=problem.message,
    )


def _workload_name(pod: Mapping[str, Any], namespace: str) -> str | None:
    try:
        return str(pod_workload(pod, namespace))
    except Exception:  # only for the log line; the request is already failing
        return None


def _fault(review: Review, reason: ErrorReason, exc: BaseException, *, workload: str | None) -> Answer:
    warning = f"pod-tailor: internal error ({type(exc).__name__}); the Pod was admitted unchanged"
    return Answer(
        200,
        review_answer(review.uid, warnings=(warning,)),
        Outcome.ERROR,
        uid=review.uid,
        namespace=review.namespace,
        workload=workload,
        dry_run=review.dry_run,
        error=reason,
        detail=f"{type(exc).__name__}: {exc}"[:500],
    )


def _check_applies(pod: Mapping[str, Any], decision: Decision) -> None:
    """Apply the patch to a copy; raises if it would not apply or not round-trip as JSON."""
    copy = orjson.loads(orjson.dumps(pod))
    jsonpatch.apply_patch(copy, list(decision.ops), in_place=True)
    orjson.dumps(copy)


def _would(decision: Decision) -> list[str]:
    return [f"{item.target}: {item.describe()}" for item in decision.injections]


def _respond(review: Review, settings: NamespaceSettings, decision: Decision) -> Answer:
    """Map the namespace mode and the engine's decision to an answer (the engine has already run)."""
    common: dict[str, Any] = {
        "uid": review.uid,
        "namespace": review.namespace,
        "workload": decision.workload or None,
        "policy": decision.policy,
        "dry_run": review.dry_run,
    }
    engine_warnings = [w if w.startswith("pod-tailor") else f"pod-tailor: {w}" for w in decision.warnings]
    if settings.mode is Mode.OFF:
        return Answer(200, review_answer(review.uid), Outcome.OFF, **common)
    if decision.skipped is not None:
        warnings = fit_warnings(engine_warnings)
        return Answer(200, review_answer(review.uid, warnings=warnings), Outcome.SKIPPED, **common)
    if settings.mode is Mode.DRY_RUN:
        would = _would(decision)
        head = (
            f"pod-tailor dry-run ({decision.policy} policy): {len(would)} value(s) would be injected"
            if would else f"pod-tailor dry-run ({decision.policy} policy): nothing would be injected"
        )
        warnings = fit_warnings([head, *engine_warnings, *(f"pod-tailor would set {w}" for w in would)])
        audit = fit_audit({"mode": "dry-run", "policy": decision.policy, "would-inject": would})
        body = review_answer(review.uid, warnings=warnings, audit=audit)
        return Answer(200, body, Outcome.DRY_RUN, injections=decision.injections, **common)
    # enforce: the same patch whether or not request.dryRun is set (kubectl --dry-run=server shows it).
    warnings = fit_warnings(engine_warnings)
    if not decision.ops:
        return Answer(200, review_answer(review.uid, warnings=warnings), Outcome.UNCHANGED, **common)
    audit = fit_audit({"mode": "enforce", "policy": decision.policy, "injected": _would(decision)})
    body = review_answer(review.uid, ops=decision.ops, warnings=warnings, audit=audit)
    return Answer(
        200, body, Outcome.PATCHED, injections=decision.injections, applied=not review.dry_run, **common
    )


def admit(
    body: bytes,
    *,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    engine: Engine,
    verify_patch: bool = True,
) -> Answer:
    """Answer one AdmissionReview body against one pair of snapshots. Never raises."""
    parsed = parse_review(body)
    if isinstance(parsed, BadRequest):
        return _bad(parsed)
    review = parsed
    if not review.is_pod_create:
        return Answer(200, review_answer(review.uid), Outcome.IGNORED, uid=review.uid,
                      namespace=review.namespace or None, dry_run=review.dry_run)
    pod: dict[str, Any] = review.obj
    try:
        settings, decision = engine(pod, namespace=review.namespace, cluster=cluster, profiles=profiles)
    except Exception as exc:
        return _fault(review, ErrorReason.ENGINE, exc, workload=_workload_name(pod, review.namespace))
    try:
        if verify_patch and decision.ops and settings.mode is Mode.ENFORCE and decision.skipped is None:
            _check_applies(pod, decision)
        return _respond(review, settings, decision)
    except Exception as exc:
        return _fault(review, ErrorReason.PATCH, exc, workload=decision.workload or None)


def default_engine() -> Engine:
    """The real engine, imported on first use so this module stays importable on its own."""
    from webhook.core.engine import decide

    found: Callable[..., tuple[NamespaceSettings, Decision]] = decide
    return found
