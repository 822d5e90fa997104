"""Every answer pod-tailor gives on the shared corpus, byte for byte, as recorded in tests/golden/.

A refactoring must not change what the server answers or what `preview` prints. This runs every
review of `../shared/corpus` through the server's ASGI app (its verdict cache and quota ledger
included) and every manifest directory through `pod-tailor preview`, in two settings: the embedded
defaults, and a modelled cluster (Nodes, DaemonSets, ResourceQuotas tight enough that the replicas
of a burst run out of room, a dry-run namespace) with a profile store for every workload. The
outputs are compared with the recorded ones byte for byte.

A change that is meant to change answers records them again, and the diff of tests/golden/ shows
what changed, for the commit to explain:

    POD_TAILOR_TEST_GOLDEN=record .venv/bin/pytest tests/test_golden.py -n 0
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import difflib
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.helpers import namespace
from tests.fit.kit import daemonset, node, quota
from tests.shared import CORPUS, MISSING, needs_shared, review_files
from webhook.cluster.resources import daemonset_essentials, node_essentials, quota_essentials
from webhook.cluster.snapshot import build_snapshot
from webhook.commands import main
from webhook.config.policies import bundled_policies
from webhook.config.settings import Settings
from webhook.core.model.workload import pod_workload
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.inputs import MANIFEST_SUFFIXES
from webhook.profiles.store import load_snapshot
from webhook.refreshers.state import State
from webhook.server.app import create_app

GOLDEN = Path(__file__).resolve().parent / "golden"
RECORD = os.environ.get("POD_TAILOR_TEST_GOLDEN") == "record"
REPLICAS = 3  # of each review in the modelled cluster, interleaved: the ledger sees a burst
SPOT = {"cloud.google.com/gke-spot": "true"}

pytestmark = needs_shared


# --- the modelled cluster and its profile store ----------------------------------------------------


def _reviews() -> list[dict[str, Any]]:
    return [json.loads(path.read_bytes()) for path in review_files()]


def _cluster() -> ClusterSnapshot:
    """Nodes of two sizes, two DaemonSets, every corpus namespace opted in (team-a in dry-run), and
    ResourceQuotas: `default`'s runs out of cpu and memory a few dozen Pods into the burst, `litmus`
    has 100Mi of memory, `monitoring` counts Pods."""
    nodes = [node(f"node-{index}", cpu="3920m", memory="15Gi") for index in range(6)]
    nodes += [node(f"spot-{index}", cpu="940m", memory="1600Mi", labels=SPOT) for index in range(3)]
    daemonsets = [daemonset("kube-proxy", cpu="100m", memory="64Mi"), daemonset("node-exporter")]
    names = sorted({review["request"]["namespace"] for review in _reviews()})
    hard = {
        "default": {"requests.cpu": "250", "requests.memory": "500Gi", "limits.memory": "800Gi"},
        "litmus": {"requests.memory": "100Mi"},
        "monitoring": {"pods": "2", "requests.cpu": "4"},
    }
    quotas = [quota(hard=limits, used=dict.fromkeys(limits, "0"), namespace=name)
              for name, limits in hard.items()]  # fmt: skip
    objects = {
        "nodes": [node_essentials(item) for item in nodes],
        "daemonsets": [daemonset_essentials(item) for item in daemonsets],
        "namespaces": [namespace(name, "dry-run" if name == "team-a" else "enforce") for name in names],
        "resourcequotas": [quota_essentials(item) for item in quotas],
    }
    return build_snapshot(policies=bundled_policies(), settings=Settings(), objects=objects,
                          server_version=(1, 33), taken_at=0.0, source="golden")  # fmt: skip


def _draw(text: str, low: int, high: int) -> int:
    """A number in [low, high) that depends only on `text`."""
    digest = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return low + digest % (high - low)


def _profile(where: str) -> dict[str, Any]:
    """One container's stored profile, drawn from its name: a recommendation of any size (startup
    cpu, totals and a trail on some), or too little history (one in six)."""
    if _draw(where + "none", 0, 6) == 0:
        return {"none": "history too thin: 3.5 h of the 24 h needed"}
    cpu, memory = _draw(where + "cpu", 5, 2500), _draw(where + "memory", 24, 3000)
    profile: dict[str, Any] = {
        "cpu": f"{cpu}m",
        "memory": f"{memory}Mi",
        "evidence": {"window": "14d", "samples": _draw(where + "n", 500, 20000), "hours": 336.0,
                     "cpuPercentile": 95.0, "memoryMargin": 0.15, "confidence": 0.9,
                     "oomKills": _draw(where + "oom", 0, 8) // 7, "cpuAggregate": "pooled"},
    }  # fmt: skip
    if _draw(where + "startup", 0, 3) == 0:
        profile |= {"startupCpu": f"{cpu * 3}m", "startupSeconds": 40.0}
    if _draw(where + "totals", 0, 2) == 0:
        profile["totals"] = {"cpu": f"{cpu * 5}m", "memory": f"{memory * 4}Mi"}
    if _draw(where + "trail", 0, 3) == 0:
        profile |= {"builtAt": 1_790_000_000.0,
                    "trail": [[1_789_900_000.0, f"{max(cpu // 4, 1)}m", f"{max(memory // 3, 8)}Mi"]]}
    return profile


def _store_document() -> dict[str, Any]:
    """The profile store (its JSON form, as a build writes it) for every workload of the reviews, in
    their namespaces and in `default` (where `preview` puts manifests without one)."""
    workloads: dict[str, Any] = {}
    for review in _reviews():
        pod = review["request"]["object"]
        key = pod_workload(pod, review["request"]["namespace"])
        names = [c["name"] for c in [*pod["spec"].get("initContainers", ()), *pod["spec"]["containers"]]]
        for space in {key.namespace, "default"}:
            text = f"{space}/{key.kind}/{key.name}"
            workloads[text] = {"containers": {name: _profile(f"{text}/{name}") for name in names}}
    return {"apiVersion": "pod-tailor.io/profiles/v1", "generatedAt": 1_790_000_000.0,
            "source": "golden", "window": "14d", "workloads": workloads}  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("golden") / "profiles.json"
    path.write_text(json.dumps(_store_document(), indent=1, sort_keys=True))
    return path


# --- running the server and preview -----------------------------------------------------------------


def _replicas(review: dict[str, Any], count: int) -> Iterator[bytes]:
    for index in range(count):
        request = dict(review["request"], uid=f"{review['request']['uid'][:-4]}{index:04d}")
        yield json.dumps(dict(review, request=request)).encode()


def _served(cluster: ClusterSnapshot, profiles: ProfileSnapshot, *, replicas: int) -> list[str]:
    """Each answer of one server to the reviews' replicas (interleaved), one line per answer."""
    reviews = _reviews()
    app = create_app(Settings(), State(cluster=cluster, profiles=profiles))
    names = [path.stem for path in review_files()]

    async def run() -> list[str]:
        lines = []
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="https://pod-tailor") as client:
            for index in range(replicas):
                for name, review in zip(names, reviews, strict=True):
                    body = list(_replicas(review, index + 1))[index]
                    answer = await client.post("/mutate?timeout=10s", content=body,
                                               headers={"Content-Type": "application/json"})  # fmt: skip
                    lines.append(f"{name} {answer.status_code} {answer.text}")
        return lines

    return asyncio.run(run())


def _app_directories() -> list[Path]:
    found = {path.parent for path in (CORPUS / "manifests").rglob("*") if path.suffix in MANIFEST_SUFFIXES}
    return [*sorted(found), CORPUS / "reviews"]


def _previewed(*extra: str) -> list[str]:
    """`pod-tailor preview -f DIR` of every app directory: its exit code, stderr and stdout (the
    corpus' and the session's paths written as names, so any clone reads the same)."""
    lines, home = [], os.environ["HOME"]
    for directory in _app_directories():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["preview", "-f", str(directory), *extra])
        name = directory.relative_to(CORPUS).as_posix()
        text = f"=== {name} exit {code}\n--- stderr\n{err.getvalue()}--- stdout\n{out.getvalue()}"
        for path in extra:
            text = text.replace(path, Path(path).name) if "/" in path else text
        lines.append(text.replace(str(CORPUS), "$CORPUS").replace(home, "$HOME"))
    return lines


def _decoded(line: str) -> str:
    """A served line with its patch decoded, for a readable diff."""
    name, status, body = line.split(" ", 2)
    with contextlib.suppress(ValueError, KeyError):
        document = json.loads(body)
        patch = document["response"].pop("patch", None)
        if patch is not None:
            document["response"]["patch"] = json.loads(base64.b64decode(patch))
        body = json.dumps(document, indent=1, sort_keys=True)
    return f"{name} {status}\n{body}"


def _entries(text: str, *, multiline: bool) -> list[str]:
    """The recorded file's entries: one per line, or (preview) each `=== DIR` block."""
    if not multiline:
        return text.splitlines()
    return [block.rstrip("\n") for block in re.split(r"^(?==== )", text, flags=re.M) if block]


def _compare(name: str, lines: list[str], *, readable: bool = False) -> None:
    path = GOLDEN / f"{name}.txt"
    text = "\n".join(lines) + "\n"
    if RECORD:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing: record it (see this module's docstring)"
    recorded_text = path.read_text(encoding="utf-8")
    if recorded_text == text:
        return
    recorded = _entries(recorded_text, multiline=not readable)
    show = _decoded if readable else (lambda line: line)
    lines = _entries(text, multiline=not readable)
    changed = [
        "".join(difflib.unified_diff(show(old).splitlines(True), show(new).splitlines(True), "was", "now"))
        for old, new in zip(recorded, lines, strict=False)
        if old != new
    ][:5]
    pytest.fail(f"{name}: {sum(a != b for a, b in zip(recorded, lines, strict=False))} of {len(lines)} "
                f"answers differ (recorded {len(recorded)}); the first:\n" + "\n".join(changed))


# --- the tests ---------------------------------------------------------------------------------------


def test_the_server_answers_every_review_as_recorded_on_embedded_defaults() -> None:
    lines = _served(ClusterSnapshot(policies=bundled_policies()), ProfileSnapshot(), replicas=1)
    assert len(lines) == 132, MISSING
    _compare("server-embedded", lines, readable=True)


def test_the_server_answers_a_burst_in_a_modelled_cluster_as_recorded(store: Path) -> None:
    lines = _served(_cluster(), load_snapshot(store), replicas=REPLICAS)
    _compare("server-cluster", lines, readable=True)


def test_preview_prints_every_manifest_directory_as_recorded() -> None:
    _compare("preview-embedded", _previewed())


def test_preview_with_profiles_prints_every_manifest_directory_as_recorded(store: Path) -> None:
    _compare("preview-profiles", _previewed("--profiles-path", str(store), "--server-version", "1.33"))
