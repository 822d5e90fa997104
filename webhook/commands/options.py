"""Options shared by the commands that read Prometheus or the profile store (profiles, recommend, report).

Each returns plain values; the commands turn them into the library's settings objects.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from webhook.config.policies import load_policy_text
from webhook.config.settings import PROMETHEUS_FIELDS, add_arguments, load_settings
from webhook.core.statistic import CpuStatistic
from webhook.profiles.build import BuildSettings
from webhook.profiles.checkpoint import default_checkpoint_path
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.runner import BuildRun, open_store
from webhook.profiles.store import ProfileStore
from webhook.profiles.strategy import AGGREGATES, StrategySettings

__all__ = [
    "add_build_options",
    "add_prometheus_options",
    "add_store_options",
    "build_run",
    "build_settings",
    "prometheus_connection",
    "store_from",
]


def add_store_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("store")
    group.add_argument(
        "--store", "--profiles-path", dest="store", type=Path,
        help="profile store file (default: the shared default location)",
    )
    group.add_argument(
        "--kubernetes", action="store_true", help="use ConfigMaps in --store-namespace instead of a file"
    )
    group.add_argument("--store-namespace", default="pod-tailor", help="namespace of the profile ConfigMaps")
    group.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, $KUBECONFIG, ~/.kube/config)")


def add_build_options(parser: argparse.ArgumentParser) -> None:
    defaults, strategy = BuildSettings(), StrategySettings()
    add_prometheus_options(parser)
    parser.add_argument("--window", default=defaults.window, help=f"history to read [{defaults.window}]")
    parser.add_argument(
        "--namespace", action="append", default=[], help="only this namespace (repeatable; default: all)"
    )
    parser.add_argument(
        "--step", default=defaults.step,
        help=f"usage resolution; raised to the data's own interval when coarser [{defaults.step}]",
    )
    parser.add_argument(
        "--rate-window", default=defaults.rate_window,
        help="rate() window over the CPU counter: auto (2 scrape intervals, the shortest valid) or a"
        f" duration, raised to 2 intervals when shorter [{defaults.rate_window}]",
    )
    parser.add_argument(
        "--percentile", type=float, default=strategy.cpu_percentile,
        help=f"CPU request percentile [{strategy.cpu_percentile:g}]",
    )
    parser.add_argument(
        "--aggregate", choices=AGGREGATES, default=strategy.cpu_aggregate,
        help="CPU percentile of every Pod's points together (pooled) or the largest Pod's own"
        f" (maxPerPod, as KRR) [{strategy.cpu_aggregate}]",
    )
    parser.add_argument(
        "--no-exact-cpu", dest="exact_cpu", action="store_false",
        help="rebuild the CPU percentile from each Pod's quantiles instead of counting it exactly"
        " (cheaper; a few percent off when Pods differ)",
    )
    parser.add_argument(
        "--statistics-from", metavar="POLICY_FILE", type=Path,
        help="also count the CPU statistics this policy file's policies name (profiles.cpu), for"
        " the webhook to size their workloads with",
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
    parser.add_argument(
        "--slices", type=int, default=0,
        help="cut the big passes into this many time slices [0: as many as keep a slice under"
        " --samples-per-query, from the live series and the scrape interval]",
    )
    parser.add_argument(
        "--samples-per-query", type=int, default=defaults.samples_per_query,
        help=f"samples of one time slice of a big pass, all shards together [{defaults.samples_per_query}]",
    )
    parser.add_argument(
        "--prometheus-max-samples", type=int, default=defaults.max_samples,
        help="samples one query may touch: each slice is split by namespace, container and Pod-name"
        " classes to stay under it (Prometheus refuses 50 M by default, managed services less)"
        f" [{defaults.max_samples}]",
    )
    parser.add_argument(
        "--prometheus-concurrency", type=int, default=defaults.concurrency,
        help=f"queries in flight at once: what a build costs Prometheus at a time [{defaults.concurrency}]",
    )
    parser.add_argument(
        "--allow-partial", action="store_true",
        help="write the store even when Prometheus reports partial data (warnings)",
    )
    parser.add_argument(
        "--max-shrink", type=float, default=0.2,
        help="a build that would lose more than this share of the store's recommendations keeps the "
        "previous ones for the containers it lost [0.2]",
    )
    parser.add_argument(
        "--allow-shrink", action="store_true",
        help="write what the build found even when it loses more than --max-shrink of the recommendations",
    )
    parser.add_argument(
        "--checkpoint", type=Path,
        help="file keeping the answers of past days between builds, so that a build asks Prometheus only"
        " for what changed since [$POD_TAILOR_CHECKPOINT, else ~/.cache/pod-tailor/build-checkpoint.json]",
    )
    parser.add_argument(
        "--no-checkpoint", action="store_true", help="read the whole window from Prometheus every time"
    )
    parser.add_argument(
        "--summary-days", type=int, default=defaults.summary_days,
        help=f"days of hourly usage kept as each container's drawable summary (four queries a day; 0: none)"
        f" [{defaults.summary_days}]",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def add_prometheus_options(parser: argparse.ArgumentParser) -> None:
    """The connection options (docs/prometheus-connection.md), the same fields `serve` takes.

    `--prometheus` and `--timeout` are the older spellings of `--prometheus-url` and `--prometheus-timeout`.
    """
    group = parser.add_argument_group(
        "Prometheus connection", "each also from its POD_TAILOR_* variable; the password only from one"
    )
    add_arguments(group, only=PROMETHEUS_FIELDS,
                  aliases={"prometheus_url": ["--prometheus"], "prometheus_timeout": ["--timeout"]})


def prometheus_connection(args: argparse.Namespace) -> PrometheusConnection | None:
    """The connection from the options, then the `POD_TAILOR_PROMETHEUS_*` variables; raises SettingsError."""
    return load_settings(args, only=PROMETHEUS_FIELDS).prometheus()


def store_from(args: argparse.Namespace) -> ProfileStore:
    return open_store(
        path=args.store,
        kubernetes=args.kubernetes,
        namespace=args.store_namespace,
        kubeconfig=args.kubeconfig,
    )


def build_settings(args: argparse.Namespace) -> BuildSettings:
    strategy = StrategySettings(
        cpu_percentile=args.percentile,
        cpu_aggregate=args.aggregate,
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
        max_samples=max(1, args.prometheus_max_samples),
        concurrency=max(1, args.prometheus_concurrency),
        startup_lookback=args.startup_lookback,
        summary_days=max(0, args.summary_days),
        strategy=strategy,
        statistics=_policy_statistics(args.statistics_from),
        exact_cpu=args.exact_cpu,
    )


def _policy_statistics(path: Path | None) -> tuple[CpuStatistic, ...]:
    """Every CPU statistic the policies of `path` name (none without a file)."""
    if path is None:
        return ()
    policies = load_policy_text(path.read_text(encoding="utf-8"))
    return tuple(sorted({s for policy in policies.policies.values() for s in policy.usage.statistics()}))


def build_run(args: argparse.Namespace) -> BuildRun:
    return BuildRun(
        connection=prometheus_connection(args),
        checkpoint_path=None if args.no_checkpoint else (args.checkpoint or default_checkpoint_path()),
        end=getattr(args, "end", None),  # only `profiles build` has --end; the recommender reads up to now
        allow_partial=args.allow_partial,
        allow_shrink=args.allow_shrink,
        max_shrink=args.max_shrink,
    )
