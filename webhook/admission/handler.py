"""The admission decision for one request body: the one place where every failure becomes an outcome.

Bad input is a 400 with a clear message; a fault of ours (engine error, a patch that would not
apply) lets the Pod through unchanged with a warning, because a patch that fails to apply fails the
Pod's creation even under `failurePolicy: Ignore`. Nothing here raises.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Any, NamedTuple, Protocol

import orjson

from webhook.admission.cache import VerdictCache
from webhook.admission.ledger import QuotaLedger
from webhook.admission.patchcheck import check_patch
from webhook.admission.peek import Peek, peek_review, peek_uid
from webhook.admission.response import answer_with_tail, bad_request_body, review_answer
from webhook.admission.review import BadRequest, Review, parse_review, pod_problem
from webhook.admission.verdict import Outcome, Verdict, verdict
from webhook.core.model.decision import Decision, Injection
from webhook.core.model.inputs import decision_inputs
from webhook.core.model.namespace import NamespaceSettings
from webhook.core.model.workload import pod_workload
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot

__all__ = [
    "Answer",
    "Engine",
    "ErrorReason",
    "admit",
    "answer_limit",
    "default_engine",
    "shed",
    "too_large",
]


class Engine(Protocol):
    """`webhook.core.engine.decide`, or anything with its signature."""

    def __call__(
        self,
        pod: Mapping[str, Any],
        *,
        namespace: str,
        cluster: ClusterSnapshot,
        profiles: ProfileSnapshot,
        checked: bool = ...,
        pending: Mapping[str, Mapping[str, Decimal]] | None = ...,
    ) -> tuple[NamespaceSettings, Decision]: ...


class ErrorReason(StrEnum):
    """Bounded label values for the errors metric."""

    BAD_REQUEST = "bad_request"
    TOO_LARGE = "body_too_large"
    ENGINE = "engine_fault"
    PATCH = "patch_does_not_apply"
    ANSWER_TOO_LARGE = "answer_too_large"


class Answer(NamedTuple):
    """What to send back and what to record about it (for logs and metrics; never object contents).

    A NamedTuple rather than a frozen dataclass: as immutable, and built several times faster, which
    shows on the admission path of a cached Pod.
    """

    status: int
    body: bytes
    outcome: Outcome
    uid: str | None = None
    namespace: str | None = None
    workload: str | None = None
    policy: str | None = None
    injections: tuple[Injection, ...] = ()
    injection_counts: tuple[tuple[str, str, int], ...] = ()  # (field kind, source, count), see `Verdict`
    applied: bool = False  # injections took effect: enforce mode and not request.dryRun
    capped: tuple[str, ...] = ()  # rules that lowered a value: "fit" (node fit), "quota"
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


def _fault(review: Review | Peek, reason: ErrorReason, exc: BaseException, *, workload: str | None) -> Answer:
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
        detail=_describe(exc),
    )


def _describe(exc: BaseException) -> str:
    """Exception type, where it was raised and the start of its message (for the log line)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}: {str(exc)[:200]}"


MIN_ANSWER_LIMIT = 16 * 1024
_ENFORCED = (Outcome.PATCHED, Outcome.UNCHANGED)  # the Pod is created as decided: it charges its quotas


def answer_limit(request_bytes: int) -> int:
    """The largest answer for a request of `request_bytes`: twice its size, never under 16 KiB.

    A request must not make the process hold (or send) much more than itself; the floor keeps the
    small hand-made requests of tests and previews, whose answers may outgrow them, untouched.
    """
    return max(2 * request_bytes, MIN_ANSWER_LIMIT)


def _too_large_answer(review: Review | Peek, found: Verdict, size: int, limit: int) -> Answer:
    warning = f"pod-tailor: the answer would be {size} bytes, over {limit}; the Pod was admitted unchanged"
    return Answer(
        200,
        review_answer(review.uid, warnings=(warning,)),
        Outcome.ERROR,
        uid=review.uid,
        namespace=review.namespace,
        workload=found.workload,
        policy=found.policy,
        dry_run=review.dry_run,
        error=ErrorReason.ANSWER_TOO_LARGE,
        detail=f"answer of {size} bytes over the limit of {limit}",
    )


def _answer(review: Review | Peek, found: Verdict, *, request_bytes: int) -> Answer:
    body = answer_with_tail(review.uid, found.tail)
    if len(body) > MIN_ANSWER_LIMIT and len(body) > answer_limit(request_bytes):
        return _too_large_answer(review, found, len(body), answer_limit(request_bytes))
    return Answer(
        200,
        body,
        found.outcome,
        uid=review.uid,
        namespace=review.namespace,
        workload=found.workload,
        policy=found.policy,
        injections=found.injections,
        injection_counts=found.injection_counts,
        applied=found.outcome is Outcome.PATCHED and not review.dry_run,
        dry_run=review.dry_run,
        capped=found.capped,
    )


def _still_fits(
    found: Verdict, review: Peek, *, cluster: ClusterSnapshot, ledger: QuotaLedger | None
) -> bool:
    """Whether a cached verdict holds for this replica too; records its charges when it does.

    Outside a namespace with quotas, always. Within one, the decision depends on the room the Pods
    admitted just before left, and only through it: the verdict says which rooms give the same
    decision (`RoomReading`: a value that fits keeps fitting in a larger room, a quota that is full
    stays full in a smaller one), so it holds while the room now is within them.
    """
    quotas = cluster.quotas.get(review.namespace) if ledger is not None else None
    if not quotas or ledger is None:
        return True
    charged = found.charges and not review.dry_run and found.outcome in _ENFORCED
    return ledger.reuse(review.namespace, quotas, found.room_reading, found.charges if charged else None)


def admit(
    body: bytes,
    *,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    engine: Engine,
    cache: VerdictCache | None = None,
    verify_patch: bool = True,
    ledger: QuotaLedger | None = None,
) -> Answer:
    """Answer one AdmissionReview body against one pair of snapshots. Never raises.

    A body the peek decodes (the usual Pod CREATE) is decided from the peek's inputs, cached or not:
    they hold every field `pod_problem`, the engine and `check_patch` read (the patch's parents are
    inputs, kept with their presence), so the full parse is only for everything else. In a namespace
    with ResourceQuotas, `ledger` supplies what the Pods admitted just before charge them, and learns
    what this one charges: a cached verdict is reused there only while the room its quotas leave
    gives the same decision (`_still_fits`), else the Pod is decided whole.
    """
    key = None
    peeked = peek_review(body, cluster=cluster) if cache is not None else None
    if cache is not None and peeked is not None:
        key = cache.key(peeked.namespace, peeked.key, cluster=cluster, profiles=profiles)
        cached = cache.get(key)
        if cached is not None and _still_fits(cached, peeked, cluster=cluster, ledger=ledger):
            # A replica with these inputs was decided against these snapshots. Only valid Pods are
            # cached, and the inputs hold every field `pod_problem` reads, so this Pod is valid too.
            return _answer(peeked, cached, request_bytes=len(body))
        if cached is not None:
            cache.decided_again += 1  # only the room its quotas leave differs: decided whole below
    review: Review | Peek
    if peeked is not None:
        review, pod = peeked, peeked.inputs
        inputs: Any = pod
    else:
        parsed = parse_review(body)
        if isinstance(parsed, BadRequest):
            return _bad(parsed)
        if not parsed.is_pod_create:
            return Answer(200, review_answer(parsed.uid), Outcome.IGNORED, uid=parsed.uid,
                          namespace=parsed.namespace or None, dry_run=parsed.dry_run)
        review, pod = parsed, parsed.obj
        inputs = decision_inputs(pod, label_keys=cluster.label_keys_read(review.namespace))
    problem = pod_problem(pod, review.uid)
    if problem is not None:
        return _bad(problem)
    quotas = cluster.quotas.get(review.namespace) if ledger is not None else None
    try:
        if quotas and ledger is not None:
            settings, decision = engine(
                inputs, namespace=review.namespace, cluster=cluster, profiles=profiles, checked=True,
                pending=ledger.pending(review.namespace, quotas),
            )
        else:
            settings, decision = engine(
                inputs, namespace=review.namespace, cluster=cluster, profiles=profiles, checked=True
            )
    except Exception as exc:
        return _fault(review, ErrorReason.ENGINE, exc, workload=_workload_name(pod, review.namespace))
    return _conclude(review, pod, settings, decision, key=key, cache=cache, ledger=ledger,
                     verify_patch=verify_patch, request_bytes=len(body))


def _conclude(
    review: Review | Peek, pod: Mapping[str, Any], settings: NamespaceSettings, decision: Decision, *,
    key: Any, cache: VerdictCache | None, ledger: QuotaLedger | None, verify_patch: bool, request_bytes: int,
) -> Answer:
    """The answer for a fresh decision: its verdict (the patch checked), cached, its charges recorded."""
    try:
        found = verdict(settings, decision)
        if verify_patch and found.patch is not None:
            check_patch(pod, decision.ops)
    except Exception as exc:
        return _fault(review, ErrorReason.PATCH, exc, workload=decision.workload or None)
    if cache is not None:
        cache.put(key, found)
    if ledger is not None and decision.charges and not review.dry_run and found.outcome in _ENFORCED:
        ledger.record(review.namespace, found.charges)
    return _answer(review, found, request_bytes=request_bytes)


def shed(body: bytes, reason: str, *, prefix_only: bool = False) -> Answer | None:
    """Allowed, no patch, a warning: the answer when deciding would cost a caller its deadline.

    Only the uid is read (`peek_uid`); None when it cannot be read, and the caller takes the full
    path, whose answer for such a body is a cheap 400. `prefix_only`: `body` is the start of the body.
    """
    uid = peek_uid(body, prefix_only=prefix_only)
    if uid is None:
        return None
    warning = f"pod-tailor: {reason}; the Pod was admitted unchanged"
    return Answer(200, review_answer(uid, warnings=(warning,)), Outcome.SHED, uid=uid, detail=reason)


def default_engine() -> Engine:
    """The real engine, imported on first use so this module stays importable on its own."""
    from webhook.core.engine import decide

    found: Callable[..., tuple[NamespaceSettings, Decision]] = decide
    return found
