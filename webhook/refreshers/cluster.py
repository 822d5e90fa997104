"""Keeps `state.cluster` current from the API server without a single call on the admission path.

One list+watch thread per collection of `webhook.cluster.resources` (Namespaces, LimitRanges, the
policy ConfigMap, ...) and one thread that reads the server version at start-up and every
`resync_seconds`. Any change rebuilds a complete `ClusterSnapshot`
and swaps it whole. `/readyz` waits (via `state.pending`) until every collection has listed once. With no
cluster configuration the refresher swaps in the embedded defaults, notes why, and does nothing else.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubernetes import client

from webhook.cluster import metrics
from webhook.cluster.config import SERVICE_ACCOUNT_DIR, ClusterConfig, discover
from webhook.cluster.policy_source import PolicySource
from webhook.cluster.resources import DAEMONSETS, NODES, RESOURCEQUOTAS, WatchSpec, watch_specs
from webhook.cluster.snapshot import ParseCache, build_snapshot
from webhook.cluster.watch import Watched
from webhook.config.policies import bundled_policies, load_policy_file
from webhook.config.settings import Settings
from webhook.core.facts import parse_server_version
from webhook.core.policy.policies import PolicySet
from webhook.core.snapshot import ClusterSnapshot
from webhook.refreshers.state import State

__all__ = ["ClusterRefresher", "base_policies"]

log = logging.getLogger(__name__)


def base_policies(settings: Settings) -> PolicySet:
    return load_policy_file(settings.policy_file) if settings.policy_file else bundled_policies()


class ClusterRefresher:
    """The `Refresher` for cluster state; `start`/`stop` are the synchronous core `run` wraps."""

    name = "cluster"

    def __init__(
        self,
        settings: Settings,
        *,
        env: Mapping[str, str] | None = None,
        service_account_dir: Path = SERVICE_ACCOUNT_DIR,
    ) -> None:
        self.settings = settings
        self._env = env
        self._service_account_dir = service_account_dir
        self._stop = threading.Event()
        self._rebuild_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._watched: dict[str, Watched] = {}
        self._policy = PolicySource(
            base_policies(settings), namespace=settings.namespace, name=settings.policy_configmap
        )
        self._config: ClusterConfig | None = None
        self._state: State | None = None
        self.server_version: tuple[int, int] | None = None
        self.fresh_at = 0.0  # last time the data was known to be current
        self._parsed = ParseCache()

    # -- Refresher protocol ---------------------------------------------------------------------------
    async def run(self, state: State) -> None:
        # Discovery reads files and the first version request may wait on the network: not on the loop.
        # Threads started after a cancellation see `_stop` set and end at once.
        try:
            await asyncio.to_thread(self.start, state)
            await asyncio.Event().wait()  # until cancelled; the work happens in threads
        finally:
            await asyncio.to_thread(self.stop)

    # -- synchronous core ---------------------------------------------------------------------------
    def start(self, state: State) -> None:
        self._state = state
        self._stop = threading.Event()  # a fresh one: the supervisor may start this again after a crash
        state.pending.add(self.name)
        found = None
        if self.settings.watch_cluster:
            found = discover(
                kubeconfig=self.settings.kubeconfig,
                env=self._env,
                service_account_dir=self._service_account_dir,
            )
        if found is None or found.config is None:
            reason = "watch_cluster is off" if found is None else found.reason
            self._embedded(state, reason)
            return
        self._config = found.config
        state.notes[self.name] = f"watching {found.config.source} ({found.config.host})"
        log.info("cluster: %s at %s (%s)", found.config.source, found.config.host, found.reason)
        api = found.config.api_client
        self._watched = {spec.resource: self._watcher(spec, api) for spec in watch_specs(self.settings)}
        self._read_version()
        for watched in self._watched.values():
            self._spawn(watched.run, f"watch-{watched.resource}")
        self._spawn(self._heartbeat, "cluster-heartbeat")

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for watched in self._watched.values():
            watched.close()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()

    @property
    def synced(self) -> bool:
        return all(w.synced.is_set() for w in self._watched.values())

    # -- internals --------------------------------------------------------------------------------
    def _embedded(self, state: State, reason: str) -> None:
        message = f"no cluster configuration ({reason}): serving embedded defaults"
        log.warning("%s", message)
        state.notes[self.name] = message
        now = time.time()
        state.swap_cluster(
            ClusterSnapshot(
                policies=self._policy.current.policies,
                default_mode=self.settings.default_mode,
                taken_at=now,
                source="embedded defaults",
            )
        )
        metrics.CLUSTER_SNAPSHOT_TIMESTAMP.set(now)
        state.pending.discard(self.name)
        state.health.ok(self.name)

    def _watch_failed(self, resource: str, message: str) -> None:
        if self._state is not None:
            self._state.health.failed(self.name, f"{resource}: {message}")

    def _watcher(self, spec: WatchSpec, api: Any) -> Watched:
        return Watched(
            spec.resource,
            spec.list_call(api, self.settings),
            on_change=self._rebuild,
            stop=self._stop,
            field_selector=spec.field_selector(self.settings) if spec.field_selector else None,
            watch_seconds=int(self.settings.resync_seconds),
            optional=spec.optional,
            absent_retry=self.settings.resync_seconds,
            relevant=spec.relevant,
            on_failure=functools.partial(self._watch_failed, spec.resource),
            forbidden_ok=spec.forbidden_ok,
            keep=spec.keep,
        )

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _read_version(self) -> None:
        assert self._config is not None
        try:
            info = client.VersionApi(self._config.api_client).get_code(_request_timeout=(5, 10))
        except Exception as exc:  # an unreachable server must not stop the watches from retrying
            log.warning("cluster: cannot read the server version (%s); keeping %s", exc, self.server_version)
            return
        version = parse_server_version(str(info.major), str(info.minor))
        if version != self.server_version:
            log.info("cluster: API server version %s (git %s)", version, info.git_version)
        if version is not None:
            self.server_version = version
            metrics.SERVER_VERSION.set(version[1])

    def _heartbeat(self) -> None:
        """Refresh the server version and, while every watch is connected, the snapshot's age."""
        while not self._stop.wait(self.settings.resync_seconds):
            try:
                before = self.server_version
                self._read_version()
                # An optional resource that is not served (no CRD) has no watch to be connected: its
                # data, none, is as current as its last try.
                if self.synced and all(w.connected or not w.served for w in self._watched.values()):
                    self.fresh_at = time.time()
                    self._rebuild(touch=False)
                elif before != self.server_version:
                    self._rebuild(touch=False)
            except Exception:  # this thread must outlive any fault: it is what confirms freshness
                log.exception("cluster: heartbeat failed; next try in %.0fs", self.settings.resync_seconds)

    def _rebuild(self, *, touch: bool = True) -> None:
        """Build and swap a complete snapshot; called from the watch threads on every change.

        A fault while building keeps the current snapshot (and is reported); it never reaches the
        watch that called, which would otherwise take it for a failed list.
        """
        state = self._state
        if state is None or not self.synced:  # a partial view never replaces the current snapshot
            return
        try:
            self._build_and_swap(state, touch=touch)
        except Exception as exc:
            log.exception("cluster: snapshot rebuild failed; keeping the current snapshot")
            state.health.failed(self.name, f"rebuild failed: {type(exc).__name__}: {str(exc)[:200]}")
            return
        state.health.ok(self.name)

    def _note_forbidden(self, state: State) -> None:
        """Collections a feature can do without, that the API server forbids: said in /readyz notes."""
        off = {
            NODES: "node fit is off, Pods sized as before",
            RESOURCEQUOTAS: "quota is off, Pods sized as before",
            DAEMONSETS: "node fit counts whole nodes, DaemonSets not subtracted",
        }
        for name, outcome in off.items():
            watched = self._watched.get(name)
            if watched is None:
                continue
            metrics.CLUSTER_FACTS_KNOWN.labels(name).set(0 if watched.forbidden else 1)
            if watched.forbidden:
                state.notes[name] = f"{name} may not be listed (403): {outcome}"
            else:
                state.notes.pop(name, None)

    def _build_and_swap(self, state: State, *, touch: bool) -> None:
        with self._rebuild_lock:
            configmaps = self._watched["configmaps"].objects() if "configmaps" in self._watched else []
            outcome = self._policy.update(configmaps)
            if outcome.error:
                state.notes["policy"] = outcome.error
                state.health.failed("policy", outcome.error)
            else:
                state.notes.pop("policy", None)
                state.health.ok("policy")
            if touch:
                self.fresh_at = time.time()
            assert self._config is not None
            self._note_forbidden(state)
            snapshot = build_snapshot(
                policies=outcome.policies,
                settings=self.settings,
                objects={name: watched.objects() for name, watched in self._watched.items()
                         if not watched.forbidden},
                server_version=self.server_version,
                taken_at=self.fresh_at,
                source=f"cluster {self._config.host}; policy from {outcome.origin}",
                cache=self._parsed,
            )
            state.swap_cluster(snapshot)
            metrics.CLUSTER_SNAPSHOT_TIMESTAMP.set(self.fresh_at)
            if self.name in state.pending:
                state.pending.discard(self.name)
                log.info("cluster: first full sync done (%d namespaces)", len(snapshot.namespaces or {}))
