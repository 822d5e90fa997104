"""The AdmissionReview contract as typed structures and pure functions (no HTTP framework here)."""

from webhook.admission.handler import Answer, Engine, ErrorReason, Outcome, admit, default_engine, too_large
from webhook.admission.review import BadRequest, Review, parse_review

__all__ = [
    "Answer",
    "BadRequest",
    "Engine",
    "ErrorReason",
    "Outcome",
    "Review",
    "admit",
    "default_engine",
    "parse_review",
    "too_large",
]
