"""One profile build from start to store: open the store, read Prometheus, refuse partial data, write.

Shared by `profiles build` (once) and `recommend` (forever); the commands only turn options into
these arguments. A build that fails, or that Prometheus answered only in part, leaves the store as
it was.

A build that would wipe out recommendations keeps the previous ones (`guard_shrink`, pure). A
Prometheus that lost its history (a new volume, a shorter retention, a relabelling that renamed the
series) answers without error, and a build from it writes "no recommendation" for every workload: the
next Pods then fall back to policy defaults across the fleet. So when more than a set share of the
store's recommendations would be lost, those containers keep their previous recommendation, and each
loss is reported with its real reason; `--allow-shrink` writes what the build found.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from webhook.core.model.profile import NoRecommendation, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles import checkpoint
from webhook.profiles.build import BuildResult, BuildSettings, build_profiles
from webhook.profiles.connection import PrometheusConnection
from webhook.profiles.passes import Meter
from webhook.profiles.preflight import check_connection
from webhook.profiles.prometheus import PrometheusError
from webhook.profiles.queries import duration
from webhook.profiles.store import FileStore, ProfileDocument, ProfileStore, StoreError, WorkloadEntry
from webhook.profiles.trailingstore import TrailingStore

__all__ = [
    "BuildRun", "Counts", "Shrink", "build_once", "counts", "guard_shrink", "keep_unread", "open_store",
]


def open_store(
    *, path: Path | None = None, kubernetes: bool = False, namespace: str = "pod-tailor",
    kubeconfig: str | None = None,
) -> ProfileStore:
    """The file store (default location unless `path`), or the ConfigMap store in `namespace`; both
    carry the step limit's trails on every write (`trailingstore.TrailingStore`)."""
    if not kubernetes:
        return TrailingStore(FileStore(path))
    from webhook.cluster.config import discover
    from webhook.profiles.kubestore import KubeStore

    api = discover(kubeconfig=kubeconfig)
    if api.config is None:
        raise StoreError(f"no Kubernetes API for the profile store: {api.reason}")
    return TrailingStore(KubeStore(api.config.api_client, namespace=namespace))


@dataclass(frozen=True, slots=True)
class BuildRun:
    """How one build runs, beside what it reads (`BuildSettings`)."""

    connection: PrometheusConnection | None  # None: no Prometheus URL was given
    checkpoint_path: Path | None = None  # None: no checkpoint (a full build every time)
    end: float | None = None  # the window's end; None: now
    allow_partial: bool = False
    allow_shrink: bool = False  # write a build that loses more than `max_shrink` of the recommendations
    max_shrink: float = 0.2


def _noop(_: str) -> None:
    return None


def build_once(
    run: BuildRun,
    settings: BuildSettings,
    store: ProfileStore,
    *,
    progress: Callable[[str], None] = _noop,
    meter: Meter | None = None,
) -> BuildResult:
    """One build into `store`; raises PrometheusError/StoreError and refuses partial data unless allowed."""
    connection = run.connection
    if connection is None:
        raise PrometheusError("no Prometheus URL: pass --prometheus-url URL or set POD_TAILOR_PROMETHEUS_URL")
    for warning in connection.warnings():
        print(f"warning: {warning}", file=sys.stderr)
    window = duration(settings.window)
    for warning in check_connection(connection, window=window, end=run.end, namespaces=settings.namespaces):
        print(f"warning: {warning}", file=sys.stderr)
    prom = connection.open()
    where = run.checkpoint_path
    kept = checkpoint.load(where, key=settings.checkpoint_key(connection.identity)) if where else None
    try:
        result = build_profiles(prom, settings, end=run.end, progress=progress, checkpoint=kept, meter=meter)
    finally:
        prom.close()
    if kept is not None and where is not None and not result.warnings:  # else unchanged: no rewrite
        try:
            checkpoint.save(kept, where)
        except OSError as exc:  # a cache: the next build is a full one, nothing is wrong
            print(f"warning: checkpoint {where} not written: {exc}", file=sys.stderr)
    for note in result.notes:
        print(f"warning: {note}", file=sys.stderr)
    for warning in dict.fromkeys(result.warnings):  # the same warning comes once per query
        times = result.warnings.count(warning)
        print(f"warning: Prometheus: {warning}" + (f" (x{times})" if times > 1 else ""), file=sys.stderr)
    if result.warnings and not run.allow_partial:
        raise PrometheusError(
            f"Prometheus reported partial data ({len(result.warnings)} warning(s)); the store was not "
            "changed (pass --allow-partial to write anyway)"
        )
    if result.unread:
        result = _keep_unread(result, store)
    if not run.allow_shrink:
        result = _keep_what_would_be_lost(
            result, store, max_share=run.max_shrink, namespaces=settings.namespaces
        )
    store.write(result.document, scope=settings.namespaces or None)
    return result


def _keep_unread(result: BuildResult, store: ProfileStore) -> BuildResult:
    """The result with the previous profiles of the namespaces Prometheus could not answer for."""
    old = store.read()
    unread = dict(result.unread)
    kept = sum(key.namespace in unread for key in old.workloads)
    print(f"warning: {len(unread)} namespace(s) could not be read from Prometheus after splitting and "
          f"retrying; their {kept} workload(s) keep the previous profiles:", file=sys.stderr)
    for namespace, reason in sorted(unread.items()):
        print(f"warning:   {namespace}: {reason}", file=sys.stderr)
    document = keep_unread(old, result.document, namespaces=unread)
    return dataclasses.replace(result, document=document)


def _keep_what_would_be_lost(
    result: BuildResult, store: ProfileStore, *, max_share: float, namespaces: Sequence[str]
) -> BuildResult:
    """The result to write: with the previous recommendations back when it would lose too many."""
    guarded = guard_shrink(store.read(), result.document, max_share=max_share, namespaces=namespaces or None)
    if not guarded.kept:
        return result
    print(
        f"warning: this build would lose {len(guarded.lost)} recommendation(s), {guarded.share:.0%} of the "
        f"store's (more than --max-shrink {max_share:.0%}): kept the previous ones for them; pass "
        "--allow-shrink to write what the build found",
        file=sys.stderr,
    )
    for line in guarded.lost[:20]:
        print(f"warning:   {line}", file=sys.stderr)
    if len(guarded.lost) > 20:
        print(f"warning:   ... and {len(guarded.lost) - 20} more", file=sys.stderr)
    return dataclasses.replace(result, document=guarded.document)


@dataclass(frozen=True, slots=True)
class Shrink:
    document: ProfileDocument  # what to write
    lost: tuple[str, ...]  # "shop/Deployment/web app: <why>", for each recommendation the build lost
    share: float  # lost / recommendations the store had in scope
    kept: bool  # True: the previous recommendations were kept for the lost ones


def _in_scope(key: WorkloadKey, namespaces: Iterable[str] | None) -> bool:
    return namespaces is None or key.namespace in set(namespaces)


def guard_shrink(
    old: ProfileDocument, new: ProfileDocument, *, max_share: float, namespaces: Iterable[str] | None = None
) -> Shrink:
    """`new`, or `new` with the previous recommendations back where it lost more than `max_share` of them."""
    scope = None if namespaces is None else tuple(namespaces)
    had, lost, back = 0, [], dict(new.workloads)
    for key, entry in old.workloads.items():
        if not _in_scope(key, scope):
            continue
        for container, profile in entry.containers.items():
            if not isinstance(profile, Recommendation):
                continue
            had += 1
            rebuilt = new.workloads.get(key)
            now = rebuilt.containers.get(container) if rebuilt is not None else None
            if isinstance(now, Recommendation):
                continue
            why = now.reason if isinstance(now, NoRecommendation) else "not in this build's data"
            lost.append((key, container, profile, why))
    share = len(lost) / had if had else 0.0
    said = tuple(f"{key} {container}: {why}" for key, container, _, why in lost)
    if share <= max_share:
        return Shrink(new, said, share, kept=False)
    for key, container, profile, _ in lost:
        entry = back.get(key) or WorkloadEntry(containers={})
        back[key] = dataclasses.replace(entry, containers={**entry.containers, container: profile})
    return Shrink(dataclasses.replace(new, workloads=back), said, share, kept=True)


def keep_unread(old: ProfileDocument, new: ProfileDocument, *, namespaces: Iterable[str]) -> ProfileDocument:
    """`new` with the previous entries of the namespaces the build could not read (it has none of its
    own for them): a failed read is never written as "no data"."""
    unread = set(namespaces)
    if not unread:
        return new
    workloads = {key: entry for key, entry in new.workloads.items() if key.namespace not in unread}
    workloads |= {key: entry for key, entry in old.workloads.items() if key.namespace in unread}
    return dataclasses.replace(new, workloads=workloads)


@dataclass(frozen=True, slots=True)
class Counts:
    workloads: int
    recommended: int  # containers with a recommendation
    without: int  # containers without one


def counts(document: ProfileDocument) -> Counts:
    profiles = [p for entry in document.workloads.values() for p in entry.containers.values()]
    recommended = sum(isinstance(p, Recommendation) for p in profiles)
    return Counts(len(document.workloads), recommended, len(profiles) - recommended)
