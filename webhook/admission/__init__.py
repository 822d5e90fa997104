"""The AdmissionReview contract as typed structures and pure functions (no HTTP framework here)."""

from webhook.admission.cache import VerdictCache
from webhook.admission.handler import Answer, Engine, ErrorReason, admit, default_engine, shed, too_large
from webhook.admission.review import BadRequest, Review, parse_review
from webhook.admission.verdict import Outcome, Verdict

__all__ = [
    "Answer",
    "BadRequest",
    "Engine",
    "ErrorReason",
    "Outcome",
    "Review",
    "Verdict",
    "VerdictCache",
    "admit",
    "default_engine",
    "parse_review",
    "shed",
    "too_large",
]
