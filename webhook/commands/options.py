"""Options shared by the commands that read Prometheus or the profile store (profiles, recommend, report).

Each returns plain values; the commands turn them into the library's settings objects.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from webhook.commands.failures import InputError
from webhook.commands.parser import group, old_name, typed
from webhook.config import values
from webhook.config.policies import load_policy_text
from webhook.config.settings import PROMETHEUS_FIELDS, add_arguments, load_settings
from webhook.core.policy import PolicyError
from webhook.core.statistic import CpuStatistic
from webhook.profiles.build import BuildSettings
from webhook.profiles.checkpoint import default_checkpoint_path
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.runner import BuildRun, open_store
from webhook.profiles.store import PROFILES_VARIABLE, ProfileStore, default_store_path
from webhook.profiles.strategy import AGGREGATES, StrategySettings

__all__ = [
    "add_build_options",
    "add_cluster_options",
    "add_policy_options",
    "add_prometheus_options",
    "add_scope_options",
    "add_store_options",
    "build_run",
    "build_settings",
    "manifests_given",
    "prometheus_connection",
    "store_from",
    "stored_profiles",
]


def add_store_options(parser: argparse.ArgumentParser, *, kubernetes: bool = True) -> None:
    """Where the profile store is: one set of names in every command (`serve` has the same settings);
    without `kubernetes`, the file alone (`preview`)."""
    store = group(parser, "profile store")
    store.add_argument(
        "--profiles-path", type=Path, metavar="FILE",
        help="profile store file [$POD_TAILOR_PROFILES, else $XDG_DATA_HOME/pod-tailor/profiles.json]",
    )
    old_name(store, "--store", new="--profiles-path", dest="profiles_path", type=Path)
    if not kubernetes:
        return
    store.add_argument(
        "--profiles-store", choices=("file", "kubernetes"), default="file",
        help="file (--profiles-path) or kubernetes (ConfigMaps in --pod-tailor-namespace) [file]",
    )
    old_name(
        store, "--kubernetes", new="--profiles-store kubernetes", dest="profiles_store", const="kubernetes"
    )
    add_cluster_options(parser, own_namespace=True)


def add_scope_options(
    parser: argparse.ArgumentParser, *, manifests: str, long_namespace: bool = False
) -> None:
    """What to read: manifests (-f, as `manifests` says), or the cluster's namespaces (-n, -A); `report`
    spells -n long as its build option --namespace, which means the same."""
    given = group(parser, "input")
    add_manifest_files(given, manifests=manifests, required=False)
    given.add_argument(
        "-n", *(["--namespace"] if long_namespace else []), dest="namespace", action="append", default=[],
        help="only this namespace (repeatable) [the opted-in namespaces]",
    )
    given.add_argument(
        "-A", "--all-namespaces", action="store_true",
        help="every namespace, as if each were labelled pod-tailor.io/mode=enforce",
    )


def add_manifest_files(
    given: argparse._ArgumentGroup, *, manifests: str, required: bool = True
) -> None:
    """-f (repeatable; `manifests` says what it takes) and -R, read as kubectl reads them
    (`webhook.offline.inputs`)."""
    if required:
        given.add_argument("-f", "--filename", action="append", required=True, help=manifests)
    else:
        given.add_argument("-f", "--filename", action="append", default=[], help=manifests)
    given.add_argument(
        "-R", "--recursive", action="store_true", help="-f DIR reads its subdirectories too, as kubectl -R"
    )


def manifests_given(paths: list[str]) -> None:
    """A file or directory named with -f must exist: an error now, not a line among the results."""
    for path in paths:
        if path != "-" and not Path(path).exists():
            raise InputError(f"-f {path}: no such file or directory")


def add_policy_options(parser: argparse.ArgumentParser) -> None:
    policy = group(parser, "policy")
    policy.add_argument(
        "--policy-file", type=Path,
        help="policy YAML [default: the cluster's policy ConfigMap, else the bundled policy]",
    )
    policy.add_argument(
        "--policy-configmap", default="pod-tailor-policy",
        help="the policy ConfigMap in --pod-tailor-namespace [pod-tailor-policy]",
    )


def add_cluster_options(parser: argparse.ArgumentParser, *, own_namespace: bool = False) -> None:
    """--kubeconfig, and with `own_namespace` the namespace pod-tailor runs in (its ConfigMaps)."""
    cluster = group(parser, "cluster")
    cluster.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, $KUBECONFIG, ~/.kube/config)")
    if own_namespace:
        cluster.add_argument(
            "--pod-tailor-namespace", default="pod-tailor", metavar="NAMESPACE",
            help="pod-tailor's own namespace: the profile and policy ConfigMaps [pod-tailor]",
        )
        old_name(cluster, "--store-namespace", new="--pod-tailor-namespace", dest="pod_tailor_namespace")


def add_build_options(parser: argparse.ArgumentParser) -> None:
    defaults, strategy = BuildSettings(), StrategySettings()
    add_prometheus_options(parser)
    build = group(parser, "profile build")
    duration, count = typed(values.duration), typed(values.count)
    build.add_argument(
        "--window", type=duration, default=defaults.window, help=f"history to read [{defaults.window}]"
    )
    build.add_argument(
        "--namespace", action="append", default=[], help="only this namespace (repeatable; default: all)"
    )
    build.add_argument(
        "--step", type=typed(_auto_or_duration), default=defaults.step,
        help="usage resolution: auto (the rate window less one scrape interval, at least 1m: each sample"
        " interval counted once) or a"
        f" duration, raised to the data's own interval when coarser [{defaults.step}]",
    )
    build.add_argument(
        "--rate-window", type=typed(_auto_or_duration), default=defaults.rate_window,
        help="rate() window over the CPU counter: auto (2 scrape intervals, the shortest valid) or a"
        f" duration, raised to 2 intervals when shorter [{defaults.rate_window}]",
    )
    build.add_argument(
        "--percentile", type=typed(values.number_between(0, 100, low_open=True)),
        default=strategy.cpu_percentile,
        help=f"CPU request percentile [{strategy.cpu_percentile:g}]",
    )
    build.add_argument(
        "--aggregate", choices=AGGREGATES, default=strategy.cpu_aggregate,
        help="CPU percentile of every Pod's points together (pooled) or the largest Pod's own"
        f" (maxPerPod, as KRR) [{strategy.cpu_aggregate}]",
    )
    build.add_argument(
        "--no-exact-cpu", dest="exact_cpu", action="store_false",
        help="rebuild the CPU percentile from each Pod's quantiles instead of counting it exactly"
        " (cheaper; a few percent off when Pods differ)",
    )
    build.add_argument(
        "--statistics-from", metavar="POLICY_FILE", type=Path,
        help="also count the CPU statistics this policy file's policies name (profiles.cpu), for"
        " the webhook to size their workloads with",
    )
    build.add_argument(
        "--memory-margin", type=typed(values.number_between(0, 10)), default=strategy.memory_margin,
        help=f"memory request = peak x (1 + margin) [{strategy.memory_margin:g}]",
    )
    build.add_argument(
        "--min-hours", type=typed(values.at_least(0)), default=strategy.min_hours,
        help=f"less history gives no recommendation [{strategy.min_hours:g}]",
    )
    build.add_argument(
        "--min-samples", type=typed(values.positive_count), default=strategy.min_samples,
        help=f"fewer points give no recommendation [{strategy.min_samples}]",
    )
    build.add_argument(
        "--startup-window", type=count, default=strategy.startup_window_seconds,
        help="seconds after a container start counted as start-up (CPU rates whose rate window reaches"
        f" into them are read; the phase never lasts longer) [{strategy.startup_window_seconds}]",
    )
    build.add_argument(
        "--cpu-rate-metric",
        help="a recorded per-container CPU rate to read instead of rate() over the cadvisor counter, e.g. "
        "node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate (kube-prometheus)",
    )
    build.add_argument(
        "--startup-lookback", type=duration, default=defaults.startup_lookback,
        help=f"start-up CPU from container starts this recent [{defaults.startup_lookback}]",
    )
    build.add_argument(
        "--slices", type=count, default=0,
        help="cut the big passes into this many time slices [0: as many as keep a slice under"
        " --samples-per-query, from the live series and the scrape interval]",
    )
    build.add_argument(
        "--samples-per-query", type=typed(values.positive_count), default=defaults.samples_per_query,
        help=f"samples of one time slice of a big pass, all shards together [{defaults.samples_per_query}]",
    )
    build.add_argument(
        "--prometheus-max-samples", type=typed(values.positive_count), default=defaults.max_samples,
        help="samples one query may touch: each slice is split by namespace, container and Pod-name"
        " classes to stay under it (Prometheus refuses 50 M by default, managed services less)"
        f" [{defaults.max_samples}]",
    )
    build.add_argument(
        "--prometheus-concurrency", type=typed(values.positive_count), default=defaults.concurrency,
        help=f"queries in flight at once: what a build costs Prometheus at a time [{defaults.concurrency}]",
    )
    build.add_argument(
        "--allow-partial", action="store_true",
        help="write the store even when Prometheus reports partial data (warnings)",
    )
    build.add_argument(
        "--max-shrink", type=typed(values.number_between(0, 1)), default=0.2,
        help="a build that would lose more than this share of the store's recommendations keeps the "
        "previous ones for the containers it lost [0.2]",
    )
    build.add_argument(
        "--allow-shrink", action="store_true",
        help="write what the build found even when it loses more than --max-shrink of the recommendations",
    )
    build.add_argument(
        "--checkpoint", type=Path,
        help="file keeping the answers of past days between builds, so that a build asks Prometheus only"
        " for what changed since [$POD_TAILOR_CHECKPOINT, else $XDG_CACHE_HOME/pod-tailor/"
        "build-checkpoint.json; with --namespace, one file per set of namespaces]",
    )
    build.add_argument(
        "--no-checkpoint", action="store_true", help="read the whole window from Prometheus every time"
    )
    build.add_argument(
        "--summary-days", type=count, default=defaults.summary_days,
        help="days of hourly usage kept as each container's drawable summary (one to four queries a day;"
        f" 0: none) [{defaults.summary_days}]",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def add_prometheus_options(parser: argparse.ArgumentParser) -> None:
    """The connection options (docs/prometheus-connection.md), the same fields `serve` takes.

    `--prometheus` and `--timeout` are the old names of `--prometheus-url` and `--prometheus-timeout`.
    """
    connection = group(
        parser, "Prometheus connection",
        "each also from its POD_TAILOR_* variable; the password only from one",
    )
    add_arguments(connection, only=PROMETHEUS_FIELDS,
                  old_names={"prometheus_url": "--prometheus", "prometheus_timeout": "--timeout"})


def prometheus_connection(args: argparse.Namespace) -> PrometheusConnection | None:
    """The connection from the options, then the `POD_TAILOR_PROMETHEUS_*` variables; raises SettingsError."""
    return load_settings(args, only=PROMETHEUS_FIELDS).prometheus()


def store_from(args: argparse.Namespace) -> ProfileStore:
    if getattr(args, "profiles_store", "file") == "file":
        return open_store(path=args.profiles_path)
    return open_store(
        path=args.profiles_path, kubernetes=True, namespace=args.pod_tailor_namespace,
        kubeconfig=args.kubeconfig,
    )


def stored_profiles(args: argparse.Namespace) -> tuple[ProfileStore, str | None]:
    """The store to read and a warning: a file named by --profiles-path must exist (InputError), while
    a default store not built yet ($POD_TAILOR_PROFILES, else the XDG location) is a warning."""
    store = store_from(args)
    if getattr(args, "profiles_store", "file") == "kubernetes":
        return store, None
    path = default_store_path() if args.profiles_path is None else args.profiles_path
    if path.exists():
        return store, None
    if args.profiles_path is not None:
        raise InputError(
            f"--profiles-path {path}: no such file: build it with `pod-tailor profiles build`, or leave the "
            "option out"
        )
    where = f"{PROFILES_VARIABLE}={path}" if os.environ.get(PROFILES_VARIABLE) else str(path)
    return store, (
        f"no profile store at {where} yet (`pod-tailor profiles build` writes it): every value from the "
        "policy"
    )


def build_settings(args: argparse.Namespace) -> BuildSettings:
    """The build's settings; what the options cannot say alone (a step longer than the window) is an
    InputError."""
    try:
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
            slices=args.slices,
            samples_per_query=args.samples_per_query,
            max_samples=args.prometheus_max_samples,
            concurrency=args.prometheus_concurrency,
            startup_lookback=args.startup_lookback,
            summary_days=args.summary_days,
            strategy=strategy,
            statistics=_policy_statistics(args.statistics_from),
            exact_cpu=args.exact_cpu,
        )
    except (ValueError, PolicyError, OSError) as exc:
        raise InputError(str(exc)) from None


def _auto_or_duration(text: str) -> str:
    """`auto` or a duration."""
    return "auto" if text.strip() == "auto" else values.duration(text)


def _policy_statistics(path: Path | None) -> tuple[CpuStatistic, ...]:
    """Every CPU statistic the policies of `path` name (none without a file)."""
    if path is None:
        return ()
    policies = load_policy_text(path.read_text(encoding="utf-8"))
    return tuple(sorted({s for policy in policies.policies.values() for s in policy.usage.statistics()}))


def build_run(args: argparse.Namespace) -> BuildRun:
    return BuildRun(
        connection=prometheus_connection(args),
        checkpoint_path=None if args.no_checkpoint else (
            args.checkpoint or default_checkpoint_path(namespaces=args.namespace)
        ),
        end=getattr(args, "end", None),  # only `profiles build` has --end; the recommender reads up to now
        allow_partial=args.allow_partial,
        allow_shrink=args.allow_shrink,
        max_shrink=args.max_shrink,
    )
