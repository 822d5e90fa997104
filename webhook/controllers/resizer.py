"""The API calls of in-place right-sizing: ask for a resize, record it on the Pod, say it in an event.

Every call is one of: PATCH `pods/{name}/resize` (a JSON Patch of container resources only), a merge
PATCH of the Pod's `pod-tailor.io/resized` annotation, and a `v1` Event on the Pod. Nothing else is
written: never the workload, never its template. The answers map to outcomes in one place here:

- 404: the Pod is gone.
- 422: the resize itself is refused (it would change the QoS class, or a field no resize may change):
  asking it again cannot succeed, so it is recorded and never asked again.
- 403 and anything else (409, 5xx, a broken connection): an error, tried again at the next pass. A 403
  on `pods/resize` says who may ask, or what the namespace admits now, not what is wrong with the
  resize: RBAC without `patch` on `pods/resize` (until a ClusterRole grants it), or the ResourceQuota or
  LimitRange admission of the resize (until Pods go or a person changes them). Recording it for good
  would leave a right-sizing never asked again for a cause that passes.

A resize the API server takes may still not fit the node: that is the kubelet's answer, later, in the
Pod's `PodResizePending` condition (Deferred or Infeasible), which the controller follows.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from webhook.core.resizemark import RESIZED_ANNOTATION, Entry, history_text, stamp

__all__ = ["Outcome", "Resizer"]

log = logging.getLogger("pod_tailor.rightsize")
Obj = dict[str, Any]
Outcome = str  # resized | refused | gone | error
COMPONENT = "pod-tailor-rightsize"


def _message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "").get("message", ""))[:300]
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)


def name_of(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


class Resizer:
    """The writes of the resize controller, on one API client."""

    def __init__(self, api_client: Any, *, clock: Callable[[], float], identity: str = "") -> None:
        self.core: Any = client.CoreV1Api(api_client)
        self.clock = clock
        self.identity = identity or uuid.uuid4().hex[:8]

    def resize(self, pod: Obj, ops: Sequence[Mapping[str, Any]]) -> tuple[Outcome, str]:
        """PATCH the `resize` subresource; (outcome, the API server's message when refused)."""
        metadata = pod["metadata"]
        try:
            self.core.patch_namespaced_pod_resize(
                metadata["name"], metadata["namespace"], list(ops), _preload_content=False
            )
        except ApiException as exc:
            if exc.status == 404:
                return "gone", ""
            if exc.status == 422:
                return "refused", _message(exc)
            log.warning("rightsize: %s: resize failed (%s: %s); tried again at the next pass", name_of(pod),
                        exc.status, _message(exc))  # fmt: skip
            return "error", _message(exc)
        return "resized", ""

    def record(self, pod: Obj, history: Sequence[Entry], entry: Entry) -> str:
        """Write the Pod's resize record with `entry` last; the record as written ("" when the Pod is gone
        or the write failed)."""
        metadata = pod["metadata"]
        text = history_text(history, entry)
        body = {"metadata": {"annotations": {RESIZED_ANNOTATION: text}}}
        try:
            self.core.patch_namespaced_pod(
                metadata["name"], metadata["namespace"], body, _preload_content=False
            )
        except ApiException as exc:
            if exc.status != 404:
                log.warning("rightsize: %s: recording the resize failed (%s)", name_of(pod), exc.status)
            return ""
        return text

    def event(self, pod: Obj, *, reason: str, message: str, warning: bool = False) -> None:
        """A `v1` Event on the Pod (what `kubectl describe pod` shows); a failure is only logged."""
        metadata = pod["metadata"]
        now = stamp(self.clock())
        body = {
            "metadata": {"generateName": f"{metadata['name']}.", "namespace": metadata["namespace"]},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": metadata["name"],
                               "namespace": metadata["namespace"], "uid": metadata.get("uid"),
                               "resourceVersion": metadata.get("resourceVersion")},
            "reason": reason, "message": message[:1024], "type": "Warning" if warning else "Normal",
            "source": {"component": COMPONENT}, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "reportingComponent": COMPONENT, "reportingInstance": self.identity,
        }  # fmt: skip
        try:
            self.core.create_namespaced_event(metadata["namespace"], body, _preload_content=False)
        except ApiException as exc:
            log.warning("rightsize: %s: event %s not written (%s)", name_of(pod), reason, exc.status)

    def memory_usage(self, pod: Obj) -> dict[str, Any] | None:
        """container -> working set now, from the metrics API (metrics-server); None when not served."""
        metadata = pod["metadata"]
        custom = client.CustomObjectsApi(self.core.api_client)
        try:
            found: Any = custom.get_namespaced_custom_object(
                "metrics.k8s.io", "v1beta1", metadata["namespace"], "pods", metadata["name"]
            )
        except ApiException as exc:
            log.debug("rightsize: %s: no usage from the metrics API (%s)", name_of(pod), exc.status)
            return None
        return {
            str(item.get("name")): (item.get("usage") or {}).get("memory")
            for item in found.get("containers") or ()
            if isinstance(item, Mapping)
        }
