"""`pod-tailor recommend`: rebuild the profile store every --interval, as its own Deployment.

With `--leader-elect` several replicas run and the one holding the Lease builds (see
`webhook.controllers.recommender`). A failed build is logged, the store keeps the last profiles, and
the build is tried again after --retry.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from webhook.commands.failures import FINDINGS, UNREACHABLE
from webhook.commands.logs import json_logs
from webhook.commands.options import (
    BUILD,
    DAEMON,
    PROMETHEUS,
    STORE,
    build_run,
    build_settings,
    cluster_found,
    store_from,
)
from webhook.commands.parser import exits, take
from webhook.commands.profiles import failed as exit_of
from webhook.profiles.build import BuildSettings
from webhook.profiles.prometheus import PrometheusError
from webhook.profiles.runner import BuildRun, build_once, counts
from webhook.profiles.store import ProfileStore, StoreError

if TYPE_CHECKING:  # imported where used: the Kubernetes client and prometheus_client, 0.4 s of a start
    from webhook.controllers.leader import LeaderElector
    from webhook.profiles.buildmetrics import BuildMetrics

__all__ = ["register"]

log = logging.getLogger("pod_tailor.profiles")


def register(subparsers: Any) -> None:
    recommend = subparsers.add_parser(
        "recommend", help="rebuild the profile store periodically (one replica builds at a time)",
        description="Runs `profiles build` every --interval; a failed build keeps the last profiles. Logs "
        "are JSON lines on stderr.",
    )
    take(recommend, *PROMETHEUS, *BUILD, *STORE, "interval", "retry", "max_builds", *DAEMON,
         defaults={"lease_name": "pod-tailor-recommender"})
    exits(recommend, {
        FINDINGS: "with --max-builds: the last build failed (the store keeps the last profiles)",
        UNREACHABLE: "the cluster (--leader-elect, --profiles-store kubernetes) could not be reached; with "
        "--max-builds: the last build could not reach Prometheus",
    })  # fmt: skip
    recommend.set_defaults(func=_main, configure=_configure)


class _Configured(NamedTuple):
    run: BuildRun
    settings: BuildSettings
    store: ProfileStore


def _configure(args: argparse.Namespace) -> _Configured:
    """The connection, the build's settings and the store: wrong ones stop here, not every hour."""
    settings = build_settings(args)
    run, store = build_run(args), store_from(args)
    if args.leader_elect:
        cluster_found(args, why="--leader-elect holds a Lease in the cluster")
    return _Configured(run, settings, store)


def _elector(args: argparse.Namespace, metrics: BuildMetrics, leading: threading.Event) -> LeaderElector:
    from webhook.cluster.config import discover
    from webhook.controllers.leader import LeaderElector, LeaseConfig, followers, identity

    found = discover(kubeconfig=args.kubeconfig)
    assert found.config is not None  # `_configure` checked
    config = LeaseConfig(args.lease_namespace or args.pod_tailor_namespace, args.lease_name, identity())
    started, stopped = followers(leading, metrics.leader)
    return LeaderElector(found.config.api_client, config, on_started=started, on_stopped=stopped)


def _last_built(store: ProfileStore) -> Callable[[], float]:
    """When the store was built, read again only when its fingerprint changes (a large store takes
    seconds to read)."""
    seen: list[tuple[object, float]] = []

    def read() -> float:
        mark = store.fingerprint()
        if not seen or seen[0][0] != mark:
            seen[:] = [(mark, store.read().generated_at)]
        return seen[0][1]

    return read


def _main(args: argparse.Namespace, configured: _Configured) -> int:
    from webhook.controllers.recommender import BuildLoop, LeaderOnlyStore
    from webhook.profiles.buildmetrics import BuildMetrics

    run, settings, store = configured
    json_logs(args.log_level)
    metrics = BuildMetrics(interval=args.interval)
    leading, stop = threading.Event(), threading.Event()
    elector = _elector(args, metrics, leading) if args.leader_elect else None
    if elector is None:
        metrics.leader.set(1)
        leading.set()
    else:
        elector.start()
    if threading.current_thread() is threading.main_thread():  # SIGTERM: finish, give the Lease up
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = metrics.serve(args.metrics_port, args.metrics_host)[0] if args.metrics_port else None
    guarded = LeaderOnlyStore(store, leading)
    last = [0]  # the exit code of the last build

    def build() -> Any:
        return build_once(run, settings, guarded, progress=(lambda _: None) if args.quiet else log.info)

    def succeeded(result: Any) -> None:
        metrics.succeeded(result)
        found = counts(result.document)
        log.info("profiles built: %d workloads, %d recommendations, %d queries, %.1fs",
                 found.workloads, found.recommended, result.queries, result.seconds)
        last[0] = 0

    def failed(seconds: float, exc: Exception) -> None:
        metrics.failed(seconds)
        log.error("profile build failed, the store keeps the last profiles: %s", exc)
        last[0] = exit_of(exc)

    loop = BuildLoop(
        build, interval=args.interval, leading=leading, stop=stop, last_built=_last_built(store),
        on_success=succeeded, on_failure=failed, failures=(PrometheusError, StoreError, ValueError),
        retry=args.retry, max_builds=args.max_builds,
    )
    try:
        loop.run()
        return last[0] if args.max_builds else 0
    except KeyboardInterrupt:
        return 130
    finally:
        stop.set()
        if elector is not None:
            elector.stop()  # gives the Lease up: another replica builds at once
        if server is not None:
            server.shutdown()
            server.server_close()
