"""`pod-tailor preview`: what the webhook would do to a manifest, offline, with the same engine.

Reads Pods, workload manifests (multi-document YAML) or an AdmissionReview, and prints the mutated
objects, a unified diff, or the JSON Patch (for a review: exactly what the server would send).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import jsonpatch
import yaml

from webhook.admission.verdict import verdict
from webhook.core.decision import Decision
from webhook.core.engine import decide
from webhook.core.namespace import Mode, NamespaceSettings
from webhook.core.patch import pointer
from webhook.core.policy import PolicyError
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.policy_files import bundled_policies, load_policy_file
from webhook.profiles.store import StoreError, load_snapshot
from webhook.sources import PodSource, SourceError, load_documents, pod_sources

__all__ = ["register", "run_preview"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "preview",
        help="show what pod-tailor would inject into a manifest, offline",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-f", "--filename", required=True, help="Pod, workload manifest or AdmissionReview; - = stdin"
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--diff", action="store_true", help="print a unified diff instead of the objects")
    shown.add_argument("--patch", action="store_true", help="print the JSON Patch instead of the objects")
    parser.add_argument("--policy-file", type=Path, help="policy YAML (default: the bundled policy)")
    parser.add_argument(
        "--profiles", type=Path, help="profile store file (default: the shared default location)"
    )
    parser.add_argument("-n", "--namespace", help="namespace the Pods would be created in")
    parser.add_argument(
        "--namespace-label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label of that namespace, e.g. pod-tailor.io/mode=dry-run (repeatable)",
    )
    parser.add_argument(
        "--server-version", metavar="1.N", help="Kubernetes version to assume (default: unknown)"
    )
    parser.set_defaults(func=_main)


def _labels(pairs: list[str]) -> dict[str, str]:
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SourceError(f"--namespace-label wants KEY=VALUE, got {pair!r}")
        labels[key] = value
    return labels


def _version(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    major, _, minor = text.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise SourceError(f"--server-version wants MAJOR.MINOR like 1.30, got {text!r}")
    return int(major), int(minor)


def _prefixed(ops: tuple[dict[str, Any], ...], prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    head = pointer(prefix)
    return [{**op, "path": head + op["path"]} for op in ops]


def run_preview(
    text: str,
    *,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
) -> list[tuple[PodSource, Decision, Mode, dict[str, Any]]]:
    """Run the engine on every Pod found in `text`; returns (source, decision, mode, mutated document).

    `labels`, when given, are the labels of whichever namespace the objects land in.
    """
    sources = pod_sources(load_documents(text), namespace=namespace)
    if labels is not None:
        cluster = dataclasses.replace(cluster, namespaces={source.namespace: labels for source in sources})
    results = []
    for source in sources:
        settings, decision = decide(
            source.pod,
            namespace=source.namespace,
            cluster=cluster,
            profiles=profiles,
            workload=None if source.is_review else source.workload,
        )
        document = source.document
        if settings.mode is Mode.ENFORCE and decision.ops:
            document = jsonpatch.apply_patch(source.document, _prefixed(decision.ops, source.prefix))
        results.append((source, decision, settings.mode, document))
    return results


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the injected annotation) as readable `|` blocks."""


def _block_strings(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _block_strings)


def _dump(document: dict[str, Any]) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=10_000)


def _report(
    results: list[tuple[PodSource, Decision, Mode, dict[str, Any]]], *, args: argparse.Namespace, out: TextIO
) -> None:
    if args.patch:
        for source, decision, mode, _ in results:
            ops = list(decision.ops) if mode is Mode.ENFORCE else []
            out.write(json.dumps(ops if source.is_review else _prefixed(tuple(ops), source.prefix)) + "\n")
        return
    if args.diff:
        for source, _, _, document in results:
            before, after = _dump(source.document).splitlines(True), _dump(document).splitlines(True)
            out.writelines(
                difflib.unified_diff(
                    before, after, f"{source.label} (as written)", f"{source.label} (tailored)"
                )
            )
        return
    out.write("---\n".join(_dump(document) for _, _, _, document in results))


def _main(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.read() if args.filename == "-" else Path(args.filename).read_text(encoding="utf-8")
        policies = load_policy_file(str(args.policy_file)) if args.policy_file else bundled_policies()
        labels = _labels(args.namespace_label)
        cluster = ClusterSnapshot(
            policies=policies,
            server_version=_version(args.server_version),
            taken_at=time.time(),
            source="preview",
        )
        profiles = load_snapshot(args.profiles)
        results = run_preview(
            text, cluster=cluster, profiles=profiles, namespace=args.namespace, labels=labels or None
        )
    except (OSError, SourceError, PolicyError, StoreError) as exc:
        message = f"{args.filename}: {exc.strerror}" if isinstance(exc, OSError) else str(exc)
        print(f"pod-tailor preview: {message}", file=sys.stderr)
        return 2
    for source, decision, mode, _ in results:
        for line in _notes(source, decision, mode):
            print(line, file=sys.stderr)
    _report(results, args=args, out=sys.stdout)
    return 0


def _notes(source: PodSource, decision: Decision, mode: Mode) -> list[str]:
    """The warnings kubectl would print for this Pod (the server's own wording), then a note."""
    shown = verdict(NamespaceSettings(mode, decision.policy), decision)
    lines = [f"# {source.label}:"] if shown.warnings else []
    lines += [f"Warning: {warning}" for warning in shown.warnings]
    if mode is Mode.OFF:
        lines.append(f"# {source.label}: pod-tailor is off in this namespace; nothing would change")
    elif decision.skipped:
        lines.append(f"# {source.label}: left alone: {decision.skipped}")
    elif mode is Mode.ENFORCE and not decision.ops:
        lines.append(f"# {source.label}: nothing to add")
    return lines
