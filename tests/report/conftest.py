"""Fixtures for the report tests (the fake API server's `kube` comes from tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.profiles.store import FileStore, ProfileDocument


@pytest.fixture(autouse=True)
def no_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The profile store is an empty one of the test's own (a store that is missing is an error when
    named, a warning when the default)."""
    path = tmp_path / "no-profiles.json"
    FileStore(path).write(ProfileDocument({}, 0.0, "no profiles"))
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(path))
    monkeypatch.delenv("POD_TAILOR_PROMETHEUS_URL", raising=False)
    return path
