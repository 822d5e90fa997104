"""Fixtures every test package shares: `kube` (the fake Kubernetes API server of tests/kubefake.py) and
`kubeconfig`. kubefake and the other helpers directly in tests/ are imported as top-level modules
(`from kubefake import FakeKube`), however pytest was configured to import the tests."""

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from kubefake import kube, kubeconfig

__all__ = ["kube", "kubeconfig"]
