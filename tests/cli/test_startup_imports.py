"""Every verb starts without the heavy clients: the Kubernetes client, kubernetes-validate, pydantic and
prometheus_client are imported by the verbs that use them, when they run (0.3 s of every start,
`profiles build --help` 0.85 -> 0.55 s of CPU). One top-level import in any command module would undo it
silently, so a fresh interpreter builds the whole parser and says which of them got loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("kubernetes", "kubernetes_validate", "pydantic", "prometheus_client")


def loaded_after(code: str) -> set[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          check=True, timeout=60)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


class TestStartUp:
    def test_building_every_verb_parser_loads_none_of_the_heavy_clients(self) -> None:
        loaded = loaded_after("from webhook.commands import build_parser\nbuild_parser()")
        assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))

    @pytest.mark.parametrize("module", ["kubernetes", "prometheus_client"])
    def test_the_probe_sees_a_heavy_import_when_one_happens(self, module: str) -> None:
        assert module in loaded_after(f"import {module}")
