"""The cluster's own answer to "what would pod-tailor do": a Pod sent through the real admission chain.

For each workload the Pod its controller would create is built (labels, generateName, the controller
owner reference) and sent twice with `kubectl create --dry-run=server -o json`: once labelled
`pod-tailor.io/skip=true` (the webhook's objectSelector leaves it out) and once as is. The difference
between the two answers is exactly what pod-tailor injected, whatever else LimitRanger, other webhooks
and defaulting did. Nothing is created.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from webhook import PREFIX
from webhook.offline.sources import PodSource

__all__ = ["SKIP_LABEL", "DryRun", "controller_pod", "dry_run_create", "injected_diff"]

SKIP_LABEL = PREFIX + "skip"
# What kubectl says when it cannot reach or find a cluster (as opposed to a request the cluster refused).
_NO_CLUSTER = (
    "unable to connect to the server",
    "connection refused",
    "no configuration has been provided",
    "couldn't get current server api group list",
    "dial tcp",
    "no such host",
    "i/o timeout",
    "the server doesn't have a resource type",
    "invalid configuration",
)
# What kubectl says when the context or kubeconfig it was given cannot be used: nothing was asked.
_BAD_CONFIG = ("context \"", "error loading config file", "no such file or directory", "unknown flag")
_HASH_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' rand.SafeEncodeString alphabet


def _template_hash(template: Any) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_HASH_ALPHABET[b % len(_HASH_ALPHABET)] for b in digest[:10])


def _owner(api_version: str, kind: str, name: str) -> dict[str, Any]:
    # No blockOwnerDeletion: that would need update rights on the owner's finalizers.
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": str(uuid.uuid4()),
        "controller": True,
    }


def controller_pod(source: PodSource, *, namespace: str | None) -> dict[str, Any]:
    """The Pod the workload's controller would create (what the webhook sees), ready for `kubectl create`."""
    document = source.document
    kind = str(document.get("kind"))
    if kind == "Pod":
        pod = copy.deepcopy(document)
        for field in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            pod.get("metadata", {}).pop(field, None)
        pod.pop("status", None)
    else:
        meta_in = document.get("metadata") or {}
        name = str(meta_in.get("name") or meta_in.get("generateName") or "preview")  # as pod_sources does
        template = copy.deepcopy(source.pod)
        meta = template.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        version = str(document.get("apiVersion", "apps/v1"))
        hashed = _template_hash(template)
        if kind == "Deployment":
            labels["pod-template-hash"] = hashed
            owner, generate = _owner("apps/v1", "ReplicaSet", f"{name}-{hashed}"), f"{name}-{hashed}-"
        elif kind == "Rollout":  # Argo Rollouts own ReplicaSets too, with their own hash label
            labels["rollouts-pod-template-hash"] = hashed
            owner, generate = _owner("apps/v1", "ReplicaSet", f"{name}-{hashed}"), f"{name}-{hashed}-"
        elif kind == "CronJob":
            job = f"{name}-28000000"
            labels |= {"batch.kubernetes.io/job-name": job, "job-name": job}
            owner, generate = _owner("batch/v1", "Job", job), f"{job}-"
        elif kind == "Job":
            labels |= {"batch.kubernetes.io/job-name": name, "job-name": name}
            owner, generate = _owner(version, kind, name), f"{name}-"
        elif kind in ("StatefulSet", "DaemonSet"):
            labels["controller-revision-hash"] = f"{name}-{hashed}"
            owner, generate = _owner(version, kind, name), f"{name}-"
        else:  # ReplicaSet, ReplicationController
            owner, generate = _owner(version, kind, name), f"{name}-"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": generate,
                "labels": labels,
                "annotations": dict(meta.get("annotations") or {}),
                "ownerReferences": [owner],
            },
            "spec": template.get("spec") or {},
        }
        if kind == "StatefulSet":
            pod["metadata"]["name"] = f"{name}-0"
            pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = f"{name}-0"
            del pod["metadata"]["generateName"]
            # A volume per claim template, claimed as `<template>-<pod>`, in place of one of that name.
            claims = source.claim_templates
            if claims:
                kept = [v for v in pod["spec"].get("volumes") or () if (v or {}).get("name") not in claims]
                pod["spec"]["volumes"] = [
                    *({"name": c, "persistentVolumeClaim": {"claimName": f"{c}-{name}-0"}} for c in claims),
                    *kept,
                ]
    target = namespace or (document.get("metadata") or {}).get("namespace")
    if target:
        pod["metadata"]["namespace"] = target
    elif "namespace" in pod["metadata"]:
        del pod["metadata"]["namespace"]
    return pod


@dataclass(frozen=True, slots=True)
class DryRun:
    ok: bool
    pod: dict[str, Any] | None
    warnings: tuple[str, ...]
    error: str
    no_cluster: bool  # kubectl reached no cluster
    bad_config: bool = False  # kubectl could not use the context or kubeconfig it was given


def dry_run_create(pod: dict[str, Any], *, kubectl: str, extra: Sequence[str] = ()) -> DryRun:
    """`kubectl create --dry-run=server -o json -f -`: the Pod after the whole admission chain."""
    try:
        result = subprocess.run(
            [kubectl, *extra, "create", "--dry-run=server", "-o", "json", "-f", "-"],
            input=json.dumps(pod),
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DryRun(False, None, (), str(exc), True)
    lines = result.stderr.splitlines()
    warnings = tuple(line.removeprefix("Warning: ") for line in lines if line.startswith("Warning: "))
    error = "\n".join(line for line in lines if not line.startswith("Warning: ")).strip()
    if result.returncode != 0:
        if any(s in error.lower() for s in _BAD_CONFIG):
            return DryRun(False, None, warnings, error, False, bad_config=True)
        return DryRun(False, None, warnings, error, any(s in error.lower() for s in _NO_CLUSTER))
    return DryRun(True, json.loads(result.stdout), warnings, error, False)


def _comparable(pod: dict[str, Any]) -> dict[str, Any]:
    """The parts of an admitted Pod pod-tailor may change; names and ids differ between two dry runs."""
    meta = pod.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != SKIP_LABEL}
    return {
        "metadata": {"labels": labels, "annotations": meta.get("annotations") or {}},
        "spec": pod.get("spec"),
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the injected annotation) as `|` blocks, readable in a diff."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(obj: Any) -> list[str]:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=True, width=1000).splitlines(keepends=True)


def injected_diff(baseline: dict[str, Any], admitted: dict[str, Any], *, label: str) -> list[str]:
    before, after = _dump(_comparable(baseline)), _dump(_comparable(admitted))
    return list(
        difflib.unified_diff(before, after, f"{label} (without pod-tailor)", f"{label} (with pod-tailor)")
    )
