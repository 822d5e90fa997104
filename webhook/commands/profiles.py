"""`pod-tailor profiles build|show`: read Prometheus history into the profile store, and print it.

`build` writes the store only when the build succeeded without partial data, so a failed build
leaves the last profiles in place.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import yaml

from webhook.commands.failures import FINDINGS, UNREACHABLE, InputError
from webhook.commands.options import BUILD, PROMETHEUS, STORE, build_run, build_settings, store_from
from webhook.commands.parser import exits, take
from webhook.profiles.build import BuildSettings
from webhook.profiles.prometheus import OverloadedError, PrometheusError
from webhook.profiles.runner import BuildRun, build_once, counts
from webhook.profiles.store import ProfileDocument, ProfileStore, StoreError, encode_document
from webhook.profiles.table import render_table, select
from webhook.report.progress import Progress

__all__ = ["BuildMeter", "failed", "progress_printer", "register"]


def register(subparsers: Any) -> None:
    profiles = subparsers.add_parser(
        "profiles", help="build and inspect usage profiles from Prometheus history",
        description="Per-workload, per-container requests sized from what each workload really used.",
    )
    sub = profiles.add_subparsers(dest="profiles_command", required=True, metavar="ACTION")
    build = sub.add_parser("build", help="read Prometheus history and write the profile store")
    take(build, *PROMETHEUS, *BUILD, "end", *STORE)
    exits(build, {
        FINDINGS: "the build failed (partial data, a shrink refused, no data): the store is left as it was",
        UNREACHABLE: "Prometheus (or the cluster holding the store) could not be reached",
    })  # fmt: skip
    build.set_defaults(func=_build_main, configure=_build_configure)
    show = sub.add_parser("show", help="print the stored profiles")
    show.add_argument("selector", nargs="?", help="NAMESPACE, NAMESPACE/NAME or NAMESPACE/Kind/NAME")
    take(show, "output", *STORE)
    exits(show, {FINDINGS: "nothing matches the selector", UNREACHABLE: "the store could not be read"})
    show.set_defaults(func=_show_main, configure=_show_configure)


def failed(exc: Exception) -> int:
    """A build that failed: 3 when Prometheus could not be reached or gave no answer in time, 1 when it
    answered and the build still could not be written (refused, no data, partial data, a shrink)."""
    unreachable = isinstance(exc, OverloadedError) or str(exc).startswith("cannot reach Prometheus")
    return UNREACHABLE if unreachable else FINDINGS


def progress_printer(quiet: bool, *, bar: Progress | None = None) -> Callable[[str], None]:
    """Progress lines on stderr, stamped with the seconds since the build started (above the bar)."""
    started = time.monotonic()

    def say(message: str) -> None:
        if not quiet:
            if bar is not None:
                bar.done()  # the line goes above; the next tick draws the bar again
            print(f"[{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    return say


class BuildMeter:
    """The big passes on a progress bar: queries done of planned, samples read, time left."""

    def __init__(self, bar: Progress) -> None:
        self.bar, self.started = bar, time.monotonic()

    def __call__(self, done: int, planned: int, samples: int) -> None:
        elapsed = time.monotonic() - self.started
        left = elapsed / done * (planned - done) if done else 0.0
        self.bar.advance(done, planned, f"pieces, {samples / 1e6:,.1f} M samples read, ~{left:.0f}s left")


def _build_configure(args: argparse.Namespace) -> tuple[BuildRun, BuildSettings, ProfileStore]:
    """The connection, the build's settings and the store to write."""
    settings = build_settings(args)
    return build_run(args), settings, store_from(args)


def _build_main(args: argparse.Namespace, configured: tuple[BuildRun, BuildSettings, ProfileStore]) -> int:
    run, settings, store = configured
    try:
        bar = Progress() if not args.quiet else None  # drawn only on a terminal
        progress = progress_printer(args.quiet, bar=bar if bar is not None and bar.enabled else None)
        meter = BuildMeter(bar) if bar is not None and bar.enabled else None
        try:
            result = build_once(run, settings, store, progress=progress, meter=meter)
        finally:
            if bar is not None:
                bar.done()
    except (PrometheusError, StoreError) as exc:
        print(f"pod-tailor profiles build: {exc}", file=sys.stderr)
        return failed(exc)
    found = counts(result.document)
    print(
        f"wrote {found.workloads} workloads ({found.recommended} containers with a recommendation, "
        f"{found.without} without) to {store.describe()} in {result.seconds:.1f}s using "
        f"{result.queries} Prometheus queries"
    )
    return 0


SHOWN = ("table", "json", "yaml")


def _show_configure(args: argparse.Namespace) -> ProfileStore:
    if args.output not in SHOWN:
        raise InputError(f"--output {args.output}: use one of {', '.join(SHOWN)}")
    return store_from(args)


def _show_main(args: argparse.Namespace, store: ProfileStore) -> int:
    try:
        document = store.read()
    except StoreError as exc:
        print(f"pod-tailor profiles show: {exc}", file=sys.stderr)
        return UNREACHABLE if args.profiles_store == "kubernetes" else FINDINGS
    selected = select(document, args.selector)
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


