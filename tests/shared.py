"""`../shared` beside the clone: real AdmissionReviews and the public manifests they came from.

CI runs with it; a user's clone has none. Tests that need it use `needs_shared`, or parametrize over
`corpus_params(...)`, which stands in one skipped case naming the reason when the corpus is absent
(an empty parameter list would skip with pytest's own "got empty parameter set" instead).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "CORPUS",
    "MISSING",
    "SAMPLE_REVIEW",
    "SHARED",
    "corpus_params",
    "manifest_files",
    "needs_shared",
    "review_files",
]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"
MISSING = f"needs {SHARED}/corpus (the shared corpus beside the clone, present in CI)"
needs_shared = pytest.mark.skipif(not CORPUS.is_dir(), reason=MISSING)
# The bundled sample review: a real Deployment Pod CREATE that every clone has.
SAMPLE_REVIEW = Path(__file__).resolve().parents[1] / "webhook" / "data" / "sample-review.json"


def review_files() -> list[Path]:
    """The corpus' AdmissionReviews (132 in CI), or none without ../shared."""
    return sorted((CORPUS / "reviews").glob("*.json"))


def manifest_files() -> list[Path]:
    """Every YAML/JSON manifest of the corpus, or none without ../shared."""
    return sorted(
        path for path in (CORPUS / "manifests").rglob("*")
        if path.is_file() and path.suffix in (".yaml", ".yml", ".json")
    )


def corpus_params(items: Sequence[Any], *, ids: Callable[[Any], str] = str) -> list[Any]:
    """`items` as pytest parameters, or one case skipped for the missing corpus when there are none."""
    if not items:
        return [pytest.param(None, marks=pytest.mark.skip(reason=MISSING), id="no-corpus")]
    return [pytest.param(item, id=ids(item)) for item in items]
