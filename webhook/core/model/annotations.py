"""Length limits on the annotations pod-tailor reads, so one request cannot make an answer huge.

Mutating webhooks see a Pod before the API server validates its size, and the probe path is copied
into every probe (and the previous explanation into the new one): a 2 MB annotation made a 22 MB
answer. An annotation past its limit is treated as absent and a warning says so; no real value
comes near these limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook import PREFIX
from webhook.core.model.pod import (
    EXCLUDE_ANNOTATION,
    EXCLUDE_CONTAINERS_ANNOTATION,
    INJECTED_ANNOTATION,
    LIMIT_RANGER_ANNOTATION,
    PROBE_PATH_ANNOTATION,
)

__all__ = ["MAX_LENGTH", "limit_of", "within_limits"]

MAX_LENGTH: Mapping[str, int] = {
    PROBE_PATH_ANNOTATION: 512,  # an HTTP path; copied into every injected probe
    EXCLUDE_ANNOTATION: 1024,  # a few feature names
    EXCLUDE_CONTAINERS_ANNOTATION: 8192,  # container names are at most 63 characters
    LIMIT_RANGER_ANNOTATION: 16_384,  # written by the API server, about 80 characters a container
    INJECTED_ANNOTATION: 32_768,  # pod-tailor's own explanation, kept on reinvocation
}
_OTHER = 4096  # any other pod-tailor.io/ annotation (features added later read theirs through this)


def limit_of(key: str) -> int | None:
    """The longest value pod-tailor reads for annotation `key`; None for annotations it never reads."""
    limit = MAX_LENGTH.get(key)
    if limit is None and key.startswith(PREFIX):
        return _OTHER
    return limit


def within_limits(pod: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[str]]:
    """`pod` itself, or a shallow copy without the annotations over their limit, and a warning for each."""
    annotations = (pod.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict):
        return pod, []
    over = []
    for key, value in annotations.items():
        limit = limit_of(key) if isinstance(key, str) else None
        if limit is not None and isinstance(value, str) and len(value) > limit:
            over.append((key, len(value), limit))
    if not over:
        return pod, []
    dropped = {key for key, _, _ in over}
    metadata = {**pod["metadata"], "annotations": {k: v for k, v in annotations.items() if k not in dropped}}
    warnings = [f"ignored {key}: {length} characters, over the limit of {limit}"
                for key, length, limit in over]
    return {**pod, "metadata": metadata}, warnings
