"""`pod-tailor dashboard`: a read-only web UI of what pod-tailor would do to the cluster, and JSON under /api.

It reads the cluster (or, with -f, manifests) and the profile store every --refresh-seconds in the
background (the same reading as `pod-tailor report`) and serves pages from what it read. Bound to
127.0.0.1 by default: reach it with `kubectl -n pod-tailor port-forward deploy/pod-tailor-recommender
8080`. With --prometheus-url the namespace pages also show what dry-run namespaces would have got.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import Any

from webhook.commands.failures import UNREACHABLE
from webhook.commands.logs import json_logs
from webhook.commands.options import (
    POLICY,
    PROMETHEUS,
    SCOPE,
    STORE,
    cluster_found,
    manifests_given,
    prometheus_connection,
    store_from,
)
from webhook.commands.parser import exits, take
from webhook.config.policies import bundled_policies, load_policy_file
from webhook.core.policy.policies import PolicySet
from webhook.profiles.prometheus import Prometheus
from webhook.profiles.store import ProfileStore

__all__ = ["register"]


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard",
        help="a read-only web UI of what pod-tailor would do (served on 127.0.0.1:8080)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    take(parser, *SCOPE, *POLICY, *STORE, *PROMETHEUS, "dry_run_window", "host", "port", "refresh_seconds",
         "log_level", defaults={"host": "127.0.0.1", "port": 8080})
    exits(parser, {UNREACHABLE: "no cluster to read (and no -f)"})
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
    store: ProfileStore


def _configure(args: argparse.Namespace) -> _Configured:
    """Options and variables read, named files checked, the policy file parsed, the cluster's
    configuration found; nothing contacted."""
    manifests_given(args.filename, recursive=args.recursive)
    policies = load_policy_file(args.policy_file) if args.policy_file else None
    if args.filename and policies is None:
        policies = bundled_policies()  # manifests have no cluster to hold a policy ConfigMap
    prometheus = _prometheus(args)
    if not args.filename:  # say it now rather than serve a page that waits for a cluster
        cluster_found(args, why="pass --kubeconfig FILE, or -f DIR to show manifests")
    return _Configured(policies, prometheus, store_from(args))


def _main(args: argparse.Namespace, configured: _Configured) -> int:
    import uvicorn

    from webhook.dashboard.app import create_dashboard
    from webhook.dashboard.fleet import FleetConfig, FleetKeeper, load_fleet

    json_logs(args.log_level)
    config = FleetConfig(
        store=configured.store,
        kubeconfig=args.kubeconfig,
        manifests=tuple(args.filename),
        recursive=args.recursive,
        namespaces=tuple(args.namespaces),
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
