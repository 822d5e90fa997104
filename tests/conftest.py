"""Fixtures every test package shares: `kube` (the fake Kubernetes API server of tests/kubefake.py) and
`kubeconfig`. kubefake and the other helpers directly in tests/ are imported as top-level modules
(`from kubefake import FakeKube`), however pytest was configured to import the tests.

Every run gets a private home (tests/privatehome.py): HOME and the XDG directories of the run and of
every process it starts are a temporary directory, removed at the end.
"""

import shutil
import sys
from pathlib import Path

import pytest

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from kubefake import kube, kubeconfig
from privatehome import make_private_home

__all__ = ["kube", "kubeconfig"]

_HOME = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_HOME] = make_private_home()


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)
