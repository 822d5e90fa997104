"""`kubectl pod-tailor preview -f FILE|DIR [-R] [-n NS]`: what pod-tailor changes, asked of the cluster.

The input is read as `pod-tailor preview` reads it (`webhook.offline.inputs`: files, directories, `-R`,
stdin, Lists), and for each workload in it, in order, the Pod its controller would create is built
(labels, generateName, the controller owner reference, a StatefulSet's claims) and sent twice through
the cluster's whole admission chain with `kubectl create --dry-run=server -o json`: once labelled
`pod-tailor.io/skip=true` (the webhook's objectSelector leaves it out) and once as is. The difference
between the two answers is exactly what pod-tailor injected, whatever else LimitRanger, other webhooks
and defaulting did; the warnings kubectl prints are pod-tailor's dry-run explanations. Documents
without Pods (Services, ConfigMaps) have nothing to show, as in `pod-tailor preview --diff`. Without
cluster access (or without kubectl) it says so, runs the offline `pod-tailor preview --diff` on the same
input (same engine, bundled policy, no LimitRanges or namespace labels) and exits 3. A --kubectl,
--kubeconfig or --context that cannot be used is an error (exit 2), never a reason to fall back.
"""

from __future__ import annotations

import argparse
import copy
import io
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from webhook.commands.failures import FINDINGS, UNREACHABLE, InputError
from webhook.commands.options import manifests_given
from webhook.commands.parser import exits, take
from webhook.offline.dryrun import SKIP_LABEL, controller_pod, dry_run_create, injected_diff
from webhook.offline.inputs import Input, read_inputs
from webhook.offline.sources import (
    PodSource,
    SourceError,
    input_documents,
    nothing_to_preview,
    object_sources,
)

__all__ = ["register", "run"]


def _short(error: str) -> str:
    """The telling part of kubectl's error ("dial tcp ...: connection refused"), not its advice."""
    found = re.search(
        r"(dial tcp [^;\n]*|unable to connect to the server[^;\n]*|no configuration[^;\n]*)", error, re.I
    )
    return found[1] if found else (error.splitlines() or ["kubectl failed"])[0][:160]


def _offline(args: argparse.Namespace, reason: str, inputs: Sequence[Input], out: TextIO) -> int:
    """The offline preview of the same input, after saying why: exit 3 (the cluster was not asked),
    or the offline preview's own code when it failed."""
    from webhook.commands import main as cli_main

    print(f"pod-tailor: no cluster access ({_short(reason)}); showing the OFFLINE preview instead", file=out)
    print(
        "pod-tailor: (bundled policy, namespace labels, LimitRanges and server version unknown)\n", file=out
    )
    out.flush()
    argv = ["preview", *(part for name in args.filename for part in ("-f", name)), "--diff"]
    if args.recursive:
        argv.append("-R")
    if args.namespace:
        argv += ["-n", args.namespace]
    read = [given.text for given in inputs if given.origin == "-"]
    if read:  # stdin was read already: the offline preview reads the same text again
        sys.stdin = io.StringIO(read[0])
    code = cli_main(argv)
    return UNREACHABLE if code == 0 else code


def _sources(args: argparse.Namespace, inputs: Sequence[Input], problems: list[str]) -> list[PodSource]:
    """Every Pod or pod template in `inputs`, in order, as `pod-tailor preview` finds them; SourceError
    when there is none."""
    documents = [
        document for given in inputs
        for document in input_documents(given.text, origin=given.origin, problems=problems)
    ]  # fmt: skip
    objects = [obj for document in documents for obj in document.objects]
    found = object_sources(documents, namespace=args.namespace, problems=problems)
    sources = [source for obj in objects if (source := found.get(id(obj)))]
    if not sources:
        raise SourceError(nothing_to_preview([obj for obj in objects if id(obj) in found]))
    return sources


def run(args: argparse.Namespace, kubectl: str | None, out: TextIO = sys.stdout) -> int:
    problems: list[str] = []
    inputs = read_inputs(args.filename, recursive=args.recursive, problems=problems)
    try:
        sources = _sources(args, inputs, problems)
    finally:
        for problem in problems:
            print(f"pod-tailor cluster-preview: {problem} (this document is left out)", file=sys.stderr)
    if kubectl is None:
        return _offline(args, "kubectl not found", inputs, out)
    extra = ["--kubeconfig", args.kubeconfig] if args.kubeconfig else []
    if args.context:
        extra += ["--context", args.context]
    status = FINDINGS if problems else 0
    several = len({source.origin for source in sources}) > 1
    for source in sources:
        label = f"{source.origin}: {source.label}" if several else source.label
        pod = controller_pod(source, namespace=args.namespace)
        skipped = copy.deepcopy(pod)
        skipped["metadata"].setdefault("labels", {})[SKIP_LABEL] = "true"
        baseline = dry_run_create(skipped, kubectl=kubectl, extra=extra)
        if baseline.bad_config:
            raise InputError(f"kubectl: {_short(baseline.error).removeprefix('error: ')}")
        if baseline.no_cluster:
            return _offline(args, baseline.error, inputs, out)
        admitted = dry_run_create(pod, kubectl=kubectl, extra=extra)
        if not (baseline.ok and admitted.ok and baseline.pod and admitted.pod):
            print(f"# {label}: the cluster refused the Pod\n{admitted.error or baseline.error}", file=out)
            status = 1
            continue
        namespace = admitted.pod["metadata"].get("namespace", "?")
        diff = injected_diff(baseline.pod, admitted.pod, label=f"{label} in {namespace}")
        print(f"# {label} -> Pod in namespace {namespace} (server-side dry run)", file=out)
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


def _kubectl(given: str | None) -> str | None:
    """The kubectl to run: --kubectl must name one that runs (InputError); else kubectl on PATH, if any."""
    if given is None:
        return shutil.which("kubectl")
    found = shutil.which(given)
    if found is None:
        raise InputError(f"--kubectl {given}: no such executable")
    return found


def _configure(args: argparse.Namespace) -> str | None:
    """The files named exist, --kubeconfig is a file and --kubectl runs (the kubectl found, None for none
    on PATH)."""
    manifests_given(args.filename, recursive=args.recursive)
    if args.kubeconfig and not Path(args.kubeconfig).is_file():
        raise InputError(f"--kubeconfig {args.kubeconfig}: no such file")
    return _kubectl(args.kubectl)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cluster-preview",
        help="what pod-tailor injects, asked of the cluster (kubectl pod-tailor preview)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    take(parser, "filename", "recursive", "namespace", "kubeconfig", "context", "kubectl",
         required={"filename"})
    exits(parser, {
        FINDINGS: "a document could not be used, or the cluster refused a Pod (each named)",
        UNREACHABLE: "no cluster could be reached, or no kubectl found: the offline preview was shown",
    })  # fmt: skip
    parser.set_defaults(func=run, configure=_configure)
