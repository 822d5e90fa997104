"""`kubectl pod-tailor preview -f FILE [-n NS]`: what pod-tailor changes, asked of the real cluster.

For each workload the Pod its controller would create is built (labels, generateName, the controller
owner reference) and sent twice through the cluster's whole admission chain with
`kubectl create --dry-run=server -o json`: once labelled `pod-tailor.io/skip=true` (the webhook's
objectSelector leaves it out) and once as is. The difference between the two answers is exactly what
pod-tailor injected, whatever else LimitRanger, other webhooks and defaulting did; the warnings kubectl
prints are pod-tailor's dry-run explanations. Without cluster access it says so and runs the offline
`pod-tailor preview` (same engine, bundled policy, no LimitRanges or namespace labels).
"""

from __future__ import annotations

import argparse
import copy
import difflib
import hashlib
import json
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from webhook import PREFIX
from webhook.sources import PodSource, SourceError, load_documents, pod_sources

__all__ = ["DryRun", "controller_pod", "register", "run"]

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
        name = str((document.get("metadata") or {}).get("name") or "preview")
        template = copy.deepcopy(source.pod)
        meta = template.get("metadata") or {}
        labels = dict(meta.get("labels") or {})
        version = str(document.get("apiVersion", "apps/v1"))
        hashed = _template_hash(template)
        if kind == "Deployment":
            labels["pod-template-hash"] = hashed
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
    no_cluster: bool


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


def _short(error: str) -> str:
    """The telling part of kubectl's error ("dial tcp ...: connection refused"), not its advice."""
    found = re.search(
        r"(dial tcp [^;\n]*|unable to connect to the server[^;\n]*|no configuration[^;\n]*)", error, re.I
    )
    return found[1] if found else (error.splitlines() or ["kubectl failed"])[0][:160]


def _offline(args: argparse.Namespace, reason: str, out: TextIO) -> int:
    from webhook.cli import main as cli_main

    print(f"pod-tailor: no cluster access ({_short(reason)}); showing the OFFLINE preview instead", file=out)
    print(
        "pod-tailor: (bundled policy, namespace labels, LimitRanges and server version unknown)\n", file=out
    )
    out.flush()
    argv = ["preview", "-f", args.filename, "--diff"]
    if args.namespace:
        argv += ["-n", args.namespace]
    return cli_main(argv)


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    text = sys.stdin.read() if args.filename == "-" else Path(args.filename).read_text(encoding="utf-8")
    try:
        sources = pod_sources(load_documents(text), namespace=args.namespace)
    except SourceError as exc:
        print(f"pod-tailor preview: {exc}", file=sys.stderr)
        return 2
    kubectl = args.kubectl or shutil.which("kubectl")
    if kubectl is None:
        return _offline(args, "kubectl not found", out)
    extra = ["--kubeconfig", args.kubeconfig] if args.kubeconfig else []
    if args.context:
        extra += ["--context", args.context]
    status = 0
    for source in sources:
        pod = controller_pod(source, namespace=args.namespace)
        skipped = copy.deepcopy(pod)
        skipped["metadata"].setdefault("labels", {})[SKIP_LABEL] = "true"
        baseline = dry_run_create(skipped, kubectl=kubectl, extra=extra)
        if baseline.no_cluster:
            return _offline(args, baseline.error, out)
        admitted = dry_run_create(pod, kubectl=kubectl, extra=extra)
        if not (baseline.ok and admitted.ok and baseline.pod and admitted.pod):
            print(
                f"# {source.label}: the cluster refused the Pod\n{admitted.error or baseline.error}", file=out
            )
            status = 1
            continue
        namespace = admitted.pod["metadata"].get("namespace", "?")
        diff = injected_diff(baseline.pod, admitted.pod, label=f"{source.label} in {namespace}")
        print(f"# {source.label} -> Pod in namespace {namespace} (server-side dry run)", file=out)
        if diff:
            out.writelines(diff)
        elif admitted.warnings:
            print("# pod-tailor changed nothing: dry-run mode; its warnings say what it would set", file=out)
        else:
            print(
                "# pod-tailor changed nothing (namespace not opted in, Pod skipped, or nothing to add)",
                file=out,
            )
        for warning in admitted.warnings:
            print(f"# warning: {warning}", file=out)
        print(file=out)
    return status


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cluster-preview",
        help="what pod-tailor injects, asked of the cluster (kubectl pod-tailor preview)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-f", "--filename", required=True, help="Pod or workload manifest; - = stdin")
    parser.add_argument("-n", "--namespace", help="namespace the Pods would be created in")
    parser.add_argument("--kubeconfig", help="kubeconfig for kubectl (default: kubectl's own)")
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument("--kubectl", help="kubectl binary (default: kubectl on PATH)")
    parser.set_defaults(func=run)
