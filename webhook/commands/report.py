"""`pod-tailor report`: what pod-tailor would do to every workload of a cluster, or of manifests.

Without -f it lists the cluster (kubeconfig or in-cluster): Deployments, StatefulSets, DaemonSets,
ReplicaSets and Jobs of no other controller, CronJobs, bare Pods, Argo Rollouts when served, in the
namespaces opted in (or all of them with --all-namespaces: "what if we opted in everything"). Each
workload's Pod goes through the same engine as the webhook.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
from pathlib import Path
from typing import Any, NamedTuple

from webhook.commands.failures import FINDINGS, UNREACHABLE, InputError, UnreachableError
from webhook.commands.options import (
    BUILD,
    POLICY,
    PROMETHEUS,
    SCOPE,
    STORE,
    build_run,
    build_settings,
    cluster_found,
    manifests_given,
    stored_profiles,
)
from webhook.commands.parser import exits, take
from webhook.config.policies import bundled_policies, load_policy_file
from webhook.config.yamltext import read_input
from webhook.core.policy.policies import PolicySet
from webhook.profiles.store import ProfileStore
from webhook.report.manifests import manifests_report
from webhook.report.model import Report
from webhook.report.pipeline import build_report
from webhook.report.progress import Progress
from webhook.report.usage import Usage, built_now, from_store, without_profiles

__all__ = ["FORMATS", "register", "render"]

FORMATS = ("table", "wide", "json", "yaml", "csv", "html")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="what pod-tailor would do to a whole cluster (or to manifests), with totals",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    take(parser, *SCOPE, "server_version", "output", "output_file", "exit_code", *POLICY, *PROMETHEUS, *BUILD,
         *STORE)
    exits(parser, {
        FINDINGS: "a manifest or namespace could not be read (named on stderr, the rest reported), nothing "
        "to report, or, with --exit-code, something would change",
        UNREACHABLE: "the cluster (or Prometheus, with --prometheus-url) could not be reached",
    })  # fmt: skip
    parser.set_defaults(func=_main, configure=_configure)


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
        raise InputError(f"--server-version wants MAJOR.MINOR like 1.30, got {text!r}")
    return int(major), int(minor)


class _Configured(NamedTuple):
    policies: PolicySet | None
    server_version: tuple[int, int] | None
    store: ProfileStore | None  # None: profiles built from --prometheus-url for this report
    warning: str | None


def _configure(args: argparse.Namespace) -> _Configured:
    """Options, files, the profile store and the cluster's configuration checked."""
    if args.output not in FORMATS:
        raise InputError(f"--output {args.output}: use one of {', '.join(FORMATS)}")
    manifests_given(args.filename, recursive=args.recursive)
    policies = load_policy_file(args.policy_file) if args.policy_file else None
    if not args.filename:
        cluster_found(args, why="pass --kubeconfig FILE, or -f DIR to report on manifests")
    if args.prometheus_url:
        build_run(args)  # the connection, checked
        build_settings(args)
        return _Configured(policies, _version(args.server_version), None, None)
    store, warning = stored_profiles(args)
    return _Configured(policies, _version(args.server_version), store, warning)


def _usage(args: argparse.Namespace, configured: _Configured, progress: Progress) -> Usage:
    if configured.store is None:
        run = build_run(args)
        where = run.connection.display_url if run.connection else args.prometheus_url
        return built_now(run, build_settings(args), where=where, progress=progress.step)
    if configured.warning:
        return without_profiles(configured.warning)
    return from_store(configured.store)


def _live(args: argparse.Namespace, configured: _Configured, usage: Usage, progress: Progress) -> Report:
    from webhook.report.live import read_cluster

    view = read_cluster(
        kubeconfig=args.kubeconfig,
        namespaces=tuple(args.namespaces),
        all_namespaces=args.all_namespaces,
        own_namespace=args.pod_tailor_namespace,
        policy_configmap=args.policy_configmap,
        policies=configured.policies,
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


def _main(args: argparse.Namespace, configured: _Configured) -> int:
    from webhook.report.live import ClusterError  # where used: it imports the Kubernetes client

    progress = Progress(enabled=None if not args.quiet else False)
    try:
        usage = _usage(args, configured, progress)
        if args.filename:
            report = manifests_report(
                args.filename, policies=configured.policies or bundled_policies(), usage=usage,
                namespaces=args.namespaces, server_version=configured.server_version, progress=progress,
                stdin=read_input("-") if "-" in args.filename else None, recursive=args.recursive,
            )
        else:
            report = _live(args, configured, usage, progress)
    except ClusterError as exc:
        progress.done()
        raise UnreachableError(str(exc)) from None
    progress.done()
    for problem in report.problems:
        print(f"pod-tailor report: {problem}", file=sys.stderr)
    if not report.workloads and report.problems:
        return _fail("nothing to report")
    width = shutil.get_terminal_size().columns if args.output_file is None and sys.stdout.isatty() else None
    text = render(report, args.output, width=width)
    if args.output_file is not None:
        try:
            Path(args.output_file).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--output-file {args.output_file}: {exc.strerror}") from None
    else:
        sys.stdout.write(text)
    left_out = [problem for problem in report.problems if problem != usage.problem]  # not a warning
    return FINDINGS if left_out or (args.exit_code and report.changed) else 0
