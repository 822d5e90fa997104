"""Keeps `State.profiles` fresh in the background; the admission path never waits on this.

Every `interval` the store is checked (a cheap fingerprint: file mtime, or ConfigMap
resourceVersions) and, when it changed, read and swapped in whole. With a Prometheus URL the same
task first rebuilds the profiles every `build_interval` (single-node use, no separate recommender).
Any failure (of any type: a store in an unexpected shape must not stop the task) keeps the last
snapshot: its `taken_at` is the build time, so the age metric grows and says how stale it is; the
error is kept in `state.notes` and `state.health` for /readyz and the metrics, and the next try
backs off (up to 8 intervals). A store that reads as empty (the file or the ConfigMaps deleted)
after profiles were loaded is "source unavailable, keeping the last profiles", not "no profiles":
every Pod would otherwise fall back to the policy at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from webhook.config.settings import Settings
from webhook.profiles.prometheus import PrometheusError
from webhook.profiles.store import ProfileDocument, ProfileStore, StoreError
from webhook.refreshers.state import State

__all__ = ["ProfileRefresher", "profile_refresher"]

log = logging.getLogger("pod_tailor.profiles")


@dataclass
class ProfileRefresher:
    """The `Refresher` for usage profiles."""

    store: ProfileStore
    interval: float = 60.0
    builder: Callable[[], ProfileDocument] | None = None  # Prometheus -> document, run in a thread
    build_interval: float = 3600.0
    name: str = "profiles"
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._fingerprint: object = object()  # never equal to a real fingerprint
        self._next_build = 0.0
        self._build_error: str | None = None
        self.failures = 0
        self._failed_rounds = 0  # consecutive rounds with a failure, for the backoff

    async def refresh_once(self, state: State) -> bool:
        """One round: maybe build, then reload if changed. True when a new snapshot was swapped in."""
        if self.builder is not None and self.clock() >= self._next_build:
            try:
                document = await asyncio.to_thread(self.builder)
                await asyncio.to_thread(self.store.write, document)
                self._next_build = self.clock() + self.build_interval
                self._build_error = None
                state.notes.pop(self.name, None)
            except Exception as exc:  # PrometheusError, StoreError, or anything a bad answer raises
                self._next_build = self.clock() + min(self.build_interval, max(self.interval, 30.0))
                self._build_error = f"profile build failed, keeping the last profiles: {_describe(exc)}"
                self._fail(state, self._build_error)
        try:
            fingerprint = await asyncio.to_thread(self.store.fingerprint)
            if fingerprint == self._fingerprint:
                self._succeeded(state)
                return False
            document = await asyncio.to_thread(self.store.read)
            loaded = state.profiles.profiles
            if not document.workloads and loaded:
                self._fail(state, f"profile store {self.store.describe()} holds no profiles (missing or "
                                  f"deleted?): source unavailable, keeping the last {len(loaded)} workloads")
                return False
            snapshot = document.snapshot(origin=self.store.describe())
        except Exception as exc:  # StoreError, or a decoder's fault: the last profiles stay
            self._fail(state, f"profile store unreadable, keeping the last profiles: {_describe(exc)}")
            return False
        state.swap_profiles(snapshot)
        self._fingerprint = fingerprint
        self._succeeded(state)
        log.info("profiles loaded: %d workloads from %s", len(document.workloads), self.store.describe())
        return True

    def _succeeded(self, state: State) -> None:
        if self._build_error:
            state.notes[self.name] = self._build_error
            return
        state.notes.pop(self.name, None)
        state.health.ok(self.name)
        self._failed_rounds = 0

    def _fail(self, state: State, message: str) -> None:
        self.failures += 1
        self._failed_rounds += 1
        state.notes[self.name] = message
        state.health.failed(self.name, message)
        log.warning("%s", message)

    def next_wait(self) -> float:
        """The interval, doubled for each round in a row that failed, up to 8 intervals."""
        return float(self.interval * min(8, 2 ** max(0, self._failed_rounds - 1)))

    async def run(self, state: State) -> None:
        # Profiles are optional (the policy is the fallback), so readiness waits only for the first try.
        state.pending.add(self.name)
        try:
            while True:
                await self.refresh_once(state)
                state.pending.discard(self.name)
                await asyncio.sleep(self.next_wait())
        finally:
            state.pending.discard(self.name)


def _describe(exc: BaseException) -> str:
    text = str(exc) if isinstance(exc, StoreError | PrometheusError) else f"{type(exc).__name__}: {exc}"
    return text[:300]


class _UnavailableStore:
    """Stands in when the configured store cannot even be opened: every read says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def describe(self) -> str:
        return "no profile store"

    def fingerprint(self) -> object:
        raise StoreError(self.reason)

    def read(self) -> ProfileDocument:
        raise StoreError(self.reason)

    def write(self, document: ProfileDocument, *, scope: Iterable[str] | None = None) -> None:
        raise StoreError(self.reason)


def profile_refresher(settings: Settings) -> ProfileRefresher:
    """The refresher `serve` runs: the configured store, and a builder when a Prometheus URL is set."""
    from pathlib import Path

    from webhook.profiles.build import BuildSettings, IncrementalBuild
    from webhook.profiles.preflight import check_connection
    from webhook.profiles.queries import duration
    from webhook.profiles.runner import open_store

    store: ProfileStore
    try:
        store = open_store(
            path=Path(settings.profiles_path) if settings.profiles_path else None,
            kubernetes=settings.profiles_store == "kubernetes",
            namespace=settings.namespace,
            kubeconfig=settings.kubeconfig,
        )
    except StoreError as exc:
        store = _UnavailableStore(str(exc))
    builder: Callable[[], ProfileDocument] | None = None
    connection = settings.prometheus()
    if connection is not None:
        for warning in connection.warnings():
            log.warning("%s", warning)
        incremental = IncrementalBuild(connection, BuildSettings())
        window = duration(incremental.settings.window)

        def builder() -> ProfileDocument:
            for warning in check_connection(connection, window=window):
                log.warning("%s", warning)
            result = incremental()
            if result.warnings:
                raise PrometheusError(f"partial data, not stored: {result.warnings[0]}")
            if result.unread:  # the last profiles stay: a namespace not read is not a namespace without data
                names = ", ".join(namespace for namespace, _ in result.unread)
                raise PrometheusError(f"namespaces not read, not stored: {names}: {result.unread[0][1]}")
            return result.document

    return ProfileRefresher(
        store,
        interval=settings.profiles_refresh_seconds,
        builder=builder,
        build_interval=settings.profiles_build_seconds,
    )
