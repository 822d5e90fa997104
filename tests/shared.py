"""`../shared` beside the clone: real AdmissionReviews and the public manifests they came from.

CI runs with it; a user's clone has none. Tests that need it use `needs_shared` (or the lists below,
which are then empty) and skip with a reason that says so, rather than failing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["CORPUS", "MISSING", "SHARED", "manifest_files", "needs_shared", "review_files"]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus"
MISSING = f"needs {SHARED}/corpus (the shared corpus beside the clone, present in CI)"
needs_shared = pytest.mark.skipif(not CORPUS.is_dir(), reason=MISSING)


def review_files() -> list[Path]:
    """The corpus' AdmissionReviews (132 in CI), or none without ../shared."""
    return sorted((CORPUS / "reviews").glob("*.json"))


def manifest_files() -> list[Path]:
    """Every YAML/JSON manifest of the corpus, or none without ../shared."""
    return sorted(
        path for path in (CORPUS / "manifests").rglob("*")
        if path.is_file() and path.suffix in (".yaml", ".yml", ".json")
    )
