"""`pod-tailor preview`: what the webhook would do to manifests, offline, with the same engine.

Reads files, directories (-R: recursively) or stdin as `kubectl apply -f` does: Pods, workloads, their
Services and everything else (multi-document YAML, Lists) or an AdmissionReview. Prints every document
in order, the workloads tailored and the rest unchanged (so it pipes into `kubectl apply -f -` or
`kubectl diff -f -`), or a unified diff, or the JSON Patch (for a review: exactly what the server
would send). Services and Ingresses in any of the files decide the traffic path.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from typing import Any, NamedTuple, TextIO

import jsonpatch

from webhook.commands.failures import FINDINGS, InputError
from webhook.commands.options import manifests_given, stored_profiles
from webhook.commands.parser import exits, take
from webhook.config.policies import bundled_policies, load_policy_file
from webhook.core.model.namespace import Mode, label_problems
from webhook.core.policy.policies import PolicySet
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.inputs import read_inputs
from webhook.offline.preview import Preview, Previewed, dump_yaml, notes, preview_inputs
from webhook.offline.sources import SourceError
from webhook.profiles.store import StoreError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "preview",
        help="show what pod-tailor would inject into a manifest, offline",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    take(parser, "filename", "recursive", "namespace", "namespace_label", "server_version", "diff", "patch",
         "policy_file", "profiles_path", required={"filename"}, exclusive={"diff", "patch"})
    exits(parser, {
        FINDINGS: "a file or document could not be used (not text, not YAML, refused by the API server): "
        "named on stderr and left out, the rest printed",
    })  # fmt: skip
    parser.set_defaults(func=_main, configure=_configure)


def _labels(pairs: list[str]) -> dict[str, str]:
    labels = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(
                f"--namespace-label wants KEY=VALUE, e.g. pod-tailor.io/mode=dry-run, got {pair!r}"
            )
        labels[key] = value
    return labels


def _version(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    major, _, minor = text.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise InputError(f"--server-version wants MAJOR.MINOR like 1.30, got {text!r}")
    return int(major), int(minor)


def _label(found: Previewed, *, several: bool) -> str:
    """`Kind/name`, after its file when the preview read several."""
    return f"{found.source.origin}: {found.source.label}" if several else found.source.label


def _report(preview: Preview, *, args: argparse.Namespace, out: TextIO) -> None:
    results = preview.results
    several = len({found.source.origin for found in results}) > 1
    if args.patch:
        for found in results:
            if found.mode is not Mode.ENFORCE:  # dry-run and off patch nothing; the notes say what it would
                ops: list[Any] = []
            elif found.source.is_review:  # exactly the patch the server would send
                ops = list(found.decision.ops)
            else:  # from the file as written: with what the API server sets, it applies to the file
                ops = jsonpatch.make_patch(found.source.document, found.document).patch
            if len(results) > 1:  # one JSON object per line, each saying whose patch it is
                source = found.source
                out.write(json.dumps({"file": source.origin, "workload": source.label, "patch": ops}) + "\n")
            else:  # the array alone, as the server sends it
                out.write(json.dumps(ops) + "\n")
        return
    if args.diff:
        for found in results:
            before = dump_yaml(found.created).splitlines(True)
            after = dump_yaml(found.document).splitlines(True)
            where = "as written" if found.created is found.source.document else "as the API server creates it"
            label = _label(found, several=several)
            out.writelines(difflib.unified_diff(before, after, f"{label} ({where})", f"{label} (tailored)"))
        return
    out.write("---\n".join(dump_yaml(document) for document in preview.documents))


class _Configured(NamedTuple):
    policies: PolicySet
    labels: dict[str, str]
    server_version: tuple[int, int] | None
    profiles: ProfileSnapshot
    warnings: list[str]


def _configure(args: argparse.Namespace) -> _Configured:
    """Options, the policy file and the profile store read (--check-config stops here)."""
    manifests_given(args.filename, recursive=args.recursive)
    policies = load_policy_file(args.policy_file) if args.policy_file else bundled_policies()
    labels = _labels(args.namespace_label)
    warnings = label_problems(labels, policies=policies.policies)
    store, missing = stored_profiles(args)
    if missing:
        warnings.append(missing)
        profiles = ProfileSnapshot(source="none")
    else:
        try:
            profiles = store.read().snapshot(origin=store.describe())
        except StoreError as exc:
            raise InputError(str(exc)) from None
    return _Configured(policies, labels, _version(args.server_version), profiles, warnings)


def _main(args: argparse.Namespace, configured: _Configured) -> int:
    for warning in configured.warnings:
        print(f"pod-tailor preview: warning: {warning}", file=sys.stderr)
    problems: list[str] = []
    inputs = read_inputs(args.filename, recursive=args.recursive, problems=problems)
    cluster = ClusterSnapshot(
        policies=configured.policies,
        server_version=configured.server_version,
        taken_at=time.time(),
        source="preview",
    )
    try:
        preview = preview_inputs(
            inputs, cluster=cluster, profiles=configured.profiles, namespace=args.namespace,
            labels=configured.labels or None, problems=problems,
        )
    except SourceError:
        if problems:  # nothing left to preview: the documents left out are the whole story
            for problem in problems:
                print(f"pod-tailor preview: {problem} (this document is left out)", file=sys.stderr)
            return FINDINGS
        raise
    several = len({found.source.origin for found in preview.results}) > 1
    for found in preview.results:
        for line in notes(found.source, found.decision, found.mode, label=_label(found, several=several)):
            print(line, file=sys.stderr)
    _report(preview, args=args, out=sys.stdout)
    for problem in problems:
        print(f"pod-tailor preview: {problem} (this document is left out)", file=sys.stderr)
    return FINDINGS if problems else 0
