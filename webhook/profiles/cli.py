"""`pod-tailor profiles build|show` and `pod-tailor recommend`.

`build` reads Prometheus once and writes the store (only when the build succeeded without partial
data, so a failed build leaves the last profiles in place); `show` prints what the store holds;
`recommend` repeats the build forever, for running as its own single-replica Deployment.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from webhook.core.profile import NoRecommendation, Recommendation
from webhook.core.quantity import render_bytes, render_cpu
from webhook.profiles import checkpoint
from webhook.profiles.build import BuildResult, BuildSettings, build_profiles
from webhook.profiles.checkpoint import default_checkpoint_path
from webhook.profiles.prometheus import Prometheus, PrometheusError
from webhook.profiles.store import (
    FileStore,
    ProfileDocument,
    ProfileStore,
    StoreError,
    WorkloadEntry,
    encode_document,
)
from webhook.profiles.strategy import StrategySettings

__all__ = ["open_store", "register", "render_table"]

log = logging.getLogger("pod_tailor.profiles")


def _store_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("store")
    group.add_argument("--store", type=Path, help="profile store file (default: the shared default location)")
    group.add_argument(
        "--kubernetes", action="store_true", help="use ConfigMaps in --store-namespace instead of a file"
    )
    group.add_argument("--store-namespace", default="pod-tailor", help="namespace of the profile ConfigMaps")
    group.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, $KUBECONFIG, ~/.kube/config)")


def _build_options(parser: argparse.ArgumentParser) -> None:
    defaults, strategy = BuildSettings(), StrategySettings()
    parser.add_argument(
        "--prometheus", default=os.environ.get("POD_TAILOR_PROMETHEUS_URL"),
        help="Prometheus base URL, e.g. http://prometheus:9090 [env POD_TAILOR_PROMETHEUS_URL]",
    )
    parser.add_argument("--window", default=defaults.window, help=f"history to read [{defaults.window}]")
    parser.add_argument(
        "--namespace", action="append", default=[], help="only this namespace (repeatable; default: all)"
    )
    parser.add_argument("--step", default=defaults.step, help=f"usage resolution [{defaults.step}]")
    parser.add_argument(
        "--rate-window", default=defaults.rate_window,
        help=f"rate() window over the CPU counter, >= 2 scrape intervals [{defaults.rate_window}]",
    )
    parser.add_argument(
        "--percentile", type=float, default=strategy.cpu_percentile,
        help=f"CPU request percentile [{strategy.cpu_percentile:g}]",
    )
    parser.add_argument(
        "--memory-margin", type=float, default=strategy.memory_margin,
        help=f"memory request = peak x (1 + margin) [{strategy.memory_margin:g}]",
    )
    parser.add_argument(
        "--min-hours", type=float, default=strategy.min_hours,
        help=f"less history gives no recommendation [{strategy.min_hours:g}]",
    )
    parser.add_argument(
        "--min-samples", type=int, default=strategy.min_samples,
        help=f"fewer points give no recommendation [{strategy.min_samples}]",
    )
    parser.add_argument(
        "--startup-window", type=int, default=strategy.startup_window_seconds,
        help=f"seconds after a container start counted as start-up [{strategy.startup_window_seconds}]",
    )
    parser.add_argument(
        "--cpu-rate-metric",
        help="a recorded per-container CPU rate to read instead of rate() over the cadvisor counter, e.g. "
        "node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate (kube-prometheus)",
    )
    parser.add_argument(
        "--startup-lookback", default=defaults.startup_lookback,
        help=f"start-up CPU from container starts this recent [{defaults.startup_lookback}]",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per Prometheus query [120]")
    parser.add_argument(
        "--slices", type=int, default=0,
        help="start the big queries cut into this many time slices [0: as many as keep each under"
        " --samples-per-query, from the live series and the scrape interval]",
    )
    parser.add_argument(
        "--samples-per-query", type=int, default=defaults.samples_per_query,
        help=f"sample budget of one big query (Prometheus' --query.max-samples is 50 M by default)"
        f" [{defaults.samples_per_query}]",
    )
    parser.add_argument(
        "--allow-partial", action="store_true",
        help="write the store even when Prometheus reports partial data (warnings)",
    )
    parser.add_argument(
        "--checkpoint", type=Path,
        help="file keeping the answers of past days between builds, so that a build asks Prometheus only"
        " for what changed since [$POD_TAILOR_CHECKPOINT, else ~/.cache/pod-tailor/build-checkpoint.json]",
    )
    parser.add_argument(
        "--no-checkpoint", action="store_true", help="read the whole window from Prometheus every time"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def register(subparsers: Any) -> None:
    profiles = subparsers.add_parser(
        "profiles", help="build and inspect usage profiles from Prometheus history",
        description="Per-workload, per-container requests sized from what each workload really used.",
    )
    sub = profiles.add_subparsers(dest="profiles_command", required=True, metavar="ACTION")
    build = sub.add_parser("build", help="read Prometheus history and write the profile store")
    _build_options(build)
    build.add_argument(
        "--end", type=float, help="unix time the window ends at, for a build as of then (default: now)"
    )
    _store_options(build)
    build.set_defaults(func=_build_main)
    show = sub.add_parser("show", help="print the stored profiles")
    show.add_argument("selector", nargs="?", help="NAMESPACE, NAMESPACE/NAME or NAMESPACE/Kind/NAME")
    show.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    _store_options(show)
    show.set_defaults(func=_show_main)
    recommend = subparsers.add_parser(
        "recommend", help="rebuild the profile store periodically (run as one replica)",
        description="Runs `profiles build` every --interval; a failed build keeps the last profiles.",
    )
    _build_options(recommend)
    _store_options(recommend)
    recommend.add_argument("--interval", type=float, default=3600.0, help="seconds between builds [3600]")
    recommend.set_defaults(func=_recommend_main)


def open_store(
    *, path: Path | None = None, kubernetes: bool = False, namespace: str = "pod-tailor",
    kubeconfig: str | None = None,
) -> ProfileStore:
    """The file store (default location unless `path`), or the ConfigMap store in `namespace`."""
    if not kubernetes:
        return FileStore(path)
    from webhook.cluster.config import discover
    from webhook.profiles.kubestore import KubeStore

    found = discover(kubeconfig=kubeconfig)
    if found.config is None:
        raise StoreError(f"no Kubernetes API for the profile store: {found.reason}")
    return KubeStore(found.config.api_client, namespace=namespace)


def _store_from(args: argparse.Namespace) -> ProfileStore:
    return open_store(
        path=args.store,
        kubernetes=args.kubernetes,
        namespace=args.store_namespace,
        kubeconfig=args.kubeconfig,
    )


def _settings_from(args: argparse.Namespace) -> BuildSettings:
    strategy = StrategySettings(
        cpu_percentile=args.percentile,
        memory_margin=args.memory_margin,
        min_hours=args.min_hours,
        min_samples=args.min_samples,
        startup_window_seconds=args.startup_window,
    )
    return BuildSettings(
        window=args.window,
        step=args.step,
        rate_window=args.rate_window,
        namespaces=tuple(args.namespace),
        cpu_rate_metric=args.cpu_rate_metric or None,
        slices=max(0, args.slices),
        samples_per_query=args.samples_per_query,
        startup_lookback=args.startup_lookback,
        strategy=strategy,
    )


def _progress(quiet: bool) -> Callable[[str], None]:
    started = time.monotonic()

    def say(message: str) -> None:
        if not quiet:
            print(f"[{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    return say


def build_once(args: argparse.Namespace, store: ProfileStore) -> BuildResult:
    """One build into `store`; raises PrometheusError/StoreError and refuses partial data unless allowed."""
    if not args.prometheus:
        raise PrometheusError("no Prometheus URL: pass --prometheus URL or set POD_TAILOR_PROMETHEUS_URL")
    settings = _settings_from(args)
    prom = Prometheus(args.prometheus, timeout=args.timeout)
    where = None if args.no_checkpoint else (args.checkpoint or default_checkpoint_path())
    kept = checkpoint.load(where, key=settings.checkpoint_key(prom.url)) if where else None
    try:
        end = getattr(args, "end", None)  # only `profiles build` has --end; the recommender reads up to now
        result = build_profiles(prom, settings, end=end, progress=_progress(args.quiet), checkpoint=kept)
    finally:
        prom.close()
    if kept is not None and where is not None and not result.warnings:  # else unchanged: no rewrite
        try:
            checkpoint.save(kept, where)
        except OSError as exc:  # a cache: the next build is a full one, nothing is wrong
            print(f"warning: checkpoint {where} not written: {exc}", file=sys.stderr)
    for warning in dict.fromkeys(result.warnings):  # the same warning comes once per query
        times = result.warnings.count(warning)
        print(f"warning: Prometheus: {warning}" + (f" (x{times})" if times > 1 else ""), file=sys.stderr)
    if result.warnings and not args.allow_partial:
        raise PrometheusError(
            f"Prometheus reported partial data ({len(result.warnings)} warning(s)); the store was not "
            "changed (pass --allow-partial to write anyway)"
        )
    store.write(result.document, scope=settings.namespaces or None)
    return result


def _build_main(args: argparse.Namespace) -> int:
    try:
        store = _store_from(args)
        result = build_once(args, store)
    except (PrometheusError, StoreError, ValueError) as exc:
        print(f"pod-tailor profiles build: {exc}", file=sys.stderr)
        return 1
    counts = _counts(result.document)
    print(
        f"wrote {counts[0]} workloads ({counts[1]} containers with a recommendation, {counts[2]} without) "
        f"to {store.describe()} in {result.seconds:.1f}s using {result.queries} Prometheus queries"
    )
    return 0


def _counts(document: ProfileDocument) -> tuple[int, int, int]:
    profiles = [p for entry in document.workloads.values() for p in entry.containers.values()]
    recommended = sum(isinstance(p, Recommendation) for p in profiles)
    return len(document.workloads), recommended, len(profiles) - recommended


def _recommend_main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        store = _store_from(args)
    except StoreError as exc:
        print(f"pod-tailor recommend: {exc}", file=sys.stderr)
        return 1
    while True:
        try:
            result = build_once(args, store)
            counts = _counts(result.document)
            log.info("profiles built: %d workloads, %d recommendations, %d queries, %.1fs",
                     counts[0], counts[1], result.queries, result.seconds)
        except (PrometheusError, StoreError, ValueError) as exc:
            log.error("profile build failed, the store keeps the last profiles: %s", exc)
        time.sleep(args.interval)


def _select(document: ProfileDocument, selector: str | None) -> dict[Any, WorkloadEntry]:
    if not selector:
        return dict(document.workloads)
    parts = selector.split("/")
    out = {}
    for key, entry in document.workloads.items():
        if key.namespace != parts[0]:
            continue
        if len(parts) == 2 and key.name != parts[1]:
            continue
        if len(parts) >= 3 and (key.kind.lower() != parts[1].lower() or key.name != "/".join(parts[2:])):
            continue
        out[key] = entry
    return out


def _evidence(profile: Recommendation) -> str:
    ev = profile.evidence
    text = (
        f"p{ev.cpu_percentile:g} +{ev.memory_margin * 100:g}% over {ev.window}: {ev.hours:.0f}h, "
        f"{ev.samples} pts, confidence {ev.confidence:.2f}"
    )
    if ev.oom_kills:
        text += f", {ev.oom_kills} OOM kill(s)"
    if profile.startup_cpu is not None and profile.startup_cpu > profile.cpu:
        text += f", start-up peak {render_cpu(profile.startup_cpu)}"
        if profile.startup_seconds is not None:
            text += f" for {profile.startup_seconds:.0f}s"
    return text


def _current(entry: WorkloadEntry, container: str) -> str:
    now: dict[str, Decimal] = dict(entry.current.get(container, {}))
    if not now:
        return "-"
    cpu = render_cpu(now["cpu"]) if "cpu" in now else "-"
    memory = render_bytes(now["memory"]) if "memory" in now else "-"
    return f"{cpu}/{memory}"


def render_table(workloads: dict[Any, WorkloadEntry]) -> str:
    rows = [("WORKLOAD", "CONTAINER", "CPU", "MEMORY", "CURRENT", "EVIDENCE")]
    for key in sorted(workloads):
        entry = workloads[key]
        for name, profile in sorted(entry.containers.items()):
            if isinstance(profile, NoRecommendation):
                rows.append((str(key), name, "-", "-", _current(entry, name), f"none: {profile.reason}"))
            else:
                rows.append((
                    str(key), name, render_cpu(profile.cpu), render_bytes(profile.memory),
                    _current(entry, name), _evidence(profile),
                ))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True)) + "  " + row[5]
        for row in rows
    )


def _show_main(args: argparse.Namespace) -> int:
    try:
        document = _store_from(args).read()
    except StoreError as exc:
        print(f"pod-tailor profiles show: {exc}", file=sys.stderr)
        return 1
    selected = _select(document, args.selector)
    if args.output == "table":
        if not selected:
            where = f" matching {args.selector}" if args.selector else ""
            print(f"no profiles{where} (source: {document.source or 'empty store'})", file=sys.stderr)
            return 0 if not args.selector else 1
        age = time.time() - document.generated_at
        print(f"# {document.source}; built {age / 3600:.1f}h ago")
        print(render_table(selected))
        return 0
    subset = ProfileDocument(selected, document.generated_at, document.source, document.window)
    encoded = encode_document(subset)
    if args.output == "json":
        print(json.dumps(encoded, indent=2))
    else:
        print(yaml.safe_dump(encoded, sort_keys=False), end="")
    return 0
