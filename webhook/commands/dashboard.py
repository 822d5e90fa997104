"""`pod-tailor dashboard`: a read-only web UI of what pod-tailor would do to the cluster, and JSON under /api.

It reads the cluster (or, with -f, manifests) and the profile store every --refresh-seconds in the
background (the same reading as `pod-tailor report`) and serves pages from what it read. Bound to
127.0.0.1 by default: reach it with `kubectl -n pod-tailor port-forward deploy/pod-tailor-recommender
8080`. With --prometheus-url the namespace pages also show what dry-run namespaces would have got.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Callable
from typing import Any

from webhook.commands.failures import InputError, quiet_http_clients
from webhook.commands.options import (
    add_policy_options,
    add_prometheus_options,
    add_scope_options,
    add_store_options,
    manifests_given,
    prometheus_connection,
    store_from,
)
from webhook.commands.parser import group, typed
from webhook.config import values
from webhook.config.policies import bundled_policies, load_policy_file
from webhook.core.policy import PolicySet
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.store import StoreError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="a read-only web UI of what pod-tailor would do (served on 127.0.0.1:8080)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_scope_options(
        parser,
        manifests="show these manifests (file or directory; repeatable) instead of a cluster",
        long_namespace=True,
    )
    add_policy_options(parser)
    add_store_options(parser)
    add_prometheus_options(parser)
    group(parser, "Prometheus connection").add_argument(
        "--dry-run-window", type=typed(values.duration), default="24h",
        help="window of the dry-run counts, from Prometheus [24h]",
    )
    served = group(parser, "server")
    served.add_argument("--host", default="127.0.0.1", help="address to listen on [127.0.0.1]")
    served.add_argument("--port", type=typed(values.port), default=8080, help="port [8080]")
    served.add_argument(
        "--refresh-seconds", type=typed(values.seconds), default=60.0,
        help="how often the cluster (or the manifests) and the store are read again [60]",
    )
    parser.set_defaults(func=_main, configure=_configure)


def _prometheus(args: argparse.Namespace) -> Callable[[], Prometheus] | None:
    """How to open the Prometheus that scrapes the webhook; a page never waits longer than 30 s on it."""
    connection = prometheus_connection(args)
    if connection is None:
        return None
    return dataclasses.replace(connection, timeout=min(connection.timeout, 30.0)).open


@dataclasses.dataclass(frozen=True, slots=True)
class _Configured:
    policies: PolicySet | None
    prometheus: Callable[[], Prometheus] | None


def _configure(args: argparse.Namespace) -> _Configured:
    """Options and variables read, named files checked and the policy file parsed; nothing contacted
    (--check-config stops here)."""
    manifests_given(args.filename)
    policies = load_policy_file(str(args.policy_file)) if args.policy_file else None
    if args.filename and policies is None:
        policies = bundled_policies()  # manifests have no cluster to hold a policy ConfigMap
    return _Configured(policies, _prometheus(args))


def _cluster_found(args: argparse.Namespace) -> None:
    """Without any way to a cluster, say so now rather than serve a page that waits for one."""
    from webhook.cluster.config import discover

    found = discover(kubeconfig=args.kubeconfig)
    if found.config is None:
        raise InputError(
            f"no cluster to read ({found.reason}): pass --kubeconfig FILE, or -f DIR to show manifests"
        )


def _main(args: argparse.Namespace) -> int:
    import uvicorn

    from webhook.dashboard.app import create_dashboard
    from webhook.dashboard.fleet import FleetConfig, FleetKeeper, load_fleet

    configured = _configure(args)
    if not args.filename:
        _cluster_found(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    quiet_http_clients()
    try:
        store = store_from(args)
    except StoreError as exc:
        print(f"pod-tailor dashboard: {exc}", file=sys.stderr)
        return 1
    config = FleetConfig(
        store=store,
        kubeconfig=args.kubeconfig,
        manifests=tuple(args.filename),
        recursive=args.recursive,
        namespaces=tuple(args.namespace),
        all_namespaces=args.all_namespaces,
        own_namespace=args.pod_tailor_namespace,
        policy_configmap=args.policy_configmap,
        policies=configured.policies,
        prometheus=configured.prometheus,
        dry_run_window=args.dry_run_window,
    )
    keeper = FleetKeeper(lambda: load_fleet(config), interval=args.refresh_seconds)
    app = create_dashboard(keeper)
    uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=False)
    return 0
