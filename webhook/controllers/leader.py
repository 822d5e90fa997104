"""Lease leader election: of several replicas, one at a time does the work (builds, resizes).

    elector = LeaderElector(api_client, LeaseConfig(namespace="pod-tailor", name="pod-tailor-recommender",
                                                    identity=identity()),
                            on_started=start_work, on_stopped=stop_work)
    elector.start()          # a daemon thread: acquire, then renew every retry period
    ...                      # elector.is_leader, elector.leading (an Event)
    elector.stop()           # gives the Lease up (holderIdentity cleared): another takes over at once

Leadership is lost when renewing has not succeeded for `renew_deadline` seconds, or at once when the
Lease is seen held by someone else; `on_stopped` then runs and the elector goes back to waiting for
the Lease, so a replica that lost it can lead again later. The callbacks run on the elector's thread
and must return quickly (start or signal the work; do not do it there). Decisions about the record
are `webhook.controllers.lease` (pure); this module only reads and writes it. The defaults are
client-go's: lease 15 s, renew deadline 10 s, retry period 2 s.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from webhook.controllers.lease import Observed, plan, released

__all__ = ["LeaderElector", "LeaseConfig", "identity"]

log = logging.getLogger("pod_tailor.leader")

Obj = dict[str, Any]


def identity() -> str:
    """This replica's name in the Lease: the Pod's name (downward API `POD_NAME`) and a random suffix,
    so a restarted container never mistakes its predecessor's Lease for its own."""
    base = os.environ.get("POD_NAME") or socket.gethostname()
    return f"{base}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, slots=True)
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    lease_seconds: int = 15  # how long a Lease not renewed stays its holder's (on the others' clocks)
    renew_deadline: float = 10.0  # the holder gives up leading when renewing has failed this long
    retry_period: float = 2.0  # between tries to acquire, and between renewals

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_seconds:
            raise ValueError("need 0 < retry period < renew deadline < lease duration")


def _noop() -> None:
    return None


class _Gauge(Protocol):
    def set(self, value: float) -> None: ...


def followers(leading: threading.Event, gauge: _Gauge) -> tuple[Callable[[], None], Callable[[], None]]:
    """`on_started`/`on_stopped` that mirror leadership into a command's `leading` event and its
    leader gauge (1 while leading): what every leader-elected command needs."""

    def started() -> None:
        gauge.set(1)
        leading.set()

    def stopped() -> None:
        gauge.set(0)
        leading.clear()

    return started, stopped


class LeaderElector:
    """Runs the election in a thread; `leading` is set while this replica holds the Lease."""

    def __init__(
        self,
        api_client: Any,
        config: LeaseConfig,
        *,
        on_started: Callable[[], None] = _noop,
        on_stopped: Callable[[], None] = _noop,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.api: Any = client.CoordinationV1Api(api_client)  # raw JSON in and out (`_preload_content`)
        self.config = config
        self.on_started, self.on_stopped = on_started, on_stopped
        self.clock, self.wall = clock, wall
        self.leading = threading.Event()
        self.transitions = 0  # times this elector became leader
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observed: Observed | None = None
        self._lease: Obj | None = None  # the Lease as last written or read by this elector

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, name=f"leader-{self.config.name}", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, *, release: bool = True, timeout: float = 10.0) -> None:
        """Stop electing; a leader gives the Lease up (unless `release` is False) after `on_stopped`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if release and self._lease is not None:
            self._release()

    def run(self) -> None:
        """The thread body: wait for the Lease, lead while renewing works, and again after losing it."""
        while not self._stop.is_set():
            if not self._try():
                self._stop.wait(self.config.retry_period)
                continue
            self._lead()

    # -- one attempt --------------------------------------------------------------------------------
    def _try(self) -> bool:
        """Read the Lease and write it for this candidate if it may; True when it now holds it."""
        cfg = self.config
        try:
            lease = self._read()
            self._observed = Observed.of(lease, now=self.clock(), before=self._observed)
            step = plan(lease, namespace=cfg.namespace, name=cfg.name, identity=cfg.identity,
                        lease_seconds=cfg.lease_seconds, observed=self._observed, now=self.clock(),
                        wall=self.wall())  # fmt: skip
            if step.action == "wait":
                self._lease = None
                return False
            assert step.body is not None
            self._lease = self._write(step.action, step.body)
            self._observed = Observed.of(self._lease, now=self.clock(), before=self._observed)
            return True
        except ApiException as exc:
            if exc.status != 409:  # a conflict is the normal outcome of a race: the other one won
                log.warning("lease %s/%s: HTTP %s %s", cfg.namespace, cfg.name, exc.status, exc.reason)
            return False
        except Exception as exc:  # the API server unreachable, a malformed answer: try again later
            log.warning("lease %s/%s: %s: %s", cfg.namespace, cfg.name, type(exc).__name__, exc)
            return False

    def _lead(self) -> None:
        cfg = self.config
        self.leading.set()
        self.transitions += 1
        log.info("lease %s/%s: %s is the leader", cfg.namespace, cfg.name, cfg.identity)
        self._callback(self.on_started)
        renewed = self.clock()
        while not self._stop.wait(cfg.retry_period):
            if self._try():
                renewed = self.clock()
            elif self._lease is None and self._observed is not None and self._held_by_other():
                log.warning("lease %s/%s: taken over by another replica", cfg.namespace, cfg.name)
                break
            elif self.clock() - renewed >= cfg.renew_deadline:
                log.warning("lease %s/%s: not renewed for %.0fs; no longer leading", cfg.namespace, cfg.name,
                            cfg.renew_deadline)
                break
        self.leading.clear()
        self._callback(self.on_stopped)

    def _held_by_other(self) -> bool:
        assert self._observed is not None
        holder = json.loads(self._observed.spec).get("holderIdentity") or ""
        return bool(holder) and holder != self.config.identity

    def _callback(self, callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception:  # a failing callback must not end the election
            log.exception("lease %s/%s: callback failed", self.config.namespace, self.config.name)

    # -- the API --------------------------------------------------------------------------------------
    def _read(self) -> Obj | None:
        try:
            answer = self.api.read_namespaced_lease(self.config.name, self.config.namespace,
                                                    _preload_content=False, _request_timeout=(5, 10))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        found: Obj = json.loads(answer.data)
        return found

    def _write(self, action: str, body: Obj) -> Obj:
        cfg, options = self.config, {"_preload_content": False, "_request_timeout": (5, 10)}
        if action == "create":
            answer = self.api.create_namespaced_lease(cfg.namespace, body, **options)
        else:
            answer = self.api.replace_namespaced_lease(cfg.name, cfg.namespace, body, **options)
        written: Obj = json.loads(answer.data)
        return written

    def _release(self) -> None:
        lease = self._lease
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.config.identity:
            return
        try:
            self._write("replace", released(lease, wall=self.wall()))
            log.info("lease %s/%s: released by %s", self.config.namespace, self.config.name,
                     self.config.identity)
        except Exception as exc:  # it expires on its own within the lease duration
            log.warning("lease %s/%s: not released (%s)", self.config.namespace, self.config.name, exc)
        self._lease = None
