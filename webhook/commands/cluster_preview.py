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
import re
import shutil
import sys
from typing import Any, TextIO

from webhook.commands.parser import group
from webhook.config.yamltext import read_input
from webhook.offline.dryrun import SKIP_LABEL, controller_pod, dry_run_create, injected_diff
from webhook.offline.sources import load_documents, pod_sources

__all__ = ["register", "run"]


def _short(error: str) -> str:
    """The telling part of kubectl's error ("dial tcp ...: connection refused"), not its advice."""
    found = re.search(
        r"(dial tcp [^;\n]*|unable to connect to the server[^;\n]*|no configuration[^;\n]*)", error, re.I
    )
    return found[1] if found else (error.splitlines() or ["kubectl failed"])[0][:160]


def _offline(args: argparse.Namespace, reason: str, out: TextIO) -> int:
    from webhook.commands import main as cli_main

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
    text = read_input(args.filename)
    sources = pod_sources(load_documents(text, origin=args.filename), namespace=args.namespace)
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
    given = group(parser, "input")
    given.add_argument("-f", "--filename", required=True, help="Pod or workload manifest; - = stdin")
    given.add_argument("-n", "--namespace", help="namespace the Pods would be created in")
    cluster = group(parser, "cluster")
    cluster.add_argument("--kubeconfig", help="kubeconfig for kubectl (default: kubectl's own)")
    cluster.add_argument("--context", help="kubeconfig context")
    cluster.add_argument("--kubectl", help="kubectl binary (default: kubectl on PATH)")
    parser.set_defaults(func=run)
