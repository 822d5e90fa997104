"""The sets of options several verbs take (names of `webhook.config.catalog`), and what the verbs make
of them: the profile store, the Prometheus connection, a build's settings, a cluster to read.

Each helper checks what it can without contacting anything and raises the error `pod-tailor` says in
one line: `InputError` (exit 2) for what a person gave, `UnreachableError` (exit 3) for what is not there.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from webhook.commands.failures import InputError, UnreachableError
from webhook.config.policies import load_policy_text
from webhook.config.settings import PROMETHEUS_FIELDS, load_settings
from webhook.core.policy.reader import PolicyError
from webhook.core.policy.statistic import CpuStatistic
from webhook.offline.inputs import manifest_paths
from webhook.profiles.build import BuildSettings
from webhook.profiles.checkpoint import default_checkpoint_path
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.runner import BuildRun, open_store
from webhook.profiles.store import PROFILES_VARIABLE, ProfileStore, StoreError, default_store_path
from webhook.profiles.strategy import StrategySettings

__all__ = [
    "BUILD",
    "DAEMON",
    "POLICY",
    "PROMETHEUS",
    "SCOPE",
    "STORE",
    "build_run",
    "build_settings",
    "cluster_found",
    "manifests_given",
    "prometheus_connection",
    "store_from",
    "stored_profiles",
]

STORE = ("profiles_path", "profiles_store", "kubeconfig", "pod_tailor_namespace")
POLICY = ("policy_file", "policy_configmap")
PROMETHEUS = PROMETHEUS_FIELDS
# What a profile build reads and how (`profiles build`, `recommend`, `report --prometheus-url`).
BUILD = (
    "namespaces", "window", "step", "rate_window", "percentile", "aggregate", "exact_cpu", "statistics_from",
    "memory_margin", "min_hours", "min_samples", "startup_window", "cpu_rate_metric", "startup_lookback",
    "slices", "samples_per_query", "prometheus_max_samples", "prometheus_concurrency", "allow_partial",
    "max_shrink", "allow_shrink", "checkpoint", "no_checkpoint", "summary_days", "quiet",
)
# What the verbs that read a cluster's workloads take as their scope (`report`, `dashboard`).
SCOPE = ("filename", "recursive", "namespaces", "all_namespaces")
# What every long-running verb beside `serve` takes: metrics, logs, leader election.
DAEMON = ("metrics_port", "metrics_host", "log_level", "leader_elect", "lease_name", "lease_namespace")


def manifests_given(paths: list[str], *, recursive: bool) -> None:
    """Each file or directory named with -f exists and holds something to read: an error now, not a line
    among the results (or an empty report). A directory whose manifests all sit in its subdirectories
    says so and asks for -R."""
    for path in paths:
        if path == "-":
            continue
        if not Path(path).exists():
            raise InputError(f"-f {path}: no such file or directory")
        if Path(path).is_dir() and not manifest_paths(path, recursive=recursive):
            below = len(manifest_paths(path, recursive=True))
            hint = f"; its subdirectories hold {below}: add -R to read them" if below else ""
            raise InputError(f"-f {path}: no .yaml, .yml or .json file in it, so no file was read{hint}")


def cluster_found(args: argparse.Namespace, *, why: str) -> None:
    """The cluster's configuration is there (the kubeconfig read, nothing asked of the API server):
    a kubeconfig named with --kubeconfig that cannot be used is bad input, none at all UnreachableError."""
    from webhook.cluster.config import discover  # the Kubernetes client: only for the verbs that use it

    found = discover(kubeconfig=args.kubeconfig)
    if found.config is not None:
        return
    if args.kubeconfig and not Path(args.kubeconfig).expanduser().is_file():
        raise InputError(f"--kubeconfig {args.kubeconfig}: no such file")
    if args.kubeconfig:
        raise InputError(f"--kubeconfig {args.kubeconfig}: {found.reason.partition(' unusable: ')[2]}")
    raise UnreachableError(f"no cluster to read ({found.reason}): {why}")


def store_from(args: argparse.Namespace) -> ProfileStore:
    """The profile store the options name; the ConfigMap store needs a cluster (`cluster_found`)."""
    path = Path(args.profiles_path).expanduser() if args.profiles_path else None
    if getattr(args, "profiles_store", "file") == "file":  # `preview` reads a file alone
        return open_store(path=path)
    cluster_found(args, why="--profiles-store kubernetes reads the ConfigMaps of --pod-tailor-namespace")
    try:
        return open_store(path=path, kubernetes=True, namespace=args.pod_tailor_namespace,
                          kubeconfig=args.kubeconfig)  # fmt: skip
    except StoreError as exc:
        raise UnreachableError(str(exc)) from None


def stored_profiles(args: argparse.Namespace) -> tuple[ProfileStore, str | None]:
    """The store to read and a warning: a file named by --profiles-path must exist (InputError), while
    a default store not built yet ($POD_TAILOR_PROFILES, else the XDG location) is a warning."""
    store = store_from(args)
    if getattr(args, "profiles_store", "file") == "kubernetes":
        return store, None
    from_variable = "profiles_path" in args.variables
    path = Path(args.profiles_path).expanduser() if args.profiles_path else default_store_path()
    if path.exists():
        return store, None
    if args.profiles_path is not None and not from_variable:
        raise InputError(
            f"--profiles-path {path}: no such file: build it with `pod-tailor profiles build`, or leave the "
            "option out"
        )
    where = f"{PROFILES_VARIABLE}={path}" if from_variable else str(path)
    return store, (
        f"no profile store at {where} yet (`pod-tailor profiles build` writes it): every value from the "
        "policy"
    )


def prometheus_connection(args: argparse.Namespace) -> PrometheusConnection | None:
    """The connection from the options and variables (already resolved); raises SettingsError."""
    return load_settings({name: getattr(args, name) for name in PROMETHEUS_FIELDS}, env={},
                         only=PROMETHEUS_FIELDS).prometheus()  # fmt: skip


def _required_connection(args: argparse.Namespace) -> PrometheusConnection:
    """A build reads Prometheus: without its URL, nothing can be built (InputError at start)."""
    connection = prometheus_connection(args)
    if connection is None:
        raise InputError("no Prometheus URL: pass --prometheus-url URL or set POD_TAILOR_PROMETHEUS_URL")
    return connection


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
            namespaces=tuple(args.namespaces),
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
    except (ValueError, PolicyError) as exc:
        raise InputError(str(exc)) from None


def _policy_statistics(path: str | None) -> tuple[CpuStatistic, ...]:
    """Every CPU statistic the policies of `path` name (none without a file)."""
    if path is None:
        return ()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--statistics-from {path}: {exc.strerror}") from None
    policies = load_policy_text(text, origin=path)
    return tuple(sorted({s for policy in policies.policies.values() for s in policy.usage.statistics()}))


def build_run(args: argparse.Namespace) -> BuildRun:
    """How a build runs; it needs Prometheus' URL (InputError without one)."""
    given = Path(args.checkpoint) if args.checkpoint else None
    checkpoint = given or default_checkpoint_path(namespaces=args.namespaces)
    return BuildRun(
        connection=_required_connection(args),
        checkpoint_path=None if args.no_checkpoint else checkpoint,
        end=getattr(args, "end", None),  # only `profiles build` has --end; the recommender reads up to now
        allow_partial=args.allow_partial,
        allow_shrink=args.allow_shrink,
        max_shrink=args.max_shrink,
    )
