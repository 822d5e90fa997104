"""Fixtures for the report and dashboard tests: the shared fake API server (tests/kubefake.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# kubefake lives directly in tests/; make it importable however pytest was configured to import tests.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from kubefake import FakeKube  # noqa: E402


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube() as fake:
        yield fake


@pytest.fixture(autouse=True)
def no_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default profile store points at a file that does not exist, never at ~/.local/share."""
    path = tmp_path / "no-profiles.json"
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(path))
    monkeypatch.delenv("POD_TAILOR_PROMETHEUS_URL", raising=False)
    return path
