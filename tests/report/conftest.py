"""Fixtures for the report tests (the fake API server's `kube` comes from tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default profile store points at a file that does not exist, never at ~/.local/share."""
    path = tmp_path / "no-profiles.json"
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(path))
    monkeypatch.delenv("POD_TAILOR_PROMETHEUS_URL", raising=False)
    return path
