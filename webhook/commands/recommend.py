"""`pod-tailor recommend`: rebuild the profile store every --interval, for running as its own Deployment.

A failed build is logged and the store keeps the last profiles.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Any

from webhook.commands.options import (
    add_build_options,
    add_store_options,
    build_run,
    build_settings,
    store_from,
)
from webhook.commands.profiles import progress_printer
from webhook.profiles.build import BuildSettings
from webhook.profiles.buildmetrics import BuildMetrics
from webhook.profiles.prometheus import PrometheusError
from webhook.profiles.runner import BuildRun, build_once, counts
from webhook.profiles.store import ProfileStore, StoreError

__all__ = ["register"]

log = logging.getLogger("pod_tailor.profiles")


def register(subparsers: Any) -> None:
    recommend = subparsers.add_parser(
        "recommend", help="rebuild the profile store periodically (run as one replica)",
        description="Runs `profiles build` every --interval; a failed build keeps the last profiles.",
    )
    add_build_options(recommend)
    add_store_options(recommend)
    recommend.add_argument("--interval", type=float, default=3600.0, help="seconds between builds [3600]")
    recommend.add_argument(
        "--metrics-port", type=int, default=0, help="serve /metrics over HTTP on this port [0: not at all]"
    )
    recommend.add_argument("--metrics-host", default="0.0.0.0", help="address for --metrics-port [0.0.0.0]")
    recommend.add_argument("--max-builds", type=int, default=0, help="stop after this many builds [0: never]")
    recommend.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        store = store_from(args)
        run, settings = build_run(args), build_settings(args)  # wrong settings stop here, not every hour
    except (StoreError, ValueError) as exc:
        print(f"pod-tailor recommend: {exc}", file=sys.stderr)
        return 1
    metrics = BuildMetrics(interval=args.interval)
    server = metrics.serve(args.metrics_port, args.metrics_host)[0] if args.metrics_port else None
    try:
        return _loop(args, run, settings, store, metrics)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()


def _loop(args: argparse.Namespace, run: BuildRun, settings: BuildSettings, store: ProfileStore,
          metrics: BuildMetrics) -> int:
    built = 0
    while True:
        started = time.monotonic()
        try:
            result = build_once(run, settings, store, progress=progress_printer(args.quiet))
            metrics.succeeded(result)
            found = counts(result.document)
            log.info("profiles built: %d workloads, %d recommendations, %d queries, %.1fs",
                     found.workloads, found.recommended, result.queries, result.seconds)
        except (PrometheusError, StoreError, ValueError) as exc:
            metrics.failed(time.monotonic() - started)
            log.error("profile build failed, the store keeps the last profiles: %s", exc)
        built += 1
        if built == args.max_builds:
            return 0
        time.sleep(args.interval)
