"""List+watch of one collection in a background thread, as raw dicts, the way client-go's reflector does it.

Why not `kubernetes.watch.Watch`: it retries a 410 with the same (expired) resourceVersion and hides
bookmarks and disconnects. Here the rules are explicit: list (in pages) and remember the list's
resourceVersion; watch from it with bookmarks; every event and bookmark advances the resourceVersion; a
clean end (the server's timeout) or a dropped connection resumes from the last resourceVersion; `410 Gone`
(history compacted) re-lists; any other failure re-lists after an exponential backoff with jitter.

Refinements for resources pod-tailor only reads in part:
- `optional`: a custom resource whose CRD may not be installed (VerticalPodAutoscalers, Gateway API
  routes). A 404 on the list means "not served": the collection counts as listed and empty, and the
  list is tried again every `absent_retry` seconds, so a CRD installed later is picked up.
- `forbidden_ok`: a collection a feature can do without (Nodes, ResourceQuotas): a 403 on the list
  (no RBAC for it) counts as not served, like an optional resource's 404, and `forbidden` says so.
- `keep`: what of an object is stored (the rest is dropped as it arrives): a controller that watches
  thousands of objects keeps the fields it reads, not their managedFields and status.
- `relevant`: what of an object a snapshot reads. A MODIFIED event that leaves it unchanged (an HPA's
  status, written every 15 s; a Service's load-balancer status) is stored without `on_change`, so the
  snapshot and the verdict cache built on it are not thrown away for nothing.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from webhook.cluster import metrics

__all__ = ["Backoff", "ListCall", "Watched", "without_status"]

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)
# A bound kubernetes client list method with its positional arguments applied, e.g.
# `functools.partial(core.list_namespaced_config_map, "pod-tailor")`; called with keyword options.
ListCall = Callable[..., Any]


class Backoff:
    """Exponential backoff with full jitter, reset after a success."""

    def __init__(self, *, initial: float = 0.5, cap: float = 30.0) -> None:
        self.initial, self.cap, self.attempt = initial, cap, 0

    def next_delay(self) -> float:
        delay = min(self.cap, self.initial * 2**self.attempt)
        self.attempt += 1
        return random.uniform(delay / 2, delay)

    def reset(self) -> None:
        self.attempt = 0


_BOOKKEEPING = ("resourceVersion", "managedFields", "generation", "creationTimestamp", "uid", "selfLink")


def without_status(obj: Obj) -> Hashable:
    """An object without its status and the metadata every write changes: the default `relevant`."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _BOOKKEEPING}
    rest = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
    return json.dumps([meta, rest], sort_keys=True, default=str)


def _not_served(exc: Exception) -> bool:
    """A 404 on the collection itself: the resource type is not served (its CRD is not installed)."""
    return getattr(exc, "status", None) == 404


class _GoneError(Exception):
    """The watch's resourceVersion is too old (410): only a fresh list helps."""


class _WatchError(Exception):
    """The server ended the watch with another error Status: re-list after a backoff."""


class Watched:
    """The current objects of one collection, kept up to date by `run()` until `stop` is set.

    `on_change` is called (from the watch thread) after the initial list, every re-list and every
    ADDED/MODIFIED/DELETED event; it should read `objects()` and rebuild whatever depends on them.
    """

    def __init__(
        self,
        resource: str,
        list_call: ListCall,
        *,
        on_change: Callable[[], None],
        stop: threading.Event,
        field_selector: str | None = None,
        watch_seconds: int = 300,
        page_size: int = 500,
        backoff: Backoff | None = None,
        optional: bool = False,
        absent_retry: float = 300.0,
        relevant: Callable[[Obj], Hashable] | None = without_status,
        on_failure: Callable[[str], None] | None = None,
        forbidden_ok: bool = False,
        keep: Callable[[Obj], Obj] | None = None,
    ) -> None:
        self.resource = resource
        self._keep = keep
        self._call = list_call
        self._on_change = on_change
        self._stop = stop
        self._field_selector = field_selector
        self._watch_seconds = max(1, watch_seconds)
        self._page_size = page_size
        self._backoff = backoff or Backoff()
        self._optional = optional
        self._absent_retry = absent_retry
        self._relevant = relevant
        self._on_failure = on_failure  # told each failed list or watch (for health reporting)
        self._forbidden_ok = forbidden_ok
        self.forbidden = False  # True while the list answers 403 (with `forbidden_ok`)
        self._lock = threading.Lock()
        self._objects: dict[Key, Obj] = {}
        self._response: Any = None
        self.resource_version: str | None = None
        self.synced = threading.Event()  # set after the first complete list
        self.connected = False  # a watch is open (the data is current up to the last event)
        self.last_error: str | None = None
        self.served = True  # False while an optional resource answers 404

    def objects(self) -> list[Obj]:
        with self._lock:
            return list(self._objects.values())

    def run(self) -> None:
        """The thread body: list, then watch and resume, until `stop` is set."""
        reason = "initial"
        while not self._stop.is_set():
            if self.resource_version is None:
                try:
                    self._list(reason)
                except Exception as exc:
                    if self._optional and _not_served(exc):
                        self._absent()
                        continue
                    if self._forbidden_ok and getattr(exc, "status", None) == 403:
                        self.forbidden = True
                        self._absent()
                        continue
                    self._failed("list", exc)
                    reason = "error"
                    continue
            try:
                self._watch()
                metrics.WATCH_RESTARTS.labels(self.resource, "timeout").inc()
            except _GoneError:
                log.info("%s: resourceVersion %s expired; re-listing", self.resource, self.resource_version)
                self.resource_version, reason = None, "gone"
            except _WatchError as exc:
                self._failed("watch", exc)
                self.resource_version, reason = None, "error"
            except Exception as exc:
                if self._stop.is_set():
                    break
                metrics.WATCH_RESTARTS.labels(self.resource, "disconnect").inc()
                self._failed("watch", exc)
            finally:
                self._set_connected(False)

    def _absent(self) -> None:
        """An optional resource that is not served: listed as empty, asked again later."""
        if self.served or not self.synced.is_set():
            why = "may not be listed (403)" if self.forbidden else "not served by this cluster"
            log.info("%s: %s; asking again every %.0fs", self.resource, why, self._absent_retry)
        self.served = False
        with self._lock:
            had = bool(self._objects)
            self._objects = {}
        first = not self.synced.is_set()
        self.synced.set()
        if first or had:
            self._on_change()
        self._stop.wait(self._absent_retry)

    def close(self) -> None:
        """Unblock a thread waiting on the watch stream (call after setting `stop`)."""
        response = self._response
        if response is not None:
            try:
                response.shutdown()
            except Exception:  # already closed or never connected: nothing to unblock
                log.debug("%s: closing the watch stream", self.resource, exc_info=True)

    # -- one list, one watch ------------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"_preload_content": False, "_request_timeout": (10, 60)}
        if self._field_selector:
            options["field_selector"] = self._field_selector
        return options

    def _list(self, reason: str) -> None:
        objects: dict[Key, Obj] = {}
        token: str | None = None
        while True:
            options = self._options() | {"limit": self._page_size}
            if token:
                options["_continue"] = token
            body = json.loads(self._call(**options).data)
            for item in body.get("items") or ():
                objects[_key(item)] = self._keep(item) if self._keep is not None else item
            token = (body.get("metadata") or {}).get("continue")
            if not token:
                break
        with self._lock:
            self._objects = objects
        self.served, self.forbidden = True, False
        self.resource_version = str(body["metadata"]["resourceVersion"])
        self._backoff.reset()
        metrics.WATCH_LISTS.labels(self.resource, reason).inc()
        log.info("%s: listed %d at resourceVersion %s", self.resource, len(objects), self.resource_version)
        self.synced.set()
        self._on_change()

    def _watch(self) -> None:
        options = self._options() | {
            "watch": True,
            "resource_version": self.resource_version,
            "allow_watch_bookmarks": True,
            "timeout_seconds": self._watch_seconds,
            # The server ends the stream after timeout_seconds; a silent socket past that is dead.
            "_request_timeout": (10, self._watch_seconds + 30),
        }
        response = self._call(**options)
        self._response = response
        try:
            if self._stop.is_set():  # `close()` ran before the stream existed
                return
            self._set_connected(True)
            self._consume(response)
        finally:
            self._response = None
            # Closed, not only released: a stream never read (stopped before `close()` could see it)
            # would go back to the pool still open, and the API server would keep the watch open
            # until its timeout (the refresher's shutdown race).
            response.close()
            response.release_conn()

    def _consume(self, lines: Iterable[bytes]) -> None:
        for line in lines:
            if self._stop.is_set():
                return
            if not line.strip():
                continue
            event = json.loads(line)
            kind, obj = event.get("type"), event.get("object") or {}
            metrics.WATCH_EVENTS.labels(self.resource, str(kind)).inc()
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise _GoneError(obj.get("message", ""))
                raise _WatchError(f"watch error {obj.get('code')}: {obj.get('message')}")
            self.resource_version = str(obj["metadata"]["resourceVersion"])
            if kind == "BOOKMARK":
                continue
            if self._keep is not None and kind != "DELETED":
                obj = self._keep(obj)
            with self._lock:
                if kind == "DELETED":
                    previous = self._objects.pop(_key(obj), None)
                    changed = previous is not None
                else:
                    previous = self._objects.get(_key(obj))
                    self._objects[_key(obj)] = obj
                    changed = (
                        previous is None
                        or self._relevant is None
                        or self._relevant(previous) != self._relevant(obj)
                    )
            self._backoff.reset()
            if changed:
                self._on_change()

    def _failed(self, what: str, exc: Exception) -> None:
        first_line = (str(exc).strip().splitlines() or [""])[0]
        self.last_error = f"{what}: {type(exc).__name__}: {first_line}"
        if self._on_failure is not None:
            try:
                self._on_failure(self.last_error)
            except Exception:  # reporting must not stop the retry
                log.exception("%s: reporting a failure", self.resource)
        delay = self._backoff.next_delay()
        log.warning("%s: %s; retrying in %.1fs", self.resource, self.last_error, delay)
        self._stop.wait(delay)

    def _set_connected(self, connected: bool) -> None:
        self.connected = connected
        metrics.WATCH_SYNCED.labels(self.resource).set(1 if connected else 0)


def _key(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")
