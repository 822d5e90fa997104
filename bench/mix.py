"""A realistic mix of Pod creations for the serve bench (`bench/serve.py --mix`).

Made from the corpus' Deployment reviews, in these shares of the requests:
- 50 % Deployment replicas (the same template, each with its own uid and ServiceAccount volume);
- 15 % StatefulSet ordinals (`db-0`, `db-1`, ...: own name, `pod-name` and `pod-index` labels);
- 15 % Job Pods (own name, completion index in labels and annotations);
- 10 % first Pods of a new template (a rollout that changed what the decision does not read, such
  as the image): the ReplicaSet's name and `pod-template-hash` hold a marker that the load
  generator replaces with a new hash for every request;
- 10 % one-off Pods no cache has seen: no controller, and a name holding the marker (a new name for
  every request), so each is decided afresh.
Each body is compact JSON, as the API server sends it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import orjson

__all__ = ["MARKER", "SHARES", "mix_bodies"]

MARKER = "zzzzzzzzzz"  # 10 characters of the pod-template-hash alphabet; replaced per request
SHARES = {"deployment": 50, "statefulset": 15, "job": 15, "new-template": 10, "one-off": 10}
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _base(review: bytes, rng: random.Random, uid: str) -> dict[str, Any]:
    document: dict[str, Any] = orjson.loads(review)
    document["request"]["uid"] = uid
    suffix = "".join(rng.choice(_ALPHABET) for _ in range(5))
    spec = document["request"]["object"]["spec"]
    for volume in spec.get("volumes") or ():
        if volume.get("name", "").startswith("kube-api-access-"):
            volume["name"] = f"kube-api-access-{suffix}"
    for container in spec.get("containers") or ():
        for mount in container.get("volumeMounts") or ():
            if mount.get("name", "").startswith("kube-api-access-"):
                mount["name"] = f"kube-api-access-{suffix}"
    return document


def _owned(document: dict[str, Any], kind: str, name: str, api_version: str) -> dict[str, Any]:
    owner = {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"{name}-uid", "controller": True}
    metadata: dict[str, Any] = document["request"]["object"]["metadata"]
    metadata["ownerReferences"] = [owner]
    metadata.setdefault("labels", {}).pop("pod-template-hash", None)
    return metadata


def _one(kind: str, review: bytes, index: int, rng: random.Random) -> dict[str, Any]:
    document = _base(review, rng, f"mix-{kind}-{index:06d}")
    metadata = document["request"]["object"]["metadata"]
    base = str(metadata.get("generateName", "app-")).rstrip("-").rsplit("-", 1)[0] or "app"
    if kind == "statefulset":
        ordinal = index % 5
        labels = _owned(document, "StatefulSet", base, "apps/v1")["labels"]
        labels.update({"statefulset.kubernetes.io/pod-name": f"{base}-{ordinal}",
                       "apps.kubernetes.io/pod-index": str(ordinal),
                       "controller-revision-hash": f"{base}-7c9f"})
        metadata.pop("generateName", None)
        metadata["name"] = f"{base}-{ordinal}"
    elif kind == "job":
        completion = str(index % 20)
        labels = _owned(document, "Job", f"{base}-batch", "batch/v1")["labels"]
        labels.update({"batch.kubernetes.io/job-completion-index": completion, "job-name": f"{base}-batch"})
        metadata.setdefault("annotations", {})["batch.kubernetes.io/job-completion-index"] = completion
        metadata["generateName"] = f"{base}-batch-{completion}-"
        document["request"]["object"]["spec"]["restartPolicy"] = "Never"
    elif kind == "new-template":
        _owned(document, "ReplicaSet", f"{base}-{MARKER}", "apps/v1")["labels"]["pod-template-hash"] = MARKER
        metadata["generateName"] = f"{base}-{MARKER}-"
    elif kind == "one-off":
        metadata.pop("ownerReferences", None)
        metadata.pop("generateName", None)
        metadata.get("labels", {}).pop("pod-template-hash", None)
        metadata["name"] = f"{base}-debug-{MARKER}"
    return document


def mix_bodies(reviews: Sequence[bytes], *, count: int = 2000, seed: int = 11) -> list[bytes]:
    """`count` bodies in the shares above, interleaved, from the corpus' Deployment reviews."""
    rng = random.Random(seed)
    kinds = [kind for kind, share in SHARES.items() for _ in range(share)]
    out = []
    for index in range(count):
        kind = kinds[index % len(kinds)]
        out.append(orjson.dumps(_one(kind, reviews[index % len(reviews)], index, rng)))
    rng.shuffle(out)
    return out
