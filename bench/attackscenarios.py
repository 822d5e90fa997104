"""The attack bench's bad-state scenario: a corrupt or missing profile store and an invalid policy.

The cluster is the project's HTTP-level fake API server (tests/kubefake.py); the profile stores are
a file and the ConfigMaps the recommender writes. After each break the server must keep answering
from its last good state while /readyz and /metrics say which source is broken.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from attackkit import Client, Server, serving
from kubefake import FakeKube

from tests.reviews import review_for
from webhook.core.model.profile import Evidence, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.store import ProfileDocument, WorkloadEntry, encode_document

__all__ = ["badstate"]

WORKLOAD = WorkloadKey("default", "Deployment", "guestbook-ui")
POLICY = "policies:\n  default:\n    drainSeconds: 40\n"
BAD_POLICY = "policies:\n  default:\n    resources:\n      cpu: {request: NaN}\n"


def good_document() -> dict[str, Any]:
    evidence = Evidence("14d", 4000, 300.0, 95.0, 0.15, 0.9)
    rec = Recommendation(Decimal("0.321"), Decimal(300 * 2**20), evidence)
    document = ProfileDocument({WORKLOAD: WorkloadEntry({"guestbook-ui": rec})}, time.time(), "bench")
    return encode_document(document)


def _look(server: Server) -> str:
    """What the server says and does now, in one line."""
    ready = server.get("/readyz")
    details = ready.json()
    sources = ", ".join(
        f"{name} {'up' if entry['up'] else 'DOWN'}" for name, entry in details["sources"].items()
    )
    found = _post(server, orjson.dumps(review_for()))
    patch = orjson.loads(base64.b64decode(found["patch"])) if "patch" in found else []
    values = {op["path"].rsplit("/", 1)[-1]: op["value"] for op in patch}
    requests: dict[str, Any] = next((op["value"] for op in patch if op["path"].endswith("/requests")), {})
    valid = server.metric("pod_tailor_policy_configmap_valid")
    return (f"readyz {ready.status_code} ({sources}); cpu request {requests.get('cpu')}, grace "
            f"{values.get('terminationGracePeriodSeconds')}; policy_configmap_valid {valid}; alive "
            f"{server.process.poll() is None}")


def _post(server: Server, body: bytes) -> dict[str, Any]:
    import asyncio

    async def once() -> bytes:
        client = Client(server.port, server.context)
        try:
            return (await client.post(body)).body
        finally:
            client.close()

    found: dict[str, Any] = orjson.loads(asyncio.run(once()))["response"]
    return found


def _configmap(name: str, data: dict[str, str] | None = None, binary: dict[str, str] | None = None,
               labels: dict[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "namespace": "pod-tailor", "labels": labels or {}}}
    if data is not None:
        body["data"] = data
    if binary is not None:
        body["binaryData"] = binary
    return body


def badstate(ca: Path, cert: Path, key: Path, folder: Path, *, quick: bool) -> list[str]:
    settle = 3.0  # a failing store is asked again after up to 8 refresh intervals (0.3 s here)
    lines = ["\nbad state (file store, ConfigMap store and policy ConfigMap on the fake API server):"]
    store = folder / "profiles.json"
    store.write_text(json.dumps(good_document()))
    with FakeKube() as kube:
        kube.put({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "default", "labels": {"pod-tailor.io/mode": "enforce"}}})
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pod-tailor"}})
        kube.put(_configmap("pod-tailor-policy", {"policy.yaml": POLICY}))
        kubeconfig = str(kube.write_kubeconfig(folder / "kubeconfig"))
        cluster = ("--kubeconfig", kubeconfig, "--namespace", "pod-tailor",
                   "--profiles-refresh-seconds", "0.3")
        with serving(ca, cert, key, *cluster, "--profiles-path", str(store), log_dir=folder) as server:
            lines.append(f"  good state:                     {_look(server)}")
            store.write_text(json.dumps({**good_document(), "workloads": []}))
            time.sleep(settle)
            lines.append(f"  store workloads is a list:      {_look(server)}")
            store.unlink()
            time.sleep(settle)
            lines.append(f"  store deleted:                  {_look(server)}")
            store.write_text(json.dumps(good_document()))
            time.sleep(settle)
            lines.append(f"  store restored:                 {_look(server)}")
            kube.put(_configmap("pod-tailor-policy", {"policy.yaml": BAD_POLICY}))
            time.sleep(settle)
            lines.append(f"  policy request: NaN:            {_look(server)}")
            kube.put(_configmap("pod-tailor-policy", {"policy.yaml": "policies: [1, 2]\n"}))
            time.sleep(settle)
            lines.append(f"  policy of the wrong shape:      {_look(server)}")
            kube.put(_configmap("pod-tailor-policy", {"policy.yaml": POLICY.replace("40", "45")}))
            time.sleep(settle)
            lines.append(f"  policy fixed (drain 45):        {_look(server)}")
        labels = {"pod-tailor.io/profiles": "true", "pod-tailor.io/profiled-namespace": "default"}
        packed = base64.b64encode(__import__("gzip").compress(json.dumps(good_document()).encode())).decode()
        kube.put(_configmap("profiles-default", binary={"profiles.json.gz": packed}, labels=labels))
        with serving(ca, cert, key, *cluster, "--profiles-store", "kubernetes", log_dir=folder) as server:
            lines.append(f"  ConfigMap store, good:          {_look(server)}")
            kube.put(_configmap("profiles-default", binary={"profiles.json.gz": packed[: len(packed) // 2]},
                                labels=labels))
            time.sleep(settle)
            lines.append(f"  ConfigMap gzip cut in half:     {_look(server)}")
            garbage = {"profiles.json.gz": "not base64!"}
            kube.put(_configmap("profiles-default", binary=garbage, labels=labels))
            time.sleep(settle)
            lines.append(f"  ConfigMap binaryData not base64: {_look(server)}")
            kube.put(_configmap("profiles-default", binary={"profiles.json.gz": packed}, labels=labels))
            time.sleep(settle)
            lines.append(f"  ConfigMap restored:             {_look(server)}")
    return lines
