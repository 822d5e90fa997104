"""`pod-tailor report`: what pod-tailor would do to every workload of a cluster, or of manifests.

Without -f it lists the cluster (kubeconfig or in-cluster): Deployments, StatefulSets, DaemonSets,
ReplicaSets and Jobs of no other controller, CronJobs, bare Pods, Argo Rollouts when served, in the
namespaces opted in (or all of them with --all-namespaces: "what if we opted in everything"). Each
workload's Pod goes through the same engine as the webhook. Exit codes: 0, 1 when nothing could be
shown, 3 with --exit-code when anything would change (a CI gate on manifests).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from webhook.commands.options import (
    add_build_options,
    add_store_options,
    build_run,
    build_settings,
    store_from,
)
from webhook.config.policies import bundled_policies, load_policy_file
from webhook.core.policy import PolicyError, PolicySet
from webhook.core.snapshot import ClusterSnapshot
from webhook.offline.facts import with_manifest_facts
from webhook.offline.sources import SourceError
from webhook.profiles.store import StoreError
from webhook.report.collect import read_manifests
from webhook.report.live import ClusterError, read_cluster
from webhook.report.model import Report
from webhook.report.pipeline import build_report
from webhook.report.progress import Progress
from webhook.report.usage import Usage, built_now, from_store, without_profiles

__all__ = ["FORMATS", "register", "render"]

FORMATS = ("table", "wide", "json", "yaml", "csv", "html")
CHANGES = 3  # --exit-code: something would change


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="what pod-tailor would do to a whole cluster (or to manifests), with totals",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        help="manifest file or directory (recursive), - for stdin; repeatable [default: the cluster]",
    )
    parser.add_argument(
        "-n",
        dest="namespace",
        action="append",
        default=[],
        help="only this namespace (repeatable; same as --namespace)",
    )
    parser.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="every namespace, as if each were labelled pod-tailor.io/mode=enforce",
    )
    parser.add_argument("-o", "--output", default="table", help=f"{', '.join(FORMATS)} [table]")
    parser.add_argument("--output-file", type=Path, help="write the report here instead of stdout")
    parser.add_argument(
        "--policy-file",
        type=Path,
        help="policy YAML [default: the cluster's policy ConfigMap, else the bundled policy]",
    )
    parser.add_argument(
        "--policy-configmap",
        default="pod-tailor-policy",
        help="the policy ConfigMap in --store-namespace [pod-tailor-policy]",
    )
    parser.add_argument(
        "--server-version", metavar="1.N", help="Kubernetes version for -f (default: unknown)"
    )
    parser.add_argument("--exit-code", action="store_true", help="exit 3 when anything would change")
    add_build_options(parser)
    add_store_options(parser)
    parser.set_defaults(func=_main)


def render(report: Report, output: str, *, width: int | None = None) -> str:
    if output in ("table", "wide"):
        from webhook.report.text import render_table

        return render_table(report, wide=output == "wide", width=width)
    if output == "html":
        from webhook.report.html import render_html

        html: str = render_html(report)
        return html
    from webhook.report import document

    renderers = {"json": document.render_json, "yaml": document.render_yaml, "csv": document.render_csv}
    return renderers[output](report)


def _fail(message: str) -> int:
    print(f"pod-tailor report: {message}", file=sys.stderr)
    return 1


def _version(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    major, _, minor = text.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise SourceError(f"--server-version wants MAJOR.MINOR like 1.30, got {text!r}")
    return int(major), int(minor)


def _usage(args: argparse.Namespace, progress: Progress) -> Usage:
    if args.prometheus_url:
        run = build_run(args)
        where = run.connection.display_url if run.connection else args.prometheus_url
        return built_now(run, build_settings(args), where=where, progress=progress.step)
    try:
        store = store_from(args)
    except StoreError as exc:
        return without_profiles(f"{exc}: no usage profiles, every value from the policy")
    return from_store(store)


def _policies(args: argparse.Namespace) -> PolicySet | None:
    return load_policy_file(str(args.policy_file)) if args.policy_file else None


def _offline(args: argparse.Namespace, usage: Usage, progress: Progress) -> Report:
    stdin = sys.stdin.read() if "-" in args.filename else None
    namespace = args.namespace[0] if len(args.namespace) == 1 else None
    items, problems, documents = read_manifests(args.filename, stdin=stdin, namespace=namespace)
    if args.namespace and namespace is None:
        items = [item for item in items if item.namespace in args.namespace]
    cluster = ClusterSnapshot(
        policies=_policies(args) or bundled_policies(),
        server_version=_version(args.server_version),
        taken_at=time.time(),
        source="manifests",
    )
    cluster = with_manifest_facts(cluster, documents, namespace=namespace)
    problems = [*problems, *([usage.problem] if usage.problem else [])]
    return build_report(
        items,
        cluster=cluster,
        profiles=usage.snapshot,
        summaries=usage.summaries,
        progress=progress,
        source="manifests " + ", ".join(args.filename),
        problems=problems,
    )


def _live(args: argparse.Namespace, usage: Usage, progress: Progress) -> Report:
    view = read_cluster(
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespace),
        all_namespaces=args.all_namespaces,
        own_namespace=args.store_namespace,
        policy_configmap=args.policy_configmap,
        policies=_policies(args),
        progress=progress,
    )
    problems = [*view.problems, *([usage.problem] if usage.problem else [])]
    report = build_report(
        view.workloads,
        cluster=view.cluster,
        profiles=usage.snapshot,
        summaries=usage.summaries,
        progress=progress,
        source=view.source,
        assume_opted_in=args.all_namespaces,
        problems=problems,
    )
    return dataclasses.replace(report, in_place=view.in_place)


def _main(args: argparse.Namespace) -> int:
    if args.output not in FORMATS:
        return _fail(f"unknown output format {args.output!r}: use one of {', '.join(FORMATS)}")
    progress = Progress(enabled=None if not args.quiet else False)
    try:
        usage = _usage(args, progress)
        report = _offline(args, usage, progress) if args.filename else _live(args, usage, progress)
    except (SourceError, PolicyError, ClusterError) as exc:
        progress.done()
        return _fail(str(exc))
    progress.done()
    for problem in report.problems:
        print(f"pod-tailor report: {problem}", file=sys.stderr)
    if not report.workloads and report.problems:
        return _fail("nothing to report")
    width = shutil.get_terminal_size().columns if args.output_file is None and sys.stdout.isatty() else None
    text = render(report, args.output, width=width)
    if args.output_file is not None:
        try:
            args.output_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            return _fail(f"{args.output_file}: {exc.strerror}")
    else:
        sys.stdout.write(text)
    return CHANGES if args.exit_code and report.changed else 0
