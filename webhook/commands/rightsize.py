"""`pod-tailor rightsize` (alias `boost-controller`): the resize controller, until stopped.

One controller, two duties, one leader: it gives boosted Pods their steady CPU back once started
(`webhook.controllers.boost`) and right-sizes running Pods in place where a policy turns it on
(`webhook.controllers.rightsize`). It reads the facts the webhook reads: the cluster snapshot (namespace
labels, policy, LimitRanges, autoscalers, server version) and the profile store. With `--leader-elect`
several replicas run and only the one holding the Lease resizes. `--dry-run` prints what it would
resize, once, then the Pods it resized before (applied or pending), and changes nothing.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from webhook.commands.running import configure, running_options, start
from webhook.config.settings import Settings
from webhook.refreshers.state import State

if TYPE_CHECKING:  # the controllers are imported where they run: the Kubernetes client, 0.4 s of a start
    from webhook.controllers.rightsize import RightsizeController

__all__ = ["register"]


def register(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "rightsize",
        aliases=["boost-controller"],
        help="resize running Pods in place: give boosted Pods their steady CPU back, right-size where a "
        "policy turns inPlace on (Kubernetes 1.33+)",
        description="The resize controller. Gives Pods labelled pod-tailor.io/boosted=true their steady CPU "
        "back once Ready, and resizes running Pods of enforce-mode namespaces whose policy sets "
        "inPlace.enabled toward what admission would set now (pods/resize, never the workload).",
    )
    running_options(command, "tick", "max_resizes_per_minute", "dry_run",
                    lease_name="pod-tailor-boost-controller", tick=1.0)
    command.set_defaults(func=_main, configure=configure)


def _main(args: argparse.Namespace, settings: Settings) -> int:
    from webhook.controllers.boost import BoostController
    from webhook.controllers.controller_metrics import ResizeMetrics
    from webhook.controllers.rightsize import RightsizeController

    running = start(args, settings)
    state, metrics = running.state, ResizeMetrics()
    rightsize = RightsizeController(
        running.api, cluster=lambda: state.cluster, profiles=lambda: state.profiles,
        ready=lambda: "cluster" not in state.pending, leading=running.leading, stop=running.stop,
        metrics=metrics, per_minute=args.max_resizes_per_minute, tick=args.tick,
        dry_run=sys.stdout if args.dry_run else None,
    )  # fmt: skip
    if args.dry_run:
        try:
            return _dry_run(rightsize, state, running.stop)
        finally:
            running.close()
    boost = BoostController(
        running.api, leading=running.leading, stop=running.stop, metrics=metrics, tick=args.tick
    )

    def work() -> None:
        threading.Thread(target=boost.run, name="boost", daemon=True).start()
        rightsize.run()

    return running.until_stopped(work, metrics=metrics)


def _dry_run(
    rightsize: RightsizeController, state: State, stop: threading.Event, timeout: float = 60.0
) -> int:
    """Sync every watch, make one pass that prints instead of asking, and say how it went."""
    for watched in rightsize.watches:
        threading.Thread(target=watched.run, name=f"dry-run-{watched.resource}", daemon=True).start()
    deadline = time.monotonic() + timeout
    while not (rightsize.synced() and not state.pending):
        if time.monotonic() > deadline:
            print("pod-tailor rightsize: the cluster could not be read in time", file=sys.stderr)
            return 1
        time.sleep(0.1)
    if not rightsize.supported():
        print(f"pod-tailor rightsize: {rightsize.unsupported}", file=sys.stderr)
        return 0
    rightsize.step()
    done = rightsize.resized()
    print(f"resized in place so far: {len(done)} Pod(s)" + "".join(f"\n  {line}" for line in done))
    return 0
