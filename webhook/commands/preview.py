"""`pod-tailor preview`: what the webhook would do to a manifest, offline, with the same engine.

Reads Pods, workload manifests (multi-document YAML) or an AdmissionReview, and prints the mutated
objects, a unified diff, or the JSON Patch (for a review: exactly what the server would send).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import jsonpatch

from webhook.config.policies import bundled_policies, load_policy_file
from webhook.core.namespace import Mode
from webhook.core.policy import PolicyError
from webhook.core.snapshot import ClusterSnapshot
from webhook.offline.preview import Previewed, dump_yaml, notes, run_preview
from webhook.offline.sources import SourceError
from webhook.profiles.store import StoreError, load_snapshot

__all__ = ["register"]


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


def _report(results: list[Previewed], *, args: argparse.Namespace, out: TextIO) -> None:
    if args.patch:
        for found in results:
            if found.source.is_review:  # exactly the patch the server would send
                ops = list(found.decision.ops) if found.mode is Mode.ENFORCE else []
            else:  # from the file as written: with what the API server sets, it applies to the file
                ops = jsonpatch.make_patch(found.source.document, found.document).patch
            out.write(json.dumps(ops) + "\n")
        return
    if args.diff:
        for found in results:
            before = dump_yaml(found.created).splitlines(True)
            after = dump_yaml(found.document).splitlines(True)
            where = "as written" if found.created is found.source.document else "as the API server creates it"
            label = found.source.label
            out.writelines(difflib.unified_diff(before, after, f"{label} ({where})", f"{label} (tailored)"))
        return
    out.write("---\n".join(dump_yaml(found.document) for found in results))


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
    for found in results:
        for line in notes(found.source, found.decision, found.mode):
            print(line, file=sys.stderr)
    _report(results, args=args, out=sys.stdout)
    return 0
