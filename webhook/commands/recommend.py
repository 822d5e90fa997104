"""`pod-tailor recommend`: rebuild the profile store every --interval, as its own Deployment.

With `--leader-elect` several replicas run and the one holding the Lease builds (see
`webhook.controllers.recommender`). A failed build is logged, the store keeps the last profiles, and
the build is tried again after --retry.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from webhook.commands.failures import quiet_http_clients
from webhook.commands.options import (
    add_build_options,
    add_store_options,
    build_run,
    build_settings,
    store_from,
)
from webhook.commands.parser import group, typed
from webhook.commands.profiles import progress_printer
from webhook.config import values
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
        description="Runs `profiles build` every --interval; a failed build keeps the last profiles.",
    )
    add_build_options(recommend)
    add_store_options(recommend)
    loop = group(recommend, "profile build")
    loop.add_argument(
        "--interval", type=typed(values.seconds), default=3600.0, help="seconds between builds [3600]"
    )
    loop.add_argument(
        "--retry", type=typed(values.seconds), default=300.0,
        help="seconds before a failed build is tried again [300]",
    )
    loop.add_argument(
        "--max-builds", type=typed(values.count), default=0, help="stop after this many builds [0: never]"
    )
    served = group(recommend, "server")
    served.add_argument(
        "--metrics-port", type=typed(values.port_or_off), default=0,
        help="serve /metrics over HTTP on this port [0: not at all]",
    )
    served.add_argument("--metrics-host", default="0.0.0.0", help="address for --metrics-port [0.0.0.0]")
    election = group(recommend, "leader election", "several replicas, one builds")
    election.add_argument(
        "--leader-elect", action=argparse.BooleanOptionalAction, default=False,
        help="build only while holding a coordination.k8s.io Lease [off]",
    )
    election.add_argument("--lease-name", default="pod-tailor-recommender", help="[pod-tailor-recommender]")
    election.add_argument("--lease-namespace", help="[the --pod-tailor-namespace]")
    recommend.set_defaults(func=_main, configure=_configure)


def _configure(args: argparse.Namespace) -> tuple[BuildRun, BuildSettings]:
    """The connection and the build's settings: wrong ones stop here, not every hour (and
    --check-config stops here)."""
    return build_run(args), build_settings(args)


def _elector(args: argparse.Namespace, metrics: BuildMetrics, leading: threading.Event) -> LeaderElector:
    from webhook.cluster.config import discover
    from webhook.controllers.leader import LeaderElector, LeaseConfig, followers, identity

    found = discover(kubeconfig=args.kubeconfig)
    if found.config is None:
        raise StoreError(f"--leader-elect needs the Kubernetes API: {found.reason}")
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


def _main(args: argparse.Namespace) -> int:
    from webhook.controllers.recommender import BuildLoop, LeaderOnlyStore
    from webhook.profiles.buildmetrics import BuildMetrics

    run, settings = _configure(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    quiet_http_clients()
    metrics = BuildMetrics(interval=args.interval)
    leading, stop = threading.Event(), threading.Event()
    try:
        store = store_from(args)
        elector = _elector(args, metrics, leading) if args.leader_elect else None
    except StoreError as exc:
        print(f"pod-tailor recommend: {exc}", file=sys.stderr)
        return 1
    if elector is None:
        metrics.leader.set(1)
        leading.set()
    else:
        elector.start()
    if threading.current_thread() is threading.main_thread():  # SIGTERM: finish, give the Lease up
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = metrics.serve(args.metrics_port, args.metrics_host)[0] if args.metrics_port else None
    guarded = LeaderOnlyStore(store, leading)

    def build() -> Any:
        return build_once(run, settings, guarded, progress=progress_printer(args.quiet))

    def succeeded(result: Any) -> None:
        metrics.succeeded(result)
        found = counts(result.document)
        log.info("profiles built: %d workloads, %d recommendations, %d queries, %.1fs",
                 found.workloads, found.recommended, result.queries, result.seconds)

    def failed(seconds: float, exc: Exception) -> None:
        metrics.failed(seconds)
        log.error("profile build failed, the store keeps the last profiles: %s", exc)

    loop = BuildLoop(
        build, interval=args.interval, leading=leading, stop=stop, last_built=_last_built(store),
        on_success=succeeded, on_failure=failed, failures=(PrometheusError, StoreError, ValueError),
        retry=args.retry, max_builds=args.max_builds,
    )
    try:
        return loop.run()
    except KeyboardInterrupt:
        return 130
    finally:
        stop.set()
        if elector is not None:
            elector.stop()  # gives the Lease up: another replica builds at once
        if server is not None:
            server.shutdown()
            server.server_close()
