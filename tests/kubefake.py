"""A small fake Kubernetes API server for tests: real HTTP on loopback, the JSON the real one sends.

Why: our cluster adapters must be tested through the real `kubernetes` client and a real socket
(list, chunked watch streams, BOOKMARK, ERROR 410, dropped connections), never by patching our own
modules. The fake keeps one global resourceVersion counter and an event history like etcd does, so
watches resume from any resourceVersion still in history and get `410 Gone` once it is compacted.

Import it as `from kubefake import FakeKube` from a test package directly under tests/ (a directory
with an `__init__.py`, e.g. tests/cluster/, puts tests/ itself on sys.path under pytest's default
import mode). Usage::

    with FakeKube() as kube:                       # starts on a free 127.0.0.1 port
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        path = kube.write_kubeconfig(tmp_path / "kubeconfig")
        ...
        kube.bookmark(); kube.compact(); kube.drop_watches(); kube.delete("namespaces", "shop")

Any resource path works: core resources (namespaces, configmaps, limitranges, pods, secrets, ...) are
registered up front; `kube.register("/apis/pod-tailor.io/v1alpha1", "workloadprofiles", "WorkloadProfile")`
adds others (custom resources keep `apiVersion`/`kind` on list items, as the real server does).
Writes are logged in `kube.mutations` (method, path, body). `kube.serve_version(1, 35)` answers as that
version (discovery lists `pods/resize` from 1.33 unless `resize_served` is False); `with kube.lagging():`
holds watch events back, as a slow watch cache does.
Supported: GET (object, list with `limit`/`continue`, `labelSelector` equality, `fieldSelector` on
metadata.name/metadata.namespace), `watch=1` with `resourceVersion`, `allowWatchBookmarks`,
`timeoutSeconds`; POST (with `generateName` and `dryRun=All`), PUT (optimistic concurrency on
resourceVersion), PATCH (merge and JSON patch), DELETE; the Pod `resize` subresource of 1.33+
(in-place resize: only container cpu/memory may change, never the QoS class; the kubelet's answer,
set with `resize_outcome`, shows as the `PodResizePending`/`PodResizeInProgress` conditions);
ResourceQuota admission of Pod creates and resizes (the containers must state what a quota tracks,
`used` plus the Pod, or plus what a resize adds, must stay within `hard`; `status.used` is written as
the request is admitted, as the real plugin does; scopes BestEffort/NotBestEffort/Terminating/
NotTerminating and a PriorityClass scopeSelector); RBAC refusals (`kube.forbid`) of lists, watches
and the `pods/resize` subresource, with the API server's 403 message; `/version`; legacy
discovery (`/api`, `/apis`, `/api/v1`, ...) and an OpenAPI v3 index, enough for the real
`kubectl create --dry-run=server`.
Server-side apply (PATCH `application/apply-patch+yaml` with `fieldManager`, `force`): field ownership
per manager in `metadata.managedFields`, a 409 naming the fields another manager owns unless forced, a
manager's fields left out of its next apply removed. `kube.install_crd(crd)` serves a
CustomResourceDefinition's resource (its group appears in discovery only then; writes are validated
against its openAPIV3Schema, 422 when invalid) and `kube.uninstall_crd(crd)` takes it away again.
`FakeKube(garbage_collection=True)` deletes, as the garbage collector does, objects whose every
ownerReference names a deleted object.
`kube.add_mutating_webhook(entry, url=..., ca_file=...)` makes creates go through a real webhook over
HTTPS (rules, namespaceSelector, objectSelector, failurePolicy honoured; warnings become `Warning`
headers). `FakeKube(token="")` accepts any client (kubectl sends no bearer token over plain HTTP).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import random
import select
import socket
import ssl
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonpatch
import yaml
from kubernetes.utils import parse_quantity as _parse_quantity

from tests.reviews import ADMIN, KUBECTL_CREATE, Kind, admission_review

__all__ = ["FakeKube", "MutatingWebhook", "Resource", "selector_matches", "status_object", "write_kubeconfig"]

Obj = dict[str, Any]


@dataclass(frozen=True)
class Resource:
    prefix: str  # "/api/v1" or "/apis/<group>/<version>"
    plural: str
    kind: str
    namespaced: bool = True
    custom: bool = False  # custom resources keep apiVersion/kind on list items

    @property
    def api_version(self) -> str:
        return "v1" if self.prefix == "/api/v1" else self.prefix.removeprefix("/apis/")


_CORE = (
    Resource("/api/v1", "namespaces", "Namespace", namespaced=False),
    Resource("/api/v1", "configmaps", "ConfigMap"),
    Resource("/api/v1", "limitranges", "LimitRange"),
    Resource("/api/v1", "pods", "Pod"),
    Resource("/api/v1", "secrets", "Secret"),
    Resource("/api/v1", "services", "Service"),
    Resource("/api/v1", "events", "Event"),
    Resource("/api/v1", "nodes", "Node", namespaced=False),
    Resource("/api/v1", "resourcequotas", "ResourceQuota"),
    Resource("/apis/apps/v1", "deployments", "Deployment"),
    Resource("/apis/apps/v1", "replicasets", "ReplicaSet"),
    Resource("/apis/apps/v1", "statefulsets", "StatefulSet"),
    Resource("/apis/apps/v1", "daemonsets", "DaemonSet"),
    Resource("/apis/batch/v1", "jobs", "Job"),
    Resource("/apis/batch/v1", "cronjobs", "CronJob"),
    Resource("/apis/autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    Resource("/apis/networking.k8s.io/v1", "ingresses", "Ingress"),
    Resource("/apis/networking.k8s.io/v1", "ingressclasses", "IngressClass", namespaced=False),
    Resource("/apis/coordination.k8s.io/v1", "leases", "Lease"),
)
# The short names a 1.33 API server's discovery gives the built-in resources (`kubectl get deploy`).
SHORT_NAMES = {
    "namespaces": ("ns",), "configmaps": ("cm",), "limitranges": ("limits",), "pods": ("po",),
    "services": ("svc",), "events": ("ev",), "deployments": ("deploy",), "replicasets": ("rs",),
    "statefulsets": ("sts",), "daemonsets": ("ds",), "cronjobs": ("cj",),
    "horizontalpodautoscalers": ("hpa",), "ingresses": ("ing",),
}
# Custom resources (VerticalPodAutoscalers, Gateway API routes, Argo Rollouts) are not served until a
# test installs their CRD with `kube.register(...)`, as on a cluster without them: their paths 404.


_REASONS = {
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_object(code: int, reason: str, message: str, **details: Any) -> Obj:
    """The `Status` body the API server sends with errors (and inside a watch ERROR event)."""
    body: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


@dataclass
class _Event:
    rv: int
    type: str
    resource: Resource
    obj: Obj
    old: Obj | None = None  # the object before a MODIFIED event

    def seen_by(self, selector: _Filter) -> str | None:
        """The event type a watch with `selector` gets, as the API server's watch cache filters it: an
        object modified into the selector is ADDED for it, one modified out of it is DELETED."""
        now = selector.matches(self.resource, self.obj)
        before = self.old is not None and selector.matches(self.resource, self.old)
        if self.type != "MODIFIED" or now == before:
            return self.type if now else None
        return "ADDED" if now else "DELETED"


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels, matchExpressions) against labels; None/{} matches all."""
    if not selector:
        return True
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        if (
            (operator == "In" and not (present and labels[key] in values))
            or (operator == "NotIn" and present and labels[key] in values)
            or (operator == "Exists" and not present)
            or (operator == "DoesNotExist" and present)
        ):
            return False
    return True


@dataclass
class MutatingWebhook:
    entry: dict[str, Any]
    url: str
    ca_file: str

    @property
    def name(self) -> str:
        return str(self.entry.get("name", "webhook"))

    @property
    def failure_policy(self) -> str:
        return str(self.entry.get("failurePolicy", "Fail"))

    def intercepts(self, resource: Resource, operation: str) -> bool:
        group = (
            "" if resource.prefix == "/api/v1" else resource.prefix.removeprefix("/apis/").partition("/")[0]
        )
        return any(
            operation in rule.get("operations", ()) or "*" in rule.get("operations", ())
            for rule in self.entry.get("rules") or ()
            if resource.plural in rule.get("resources", ()) and group in rule.get("apiGroups", ())
        )

    def admit(self, resource: Resource, obj: Obj, *, dry_run: bool) -> tuple[Obj, list[str]]:
        """One AdmissionReview round trip over HTTPS (verified with the CA); returns the patched object."""
        group = (
            "" if resource.prefix == "/api/v1" else resource.prefix.removeprefix("/apis/").partition("/")[0]
        )
        kind = Kind(group, resource.api_version.rpartition("/")[2], resource.kind, resource.plural)
        # The fake names a `generateName` object before admission; the API server names it after.
        name = "" if (obj.get("metadata") or {}).get("generateName") else None
        review = admission_review(
            obj, kind=kind, name=name, dry_run=dry_run, user=ADMIN, options=KUBECTL_CREATE
        )
        timeout = float(self.entry.get("timeoutSeconds", 10))
        context = ssl.create_default_context(cafile=self.ca_file)
        request = urllib.request.Request(
            f"{self.url}?timeout={int(timeout)}s",
            data=json.dumps(review).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            response = json.loads(answer.read())["response"]
        if not response.get("allowed", False):
            raise RuntimeError(f"denied: {response.get('status')}")
        patched = obj
        if response.get("patch"):
            patched = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
        return patched, list(response.get("warnings") or ())


@dataclass
class _Filter:
    resource: Resource
    namespace: str | None  # None: all namespaces
    name: str | None  # from fieldSelector metadata.name
    labels: dict[str, str]  # labelSelector equality terms

    def matches(self, resource: Resource, obj: Obj) -> bool:
        if resource != self.resource:
            return False
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if self.name is not None and meta.get("name") != self.name:
            return False
        obj_labels = meta.get("labels") or {}
        return all(obj_labels.get(key) == value for key, value in self.labels.items())


@dataclass
class _Watch:
    filter: _Filter
    bookmarks: bool
    connection: socket.socket
    dropped: bool = False


@dataclass
class FakeKube:
    """The fake API server; a context manager. All public methods are thread-safe."""

    version: dict[str, str] = field(
        default_factory=lambda: {
            "major": "1",
            "minor": "30",
            "gitVersion": "v1.30.4",
            "gitCommit": "a51b3b711150f57ffc1f526a640ec058514ed596",
            "gitTreeState": "clean",
            "buildDate": "2024-08-14T19:04:55Z",
            "goVersion": "go1.22.5",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
    )
    token: str = "fake-token"
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path?query), in order
    # What the kubelet does with an accepted resize: "done" (applied at once), "InProgress",
    # "Deferred" or "Infeasible" (the PodResizePending reasons of 1.33).
    resize_outcome: str = "done"
    # Whether discovery lists `pods/resize` (from 1.33, unless the InPlacePodVerticalScaling gate is off).
    resize_served: bool = True
    # Every write as (method, path?query, body): what a controller changed, and nothing else.
    mutations: list[tuple[str, str, Any]] = field(default_factory=list)
    # Whether deleting an object deletes its dependents (ownerReferences), as kube-controller-manager's
    # garbage collector does in the background (here at once).
    garbage_collection: bool = False

    def __post_init__(self) -> None:
        self._resources: dict[tuple[str, str], Resource] = {(r.prefix, r.plural): r for r in _CORE}
        self._objects: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
        self._history: list[_Event] = []
        self._rv = 100
        self._compacted = 0  # watches from a resourceVersion below this get 410 Gone
        self._cond = threading.Condition()
        self._watches: list[_Watch] = []
        self._failures: list[tuple[str, int]] = []  # (path prefix, HTTP code), consumed in order
        self._webhooks: list[MutatingWebhook] = []
        self._server: ThreadingHTTPServer | None = None
        self._paused: list[_Event] | None = None  # events held back from the watches (see `lagging`)
        self.forbidden: set[str] = set()  # plurals the client may not list or watch (see `forbid`)
        self._schemas: dict[tuple[str, str], Obj] = {}  # (prefix, plural) -> a CRD's openAPIV3Schema
        self._validators: dict[tuple[str, str], Any] = {}  # made from the schemas when first needed
        # (prefix, plural, namespace, name) -> field path -> (manager, operation): server-side apply's
        # ownership, kept for objects written by an apply at least once.
        self._owners: dict[tuple[str, str, str, str], dict[tuple[str, ...], tuple[str, str]]] = {}

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeKube:
        server = _Server(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="kubefake", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self.drop_watches()
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeKube:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "FakeKube not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        return write_kubeconfig(path, server=self.url, token=self.token, namespace=namespace)

    # -- resources -------------------------------------------------------------------------------
    def register(self, prefix: str, plural: str, kind: str, *, namespaced: bool = True) -> Resource:
        resource = Resource(prefix, plural, kind, namespaced=namespaced, custom=True)
        with self._cond:
            self._resources[(prefix, plural)] = resource
        return resource

    def install_crd(self, crd: Mapping[str, Any]) -> list[Resource]:
        """Serve a CustomResourceDefinition (apiextensions.k8s.io/v1): every served version becomes a
        resource, in discovery from now on, its writes validated against the version's openAPIV3Schema."""
        spec = crd["spec"]
        names, namespaced = spec["names"], spec.get("scope", "Namespaced") == "Namespaced"
        installed = []
        for version in spec.get("versions") or ():
            if not version.get("served", True):
                continue
            prefix = f"/apis/{spec['group']}/{version['name']}"
            installed.append(self.register(prefix, names["plural"], names["kind"], namespaced=namespaced))
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            with self._cond:
                self._validators.pop((prefix, names["plural"]), None)
                if schema:
                    self._schemas[(prefix, names["plural"])] = copy.deepcopy(schema)
        return installed

    def uninstall_crd(self, crd: Mapping[str, Any]) -> None:
        """Stop serving the CRD's resources (their objects go with them, as when a CRD is deleted)."""
        spec = crd["spec"]
        for version in spec.get("versions") or ():
            prefix, plural = f"/apis/{spec['group']}/{version['name']}", spec["names"]["plural"]
            with self._cond:
                resource = self._resources.get((prefix, plural))
                if resource is None:
                    continue
                for namespace, name in list(self._objects.get((prefix, plural), {})):
                    self._remove(resource, namespace, name)
                del self._resources[(prefix, plural)]
                self._schemas.pop((prefix, plural), None)

    def resource(self, plural: str, prefix: str | None = None) -> Resource:
        with self._cond:
            for (res_prefix, res_plural), resource in self._resources.items():
                if res_plural == plural and prefix in (None, res_prefix):
                    return resource
        raise KeyError(plural)

    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._rv

    # -- state changes (each is one event in history) ------------------------------------------
    def put(self, obj: Mapping[str, Any], *, plural: str | None = None) -> Obj:
        """Create or replace an object (ADDED or MODIFIED); returns the stored copy with its new rv."""
        resource = self._resource_for(obj, plural)
        with self._cond:
            return self._store(resource, copy.deepcopy(dict(obj)))

    def delete(self, plural: str, name: str, *, namespace: str = "", prefix: str | None = None) -> Obj:
        resource = self.resource(plural, prefix)
        with self._cond:
            return self._remove(resource, namespace if resource.namespaced else "", name)

    def get(self, plural: str, name: str, *, namespace: str = "", prefix: str | None = None) -> Obj | None:
        resource = self.resource(plural, prefix)
        with self._cond:
            found = self._lookup(resource, namespace, name)
            return copy.deepcopy(found) if found else None

    def serve_version(self, major: int, minor: int, patch: int = 0) -> None:
        """Answer `/version` as a `major.minor.patch` API server does."""
        self.version = {**self.version, "major": str(major), "minor": str(minor),
                        "gitVersion": f"v{major}.{minor}.{patch}"}

    def forbid(self, plural: str, *, allowed: bool = False) -> None:
        """Lists and watches of `plural` (writes of a subresource: `"pods/resize"`) answer 403 as for a
        ServiceAccount without RBAC for it (`allowed=True` grants it again, as a ClusterRole applied
        later does)."""
        if allowed:
            self.forbidden.discard(plural)
        else:
            self.forbidden.add(plural)

    @contextlib.contextmanager
    def lagging(self) -> Iterator[None]:
        """Watches fall behind: changes made inside are stored (and answered to GETs and writes) but
        reach the open watches only at the end, as a slow watch cache delivers them."""
        with self._cond:
            self._paused = []
        try:
            yield
        finally:
            with self._cond:
                held, self._paused = self._paused or [], None
                for event in held:
                    self._publish(event)
                self._cond.notify_all()

    def bookmark(self) -> None:
        """Send a BOOKMARK with the current resourceVersion to every watch that asked for them."""
        with self._cond:
            for watch in list(self._watches):
                if watch.bookmarks:
                    self._send_event(watch, "BOOKMARK", self._bookmark_object(watch.filter.resource))

    def compact(self) -> int:
        """Forget history up to now: watches from an older resourceVersion now get `410 Gone`."""
        with self._cond:
            self._rv += 1  # the compaction itself moves the revision, as etcd's does
            self._compacted = self._rv
            self._history.clear()
            return self._compacted

    def expire_watches(self) -> None:
        """Send ERROR 410 to every open watch (the server's cache lost their resourceVersion)."""
        with self._cond:
            for watch in list(self._watches):
                self._send_event(watch, "ERROR", _gone(self._rv, self._rv))

    def error_watches(self, code: int = 500, message: str = "etcdserver: request timed out") -> None:
        """Send an ERROR event with another Status to every open watch (then the stream ends)."""
        with self._cond:
            for watch in list(self._watches):
                self._send_event(
                    watch, "ERROR", status_object(code, _REASONS.get(code, "InternalError"), message)
                )
                watch.dropped = True  # the real server closes the stream after an ERROR event
                with contextlib.suppress(OSError):
                    watch.connection.sendall(b"0\r\n\r\n")
                self._forget(watch)
            self._cond.notify_all()

    def drop_watches(self) -> int:
        """Abruptly close every open watch connection (no terminating chunk); returns how many."""
        with self._cond:
            dropped = list(self._watches)
            for watch in dropped:
                watch.dropped = True
                with contextlib.suppress(OSError):
                    watch.connection.shutdown(socket.SHUT_RDWR)
            self._watches.clear()
            self._cond.notify_all()
            return len(dropped)

    def add_mutating_webhook(self, entry: Mapping[str, Any], *, url: str, ca_file: str | Path) -> None:
        """Call a real webhook on CREATE, like the API server: `entry` is one `webhooks[]` item of a
        MutatingWebhookConfiguration (rules, namespaceSelector, objectSelector, failurePolicy are
        honoured); `url` replaces its clientConfig (the Service is not reachable from a test)."""
        with self._cond:
            self._webhooks.append(MutatingWebhook(dict(entry), url, str(ca_file)))

    def fail_next(self, path_prefix: str, code: int = 500, *, times: int = 1) -> None:
        """The next `times` requests whose path starts with `path_prefix` get an error Status."""
        with self._cond:
            self._failures.extend([(path_prefix, code)] * times)

    def open_watches(self, plural: str | None = None) -> int:
        with self._cond:
            return sum(1 for w in self._watches if plural in (None, w.filter.resource.plural))

    def wait_for_watches(self, count: int, *, plural: str | None = None, timeout: float = 5.0) -> None:
        """Block until at least `count` watches (of `plural`) are open; a test synchronisation aid."""
        deadline = time.monotonic() + timeout
        while self.open_watches(plural) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {count} open watches of {plural or 'any'}")
            time.sleep(0.01)

    def requests_to(self, fragment: str) -> list[str]:
        with self._cond:
            return [path for _, path in self.requests if fragment in path]

    # -- internals (callers hold self._cond) ------------------------------------------------------
    def _resource_for(self, obj: Mapping[str, Any], plural: str | None) -> Resource:
        api_version, kind = obj.get("apiVersion", "v1"), obj.get("kind")
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        with self._cond:
            for resource in self._resources.values():
                if resource.prefix == prefix and (resource.plural == plural or resource.kind == kind):
                    return resource
        raise KeyError(f"unregistered resource {api_version} {kind}")

    def _store(self, resource: Resource, obj: Obj) -> Obj:
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace", "") if resource.namespaced else ""
        if resource.namespaced:
            meta["namespace"] = namespace = namespace or "default"
        key = (namespace, meta["name"])
        bucket = self._objects.setdefault((resource.prefix, resource.plural), {})
        old = bucket.get(key)
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        meta["uid"] = old["metadata"]["uid"] if old else str(uuid.uuid4())
        meta["creationTimestamp"] = old["metadata"]["creationTimestamp"] if old else _now()
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        if resource.plural == "namespaces" and resource.prefix == "/api/v1":
            # As the real server does: the immutable name label (1.21+), finalizer and phase.
            meta["labels"] = {**(meta.get("labels") or {}), "kubernetes.io/metadata.name": meta["name"]}
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
        if self._owners:
            self._managed_fields(resource, obj)
        bucket[key] = obj
        self._publish(_Event(self._rv, "MODIFIED" if old else "ADDED", resource, copy.deepcopy(obj),
                             copy.deepcopy(old) if old else None))
        return copy.deepcopy(obj)

    def _remove(self, resource: Resource, namespace: str, name: str) -> Obj:
        bucket = self._objects.get((resource.prefix, resource.plural), {})
        obj = bucket.pop((namespace, name))
        self._owners.pop((resource.prefix, resource.plural, namespace, name), None)
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        self._publish(_Event(self._rv, "DELETED", resource, copy.deepcopy(obj)))
        if self.garbage_collection:
            self._collect_dependents(str(obj["metadata"].get("uid") or ""))
        return obj

    def _collect_dependents(self, uid: str) -> None:
        """Delete what `uid` owned and no other live object owns (background cascading deletion)."""
        if not uid:
            return
        live = {
            str(o["metadata"].get("uid")) for bucket in self._objects.values() for o in bucket.values()
        }
        for (prefix, plural), bucket in list(self._objects.items()):
            for (namespace, name), obj in list(bucket.items()):
                owners = {str(r.get("uid")) for r in obj["metadata"].get("ownerReferences") or ()}
                if uid in owners and not owners & live and (namespace, name) in bucket:
                    self._remove(self._resources[(prefix, plural)], namespace, name)

    def _invalid(self, resource: Resource, obj: Obj) -> str | None:
        """The API server's answer to an object its CRD's schema refuses (None: valid or no schema)."""
        schema = self._schemas.get((resource.prefix, resource.plural))
        if schema is None:
            return None
        validator = self._validators.get((resource.prefix, resource.plural))
        if validator is None:
            import jsonschema  # type: ignore[import-untyped]

            validator = jsonschema.Draft7Validator(schema)
            self._validators[(resource.prefix, resource.plural)] = validator
        errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.path))
        if not errors:
            return None
        parts = (str(p) if isinstance(p, str) else f"[{p}]" for p in errors[0].path)
        where = ".".join(parts).replace(".[", "[")
        group = resource.api_version.partition("/")[0]
        name = (obj.get("metadata") or {}).get("name")
        return f'{resource.kind}.{group} "{name}" is invalid: {where or "<root>"}: {errors[0].message}'

    def _track_update(self, resource: Resource, old: Obj | None, new: Obj, manager: str) -> None:
        """A non-apply write to an object under server-side apply: the fields it changed are `manager`'s."""
        meta = new.get("metadata") or {}
        key = (resource.prefix, resource.plural, meta.get("namespace", "") or "", str(meta.get("name")))
        owners = self._owners.get(key)
        if owners is None:
            return
        before = dict(_leaves(old or {}))
        for path, value in _leaves(new):
            if before.get(path, _MISSING) != value:
                owners[path] = (manager, "Update")
        now = {path for path, _ in _leaves(new)}
        for path in [p for p in owners if p not in now]:
            del owners[path]

    def _managed_fields(self, resource: Resource, obj: Obj) -> None:
        meta = obj["metadata"]
        key = (resource.prefix, resource.plural, meta.get("namespace", "") or "", str(meta.get("name")))
        owners = self._owners.get(key)
        if owners is None:
            meta.pop("managedFields", None)
            return
        grouped: dict[tuple[str, str], Obj] = {}
        for path, who in sorted(owners.items()):
            node = grouped.setdefault(who, {})
            for part in path:
                node = node.setdefault(f"f:{part}", {})
        meta["managedFields"] = [
            {"manager": manager, "operation": operation, "apiVersion": resource.api_version,
             "time": _now(), "fieldsType": "FieldsV1", "fieldsV1": fields}
            for (manager, operation), fields in grouped.items()
        ]  # fmt: skip

    def _apply(
        self, resource: Resource, namespace: str, name: str, body: Obj, *, manager: str, force: bool
    ) -> tuple[int, Obj]:
        """Server-side apply of `body` by `manager`: (HTTP code, stored object or Status)."""
        current = self._lookup(resource, namespace, name)
        meta = body.get("metadata") or {}
        if meta.get("name") not in (None, name):
            return 400, status_object(400, "BadRequest", "the name of the object does not match the URL")
        wanted = meta.get("resourceVersion")
        if current is not None and wanted and wanted != current["metadata"]["resourceVersion"]:
            return 409, status_object(409, "Conflict", f'Operation cannot be fulfilled on {resource.plural} '
                                      f'"{name}": the object has been modified; please apply your changes '
                                      "to the latest version and try again", name=name, kind=resource.plural)
        key = (resource.prefix, resource.plural, namespace, name)
        if current is not None and key not in self._owners:
            self._owners[key] = {path: ("before-first-apply", "Update") for path, _ in _leaves(current)}
        owners = self._owners.setdefault(key, {})
        applied = dict(_leaves(body))
        base = copy.deepcopy(current) if current is not None else {}
        conflicts = sorted({
            who for path, value in applied.items() for owned, who in owners.items()
            if who[0] != manager and _overlap(path, owned) and _get(base, path) != value
        })  # fmt: skip
        if conflicts and not force:
            fields = sorted({".".join(p) for p, v in applied.items() for o, w in owners.items()
                             if w[0] != manager and _overlap(p, o) and _get(base, p) != v})  # fmt: skip
            causes = [{"reason": "FieldManagerConflict", "field": f".{f}",
                       "message": f'conflict with "{conflicts[0][0]}": .{f}'} for f in fields]  # fmt: skip
            text = f"Apply failed with {len(fields)} conflict(s): " + ", ".join(c["message"] for c in causes)
            return 409, status_object(409, "Conflict", text, name=name, kind=resource.plural, causes=causes)
        mine = [path for path, who in owners.items() if who == (manager, "Apply")]
        for path in mine:
            del owners[path]
            if path not in applied and not any(_overlap(path, o) for o in owners):
                _drop(base, path)
        for path, value in applied.items():
            for owned in [o for o in owners if _overlap(path, o)]:
                del owners[owned]
            owners[path] = (manager, "Apply")
            _put(base, path, copy.deepcopy(value))
        base.setdefault("metadata", {})["name"] = name
        if namespace:
            base["metadata"]["namespace"] = namespace
        problem = self._invalid(resource, base)
        if problem is not None:
            if current is None:
                del self._owners[key]
            return 422, status_object(422, "Invalid", problem, name=name, kind=resource.kind)
        return (201 if current is None else 200), self._store(resource, base)

    def _publish(self, event: _Event) -> None:
        if self._paused is not None:
            self._paused.append(event)
            return
        self._history.append(event)
        for watch in list(self._watches):
            seen = event.seen_by(watch.filter)
            if seen is not None:
                self._send_event(watch, seen, event.obj)

    def _send_event(self, watch: _Watch, type_: str, obj: Obj) -> None:
        line = json.dumps({"type": type_, "object": obj}, separators=(",", ":")).encode() + b"\n"
        try:
            watch.connection.sendall(b"%x\r\n%s\r\n" % (len(line), line))
        except OSError:
            watch.dropped = True
            self._forget(watch)

    def _quota_admission(self, pod: Obj, *, before: Obj | None = None, dry_run: bool = False) -> str | None:
        """The ResourceQuota plugin on a Pod create, or on a resize from `before` (call with `_cond`
        held): why it is refused, or None after charging every quota that counts it (a new
        `status.used`, published like any write; a dry run is judged but charges nothing). A resize is
        charged what it adds; one that adds nothing passes, as the real plugin's zero delta does."""
        namespace = pod["metadata"].get("namespace", "default")
        quotas = [q for (ns, _), q in sorted(self._objects.get(("/api/v1", "resourcequotas"), {}).items())
                  if ns == namespace and _quota_counts(q, pod)]
        usage = _pod_quota_usage(pod)
        if before is not None:
            prior = _pod_quota_usage(before)
            usage = {k: max(v - prior.get(k, 0), 0) for k, v in usage.items()}
        charged: list[tuple[Obj, dict[str, Any]]] = []
        for quota in quotas:
            hard = {k: parse_quantity(v) for k, v in ((quota.get("spec") or {}).get("hard") or {}).items()}
            missing = _missing_for_quota(pod, hard)
            if missing:
                return f"failed quota: {quota['metadata']['name']}: must specify {missing}"
            if before is not None and not any(usage.get(k) for k in hard):
                continue
            used = {k: parse_quantity(v) for k, v in ((quota.get("status") or {}).get("used") or {}).items()}
            over = [k for k in hard if k in usage and used.get(k, 0) + usage[k] > hard[k]]
            if over:
                return (f"exceeded quota: {quota['metadata']['name']}, requested: {_shown(over, usage)}, "
                        f"used: {_shown(over, used)}, limited: {_shown(over, hard)}")
            charged.append((quota, {k: used.get(k, 0) + usage.get(k, 0) for k in hard}))
        resource = self._resources[("/api/v1", "resourcequotas")]
        for quota, used_after in [] if dry_run else charged:
            updated = copy.deepcopy(quota)
            updated["status"] = {"hard": dict(quota["spec"]["hard"]),
                                 "used": {k: _quantity(k, v) for k, v in used_after.items()}}
            self._store(resource, updated)
        return None

    def _admission_for(self, resource: Resource, obj: Obj) -> list[MutatingWebhook]:
        with self._cond:
            hooks = list(self._webhooks)
            namespace = (obj.get("metadata") or {}).get("namespace", "")
            ns_obj = self._objects.get(("/api/v1", "namespaces"), {}).get(("", namespace)) or {}
            ns_labels = dict((ns_obj.get("metadata") or {}).get("labels") or {})
        ns_labels.setdefault("kubernetes.io/metadata.name", namespace)
        obj_labels = (obj.get("metadata") or {}).get("labels") or {}
        return [
            hook
            for hook in hooks
            if hook.intercepts(resource, "CREATE")
            and selector_matches(hook.entry.get("namespaceSelector"), ns_labels)
            and selector_matches(hook.entry.get("objectSelector"), obj_labels)
        ]

    def _discovery(self, path: str) -> Obj | None:
        """Legacy discovery and a minimal OpenAPI v3 index, as much as kubectl needs to map kinds."""
        with self._cond:
            resources = list(self._resources.values())
        prefixes = sorted({r.prefix for r in resources})
        groups: dict[str, list[str]] = {}
        for prefix in prefixes:
            if prefix.startswith("/apis/"):
                group, _, version = prefix.removeprefix("/apis/").partition("/")
                groups.setdefault(group, []).append(version)
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [
                    {
                        "name": group,
                        "versions": [{"groupVersion": f"{group}/{v}", "version": v} for v in versions],
                        "preferredVersion": {
                            "groupVersion": f"{group}/{versions[0]}",
                            "version": versions[0],
                        },
                    }
                    for group, versions in sorted(groups.items())
                ],
            }
        if path in prefixes:
            verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": path.removeprefix("/api/").removeprefix("/apis/"),
                "resources": [
                    {"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                     "kind": r.kind, "verbs": verbs,
                     **({"shortNames": list(SHORT_NAMES[r.plural])} if r.plural in SHORT_NAMES else {})}
                    for r in resources
                    if r.prefix == path
                ] + self._subresources(path),
            }  # fmt: skip
        if path == "/openapi/v3":
            return {
                "paths": {p.lstrip("/"): {"serverRelativeURL": f"/openapi/v3{p}?hash=0"} for p in prefixes}
            }
        if path.startswith("/openapi/v3/"):
            prefix = path.removeprefix("/openapi/v3")
            return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.30.4"}, "paths": {
                # kubectl looks for fieldValidation among the PATCH parameters of the kind's item path.
                (f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{prefix}/{r.plural}")
                + "/{name}": {
                    "patch": {
                        "parameters": [{"name": name, "in": "query", "schema": {"type": "string"}}
                                       for name in ("fieldValidation", "dryRun")],
                        "x-kubernetes-action": "patch",
                        "x-kubernetes-group-version-kind": {
                            "group": prefix.removeprefix("/api/v1").removeprefix("/apis/").partition("/")[0],
                            "version": r.api_version.rpartition("/")[2], "kind": r.kind},
                    }
                }
                for r in resources if r.prefix == prefix
            }}  # fmt: skip
        return None

    def _subresources(self, path: str) -> list[Obj]:
        """`pods/resize` in /api/v1 discovery, as a 1.33+ server with in-place resize on lists it."""
        minor = int("".join(ch for ch in self.version.get("minor", "0") if ch.isdigit()) or 0)
        version = (int(self.version.get("major", "1")), minor)
        if path != "/api/v1" or not self.resize_served or version < (1, 33):
            return []
        return [{"name": "pods/resize", "singularName": "", "namespaced": True, "kind": "Pod",
                 "verbs": ["get", "patch", "update"]}]

    def _forget(self, watch: _Watch) -> None:
        if watch in self._watches:
            self._watches.remove(watch)

    def _bookmark_object(self, resource: Resource) -> Obj:
        # The real server sends an otherwise empty object of the watched kind.
        return {
            "kind": resource.kind,
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": str(self._rv), "creationTimestamp": None},
        }

    def _lookup(self, resource: Resource, namespace: str, name: str) -> Obj | None:
        return self._objects.get((resource.prefix, resource.plural), {}).get((namespace, name))

    def _list(self, selector: _Filter, *, copy: bool = True) -> list[Obj]:
        bucket = self._objects.get((selector.resource.prefix, selector.resource.plural), {})
        found = [obj for _, obj in sorted(bucket.items()) if selector.matches(selector.resource, obj)]
        return [_copy(obj) for obj in found] if copy else found


_copy = copy.deepcopy
_MISSING = object()
_NOT_APPLIED = ("resourceVersion", "managedFields", "uid", "creationTimestamp", "generation")


def _leaves(obj: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """The fields server-side apply tracks: map entries down to leaves (lists are atomic)."""
    if isinstance(obj, dict) and (obj or not path):
        for key, value in obj.items():
            if (path == () and key in ("apiVersion", "kind", "status")) or (
                path == ("metadata",) and key in (*_NOT_APPLIED, "name", "namespace")
            ):
                continue
            yield from _leaves(value, (*path, str(key)))
    elif path:
        yield path, obj


def _overlap(one: tuple[str, ...], other: tuple[str, ...]) -> bool:
    shorter = min(len(one), len(other))
    return one[:shorter] == other[:shorter]


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _put(obj: Obj, path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        if not isinstance(obj.get(part), dict):
            obj[part] = {}
        obj = obj[part]
    obj[path[-1]] = value


def _drop(obj: Obj, path: tuple[str, ...]) -> None:
    """Remove a field, and the maps it leaves empty."""
    parents = [obj]
    for part in path[:-1]:
        child = parents[-1].get(part)
        if not isinstance(child, dict):
            return
        parents.append(child)
    parents[-1].pop(path[-1], None)
    for depth in range(len(path) - 1, 0, -1):
        if parents[depth] == {}:
            parents[depth - 1].pop(path[depth - 1], None)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _gone(requested: int, current: int) -> Obj:
    return status_object(410, "Expired", f"too old resource version: {requested} ({current})")


def _selectors(query: dict[str, list[str]]) -> tuple[str | None, dict[str, str]]:
    name = None
    for term in filter(None, ",".join(query.get("fieldSelector", [])).split(",")):
        key, _, value = term.partition("=")
        if key == "metadata.name":
            name = value.lstrip("=")
    labels = {}
    for term in filter(None, ",".join(query.get("labelSelector", [])).split(",")):
        key, _, value = term.partition("=")
        labels[key.strip()] = value.lstrip("=").strip()
    return name, labels


def _field_namespace(query: dict[str, list[str]]) -> str | None:
    for term in filter(None, ",".join(query.get("fieldSelector", [])).split(",")):
        key, _, value = term.partition("=")
        if key == "metadata.namespace":
            return value.lstrip("=")
    return None


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # a controller's burst of creates is not refused at the socket

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops its connection (a pool closing an idle one) is not an error to print."""
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _manager(query: dict[str, list[str]]) -> str:
    """The field manager of a non-apply write: `fieldManager`, else what the server derives (a name)."""
    return query.get("fieldManager", [""])[0] or "unknown"


def _handler_for(kube: FakeKube) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        fake = kube

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeKube

    def log_message(self, format: str, *args: Any) -> None:
        return

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as two writes: without this, Nagle's algorithm holds the body until the
        # client's delayed ACK (40 ms on Linux) on every request that follows another on the connection.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # -- plumbing --------------------------------------------------------------------------------
    def _send_json(self, code: int, body: Obj, *, warnings: list[str] = ()) -> None:  # type: ignore[assignment]
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        for warning in warnings:
            self.send_header("Warning", '299 - "' + warning.replace('"', "'") + '"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, reason: str, message: str, **details: Any) -> None:
        self._send_json(code, status_object(code, reason, message, **details))

    def _forbidden(self, verb: str, resource: Resource, namespace: str | None, *, name: str = "",
                   subresource: str = "") -> None:  # fmt: skip
        """RBAC's 403, worded as the API server words it (its `forbiddenMessage`, in `NewForbidden`)."""
        group = resource.api_version.rpartition("/")[0]
        qualified = f"{resource.plural}.{group}" if group else resource.plural
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        who = "system:serviceaccount:pod-tailor:pod-tailor"
        target = f"{resource.plural}/{subresource}" if subresource else resource.plural
        why = f'User "{who}" cannot {verb} resource "{target}" in API group "{group}" {scope}'
        named = f'{qualified} "{name}"' if name else qualified
        details = {"name": name} if name else {}
        message = f"{named} is forbidden: {why}"
        self._error(403, "Forbidden", message, **details, kind=resource.plural, group=group)

    def _not_found(self, resource: Resource, name: str) -> None:
        self._error(404, "NotFound", f'{resource.plural} "{name}" not found', name=name, kind=resource.plural)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) or b"null"
        try:
            body = json.loads(raw)
        except ValueError:  # an apply patch may be YAML
            body = yaml.safe_load(raw)
        with self.fake._cond:
            self.fake.mutations.append((self.command, self.path, copy.deepcopy(body)))
        return body

    def _route(self) -> tuple[Resource | None, str | None, str | None, dict[str, list[str]]]:
        """Map a path to (resource, namespace or None for all, object name or None, query)."""
        split = urlsplit(self.path)
        query = parse_qs(split.query)
        parts = [p for p in split.path.split("/") if p]
        prefix_len = 2 if parts[:1] == ["api"] else 3
        prefix, rest = "/" + "/".join(parts[:prefix_len]), parts[prefix_len:]
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        resources = self.fake._resources
        if not rest or (prefix, rest[0]) not in resources or len(rest) > 2:
            return None, None, None, query
        resource = resources[(prefix, rest[0])]
        if namespace is None:
            namespace = _field_namespace(query)
        return resource, namespace, rest[1] if len(rest) == 2 else None, query

    def _pre(self, method: str) -> bool:
        """Record the request, apply auth and injected failures; False if already answered."""
        fake = self.fake
        with fake._cond:
            fake.requests.append((method, self.path))
            failure = next((f for f in fake._failures if self.path.startswith(f[0])), None)
            if failure:
                fake._failures.remove(failure)
        if failure or (fake.token and self.headers.get("Authorization") != f"Bearer {fake.token}"):
            # Answered before the body is read: read it now, or it would be taken for the next request on
            # this keep-alive connection.
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if fake.token and self.headers.get("Authorization") != f"Bearer {fake.token}":
            self._error(401, "Unauthorized", "Unauthorized")
            return False
        if failure:
            reason = _REASONS.get(failure[1], "InternalError")
            self._error(failure[1], reason, f"injected failure: {reason}")
            return False
        return True

    # -- verbs -------------------------------------------------------------------------------------
    def do_GET(self) -> None:
        if not self._pre("GET"):
            return
        if urlsplit(self.path).path.rstrip("/") == "/version":
            self._send_json(200, self.fake.version)
            return
        discovery = self.fake._discovery(urlsplit(self.path).path.rstrip("/"))
        if discovery is not None:
            self._send_json(200, discovery)
            return
        resource, namespace, name, query = self._route()
        if resource is None:
            self._error(404, "NotFound", "the server could not find the requested resource")
            return
        if name is not None:
            with self.fake._cond:
                found = self.fake._lookup(resource, namespace or "", name)
                found = copy.deepcopy(found) if found else None
            if found is None:
                self._not_found(resource, name)
            else:
                self._send_json(200, found)
            return
        verb = "watch" if query.get("watch", ["false"])[0] in ("1", "true") else "list"
        if resource.plural in self.fake.forbidden:
            self._forbidden(verb, resource, namespace)
            return
        if verb == "watch":
            self._watch(resource, namespace, query)
        else:
            self._list_response(resource, namespace, query)

    def _list_response(self, resource: Resource, namespace: str | None, query: dict[str, list[str]]) -> None:
        name, labels = _selectors(query)
        start = int(query.get("continue", ["0"])[0] or 0)
        limit = int(query.get("limit", ["0"])[0] or 0)
        with self.fake._cond:  # only the page is copied: listing 10,000 objects in pages stays linear
            items, rv = self.fake._list(_Filter(resource, namespace, name, labels), copy=False), self.fake._rv
            page = copy.deepcopy(items[start : start + limit] if limit else items[start:])
        if not resource.custom:
            for item in page:
                item.pop("apiVersion", None)
                item.pop("kind", None)
        metadata: Obj = {"resourceVersion": str(rv)}
        if limit and start + limit < len(items):
            metadata["continue"] = str(start + limit)
            metadata["remainingItemCount"] = len(items) - start - limit
        self._send_json(
            200,
            {
                "kind": f"{resource.kind}List",
                "apiVersion": resource.api_version,
                "metadata": metadata,
                "items": page,
            },
        )

    def _watch(self, resource: Resource, namespace: str | None, query: dict[str, list[str]]) -> None:
        fake = self.fake
        name, labels = _selectors(query)
        raw_rv = query.get("resourceVersion", [""])[0]
        timeout = float(query.get("timeoutSeconds", ["0"])[0] or 0) or None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.end_headers()
        self.wfile.flush()
        selector = _Filter(resource, namespace, name, labels)
        watch = _Watch(selector, query.get("allowWatchBookmarks", [""])[0] == "true", self.connection)
        with fake._cond:
            if raw_rv in ("", "0"):
                # No resourceVersion: synthetic ADDED events for the current state, then live changes.
                for obj in fake._list(selector):
                    fake._send_event(watch, "ADDED", obj)
            elif int(raw_rv) < fake._compacted:
                fake._send_event(watch, "ERROR", _gone(int(raw_rv), fake._rv))
                self._end_stream()
                return
            else:
                for event in fake._history:
                    seen = event.seen_by(selector) if event.rv > int(raw_rv) else None
                    if seen is not None:
                        fake._send_event(watch, seen, event.obj)
            fake._watches.append(watch)
            deadline = None if timeout is None else time.monotonic() + timeout
            while not watch.dropped and watch in fake._watches:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    fake._forget(watch)
                    break
                fake._cond.wait(min(remaining, 0.1) if remaining is not None else 0.1)
                if _peer_closed(self.connection):
                    fake._forget(watch)
                    watch.dropped = True
        if not watch.dropped:
            self._end_stream()
        else:
            self.close_connection = True

    def _end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def do_POST(self) -> None:
        if not self._pre("POST"):
            return
        resource, namespace, name, query = self._route()
        body = self._body()
        if resource is None or name is not None or not isinstance(body, dict):
            self._error(405 if resource else 404, "MethodNotAllowed", "cannot POST here")
            return
        meta = body.setdefault("metadata", {})
        if resource.namespaced:
            meta["namespace"] = namespace or meta.get("namespace") or "default"
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
        dry_run = query.get("dryRun", [""])[0] == "All"
        # Mutating admission, as the API server does it: webhooks are called over HTTPS, their JSON
        # patches applied in order, their warnings returned as `Warning` headers.
        warnings: list[str] = []
        for webhook in self.fake._admission_for(resource, body):
            try:
                body, added = webhook.admit(resource, body, dry_run=dry_run)
            except Exception as exc:  # failurePolicy Ignore: the object goes on unchanged
                if webhook.failure_policy == "Fail":
                    self._error(500, "InternalError", f'failed calling webhook "{webhook.name}": {exc}')
                    return
                continue
            warnings += added
        with self.fake._cond:
            bucket = self.fake._objects.get((resource.prefix, resource.plural), {})
            if (meta.get("namespace", ""), meta.get("name")) in bucket:
                self._error(
                    409,
                    "AlreadyExists",
                    f'{resource.plural} "{meta.get("name")}" already exists',
                    name=meta.get("name"),
                    kind=resource.plural,
                )
                return
            problem = self.fake._invalid(resource, body)
            if problem is not None:
                self._error(422, "Invalid", problem, name=meta.get("name"), kind=resource.kind)
                return
            refused = self.fake._quota_admission(body, dry_run=dry_run) if resource.plural == "pods" else None
            if refused is not None:
                self._error(403, "Forbidden", f'pods "{meta.get("name")}" is forbidden: {refused}',
                            name=meta.get("name"), kind="pods")
                return
            if dry_run:
                stored = copy.deepcopy(body)
                stored["metadata"] |= {"uid": str(uuid.uuid4()), "creationTimestamp": _now()}
                stored["apiVersion"], stored["kind"] = resource.api_version, resource.kind
            else:
                stored = self.fake._store(resource, body)
        self._send_json(201, stored, warnings=warnings)

    def do_PUT(self) -> None:
        if not self._pre("PUT"):
            return
        resource, namespace, name, _ = self._route()
        body = self._body()
        if resource is None or name is None or not isinstance(body, dict):
            self._error(404, "NotFound", "the server could not find the requested resource")
            return
        meta = body.setdefault("metadata", {})
        if resource.namespaced:
            meta["namespace"] = namespace or "default"
        with self.fake._cond:
            current = self.fake._lookup(resource, namespace or "", name)
            wanted = meta.get("resourceVersion")
            if current is not None and wanted and wanted != current["metadata"]["resourceVersion"]:
                self._error(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on {resource.plural} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again",
                    name=name,
                    kind=resource.plural,
                )
                return
            if current is None:
                self._not_found(resource, name)
                return
            problem = self.fake._invalid(resource, body)
            if problem is not None:
                self._error(422, "Invalid", problem, name=name, kind=resource.kind)
                return
            self.fake._track_update(resource, current, body, _manager(self._route()[3]))
            stored = self.fake._store(resource, body)
        self._send_json(200, stored)

    def do_PATCH(self) -> None:
        if not self._pre("PATCH"):
            return
        parts = [p for p in urlsplit(self.path).path.split("/") if p]
        if parts[:2] == ["api", "v1"] and len(parts) == 7 and parts[4] == "pods" and parts[6] == "resize":
            self._resize(parts[3], parts[5], self._body())
            return
        resource, namespace, name, query = self._route()
        body = self._body()
        if resource is None or name is None:
            self._error(404, "NotFound", "the server could not find the requested resource")
            return
        if "apply-patch" in (self.headers.get("Content-Type") or ""):
            self._server_side_apply(resource, namespace or "", name, body, query)
            return
        with self.fake._cond:
            current = self.fake._lookup(resource, namespace or "", name)
            if current is None:
                self._not_found(resource, name)
                return
            if "json-patch" in (self.headers.get("Content-Type") or ""):
                patched = jsonpatch.apply_patch(copy.deepcopy(current), body)
            else:
                patched = _merge(copy.deepcopy(current), body)
            problem = self.fake._invalid(resource, patched)
            if problem is not None:
                self._error(422, "Invalid", problem, name=name, kind=resource.kind)
                return
            self.fake._track_update(resource, current, patched, _manager(query))
            stored = self.fake._store(resource, patched)
        self._send_json(200, stored)

    def _server_side_apply(
        self, resource: Resource, namespace: str, name: str, body: Any, query: dict[str, list[str]]
    ) -> None:
        manager = query.get("fieldManager", [""])[0]
        if not manager:
            self._error(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
                        "value: is required for apply patch")  # fmt: skip
            return
        if not isinstance(body, dict):
            self._error(400, "BadRequest", "error decoding YAML: the apply patch is not an object")
            return
        if resource.namespaced:
            namespace = namespace or "default"
        force = query.get("force", [""])[0] in ("true", "1")
        with self.fake._cond:
            code, answer = self.fake._apply(resource, namespace, name, body, manager=manager, force=force)
        self._send_json(code, answer)

    def _resize(self, namespace: str, name: str, body: Any) -> None:
        """PATCH pods/{name}/resize as a 1.33 API server answers it, then the kubelet's part."""
        pods = self.fake.resource("pods")
        if "pods/resize" in self.fake.forbidden:  # authorization comes first, before the Pod is read
            self._forbidden("patch", pods, namespace, name=name, subresource="resize")
            return
        with self.fake._cond:
            current = self.fake._lookup(pods, namespace, name)
            if current is None:
                self._not_found(pods, name)
                return
            if "json-patch" in (self.headers.get("Content-Type") or ""):
                patched = jsonpatch.apply_patch(copy.deepcopy(current), body)
            else:
                patched = _merge(copy.deepcopy(current), body)
            problem = _resize_problem(current, patched)
            if problem is not None:
                field_path, message = problem
                kind = "FieldValueInvalid" if message.startswith("Invalid") else "FieldValueForbidden"
                cause = {"reason": kind, "message": message, "field": field_path}
                text = f'Pod "{name}" is invalid: {field_path}: {message}'
                self._error(422, "Invalid", text, name=name, kind="Pod", causes=[cause])
                return
            refused = self.fake._quota_admission(patched, before=current)
            if refused is not None:
                self._error(403, "Forbidden", f'pods "{name}" is forbidden: {refused}', name=name,
                            kind="pods")  # fmt: skip
                return
            patched["metadata"]["generation"] = int(current["metadata"].get("generation", 1)) + 1
            _kubelet_resize(patched, self.fake.resize_outcome)
            stored = self.fake._store(pods, patched)
        self._send_json(200, stored)

    def do_DELETE(self) -> None:
        if not self._pre("DELETE"):
            return
        with self.fake._cond:
            self.fake.mutations.append(("DELETE", self.path, None))
        resource, namespace, name, _ = self._route()
        if resource is None or name is None:
            self._error(404, "NotFound", "the server could not find the requested resource")
            return
        with self.fake._cond:
            try:
                removed = self.fake._remove(resource, namespace or "", name)
            except KeyError:
                self._not_found(resource, name)
                return
        self._send_json(200, removed)


def _peer_closed(connection: socket.socket) -> bool:
    """True once the client has closed its end (readable with nothing to read)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


_RESIZABLE = ("cpu", "memory")


_QUOTA_NAMES = {
    "cpu": "requests.cpu", "memory": "requests.memory", "requests.cpu": "requests.cpu",
    "requests.memory": "requests.memory", "limits.cpu": "limits.cpu", "limits.memory": "limits.memory",
}


def _shown(names: list[str], values: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={_quantity(k, values.get(k, 0))}" for k in names)


def parse_quantity(value: object) -> Any:
    """A quantity as the API server reads it (the client's parser; untyped)."""
    return _parse_quantity(value)  # type: ignore[no-untyped-call]


def _quota_counts(quota: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    best_effort = _qos(pod) == "BestEffort"
    terminating = spec.get("activeDeadlineSeconds") is not None
    for scope in (quota.get("spec") or {}).get("scopes") or ():
        if {"BestEffort": not best_effort, "NotBestEffort": best_effort, "Terminating": not terminating,
                "NotTerminating": terminating}.get(scope, False):
            return False
    priority = spec.get("priorityClassName")
    for expression in ((quota.get("spec") or {}).get("scopeSelector") or {}).get("matchExpressions") or ():
        operator, values = expression.get("operator"), expression.get("values") or []
        if expression.get("scopeName") == "PriorityClass" and not {
            "In": priority in values, "NotIn": priority not in values, "Exists": bool(priority),
            "DoesNotExist": not priority,
        }.get(operator, False):
            return False
    return True


def _missing_for_quota(pod: Mapping[str, Any], hard: Mapping[str, Any]) -> str:
    """`limits.memory for: app` for each tracked value a container does not state (its usage helper)."""
    missing: list[str] = []
    spec = pod.get("spec") or {}
    for name in sorted({_QUOTA_NAMES[k] for k in hard if k in _QUOTA_NAMES}):
        section, resource = name.split(".")
        lacking = [c.get("name") for group in ("initContainers", "containers") for c in spec.get(group) or ()
                   if resource not in ((c.get("resources") or {}).get(section) or {})]
        if lacking:
            missing.append(f"{name} for: {','.join(lacking)}")
    return "; ".join(missing)


def _pod_quota_usage(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The Pod's compute usage under each quota name: regular containers and native sidecars summed,
    against the largest init container with the sidecars started before it, plus overhead."""
    spec = pod.get("spec") or {}
    usage: dict[str, Any] = {"pods": 1, "count/pods": 1}
    for section in ("requests", "limits"):
        for resource in ("cpu", "memory"):
            def value(c: Mapping[str, Any], section: str = section, resource: str = resource) -> Any:
                return parse_quantity(((c.get("resources") or {}).get(section) or {}).get(resource, 0))

            sidecars, init_peak = 0, 0
            for c in spec.get("initContainers") or ():
                if c.get("restartPolicy") == "Always":
                    sidecars += value(c)
                else:
                    init_peak = max(init_peak, sidecars + value(c))
            running = sum((value(c) for c in spec.get("containers") or ()), 0) + sidecars
            total = max(running, init_peak) + parse_quantity((spec.get("overhead") or {}).get(resource, 0))
            usage[f"{section}.{resource}"] = total
            if section == "requests":
                usage[resource] = total
    return usage


def _quantity(name: str, amount: Any) -> str:
    if "cpu" in name:
        return f"{int(amount * 1000)}m"
    return str(int(amount))


def _qos(pod: Mapping[str, Any]) -> str:
    """The Pod's QoS class as the API server computes it (requests default to limits)."""
    parts = []
    for group in ("initContainers", "containers"):
        for container in pod["spec"].get(group) or ():
            resources = container.get("resources") or {}
            limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in _RESIZABLE}
            asked = resources.get("requests") or {}
            requests = {**limits, **{k: v for k, v in asked.items() if k in _RESIZABLE}}
            parts.append((requests, limits))
    if not any(requests or limits for requests, limits in parts):
        return "BestEffort"
    guaranteed = all(
        set(limits) == set(_RESIZABLE) and all(_same(requests[k], limits[k]) for k in _RESIZABLE)
        for requests, limits in parts
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _same(one: str, other: str) -> bool:
    return bool(parse_quantity(one) == parse_quantity(other))


def _resize_problem(before: Obj, after: Obj) -> tuple[str, str] | None:
    """(field, message) of the validation a real server fails a resize with, or None."""
    def without_resources(pod: Obj) -> Any:
        spec = copy.deepcopy(pod["spec"])
        for group in ("initContainers", "containers"):
            for container in spec.get(group) or ():
                container.pop("resources", None)
        return spec

    only = "Forbidden: only cpu and memory resources are mutable"
    if without_resources(before) != without_resources(after) or before["metadata"] != after["metadata"]:
        return "spec", only
    for group in ("initContainers", "containers"):
        pairs = zip(before["spec"].get(group) or (), after["spec"].get(group) or (), strict=True)
        for index, (old, new) in enumerate(pairs):
            for section in ("requests", "limits"):
                where = f"spec.{group}[{index}].resources.{section}"
                was = (old.get("resources") or {}).get(section) or {}
                now = (new.get("resources") or {}).get(section) or {}
                if {k for k in set(was) | set(now) if was.get(k) != now.get(k)} - set(_RESIZABLE):
                    return where, only
                if set(was) - set(now):
                    return where, "Forbidden: resource requests and limits cannot be removed"
    # ValidatePodResize compares the class the Pod was created with (status.qosClass) with the new shape.
    started = (before.get("status") or {}).get("qosClass") or _qos(before)
    if started != _qos(after):
        return "spec", f'Invalid value: "{started}": Pod QOS Class may not change as a result of resizing'
    return None


def _kubelet_resize(pod: Obj, outcome: str) -> None:
    """What the kubelet reports for an accepted resize: the conditions, or the new allocated resources."""
    conditions = [c for c in (pod.setdefault("status", {}).get("conditions") or ())
                  if c.get("type") not in ("PodResizePending", "PodResizeInProgress")]
    now = _now()
    if outcome in ("Deferred", "Infeasible"):
        message = f"Node didn't have enough {'capacity' if outcome == 'Deferred' else 'allocatable'}: cpu"
        conditions.append({"type": "PodResizePending", "status": "True", "reason": outcome,
                           "message": message, "lastProbeTime": None, "lastTransitionTime": now})
    elif outcome == "InProgress":
        conditions.append({"type": "PodResizeInProgress", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": now})
    else:
        by_name = {c["name"]: c for c in pod["spec"].get("containers") or ()}
        for status in pod["status"].get("containerStatuses") or ():
            spec = by_name.get(status.get("name"))
            if spec is not None:
                resources = spec.get("resources") or {}
                status["resources"] = copy.deepcopy(resources)
                status["allocatedResources"] = copy.deepcopy(resources.get("requests") or {})
        pod["status"]["observedGeneration"] = pod["metadata"]["generation"]
    pod["status"]["conditions"] = conditions


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (also used for strategic merge patches of plain maps)."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value)
    return target


def write_kubeconfig(
    path: str | Path, *, server: str, token: str = "fake-token", namespace: str = "default"
) -> Path:
    """Write a kubeconfig with one context pointing at `server` (token auth); returns the path."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "fake", "user": {"token": token}}],
        "contexts": [
            {"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": namespace}}
        ],
        "current-context": "fake",
        "preferences": {},
    }
    target = Path(path)
    target.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return target


def iter_events(lines: Iterator[bytes]) -> Iterator[Obj]:
    """Parse a watch stream's lines (for tests that read the fake directly)."""
    for line in lines:
        if line.strip():
            yield json.loads(line)


# -- pytest fixtures (re-exported by tests/conftest.py for every test package) ----------------------------
import pytest  # noqa: E402


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    """A fake API server on a free loopback port, for one test."""
    with FakeKube() as fake:
        yield fake


@pytest.fixture
def kubeconfig(kube: FakeKube, tmp_path: Path) -> Path:
    return kube.write_kubeconfig(tmp_path / "kubeconfig")
