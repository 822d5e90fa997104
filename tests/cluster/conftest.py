"""Fixtures for the cluster tests: a running fake API server (tests/kubefake.py) and its kubeconfig."""

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


@pytest.fixture
def kubeconfig(kube: FakeKube, tmp_path: Path) -> Path:
    return kube.write_kubeconfig(tmp_path / "kubeconfig")
