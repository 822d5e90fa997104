"""The API calls of the resize controller's two duties: ask for a resize, mark the Pod, say it in an event.

Every call is one of: PATCH `pods/{name}/resize` (a JSON Patch of container resources only), a merge
PATCH of the Pod's labels and pod-tailor's annotations, and a `v1` Event on the Pod. Nothing else is
written: never the workload, never its template. Both duties (the start-up boost's give-back and in-place
right-sizing) go through here, so an answer of the API server means one thing in both:

- 404: the Pod is gone.
- 422: the resize itself is refused (it would change the QoS class, or a field no resize may change):
  asking it again cannot succeed, so the duty records it and never asks it again.
- 403 and anything else (409, 5xx, a broken connection): an error, tried again at the next pass. A 403
  on `pods/resize` says who may ask, or what the namespace admits now, not what is wrong with the
  resize: RBAC without `patch` on `pods/resize` (until a ClusterRole grants it), or the ResourceQuota or
  LimitRange admission of the resize (until Pods go or a person changes them). Recording it for good
  would leave a boosted Pod boosted for its life, and a right-sizing never asked again, for a cause
  that passes.

A resize the API server takes may still not fit the node: that is the kubelet's answer, later, in the
Pod's `PodResizePending` condition (Deferred or Infeasible), which each duty follows.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from webhook.core.model.timestamps import stamp
from webhook.core.resize.history import RESIZED_ANNOTATION, Entry, history_text

__all__ = ["Outcome", "Resizer", "Written", "name_of"]

Obj = dict[str, Any]
Outcome = Literal["resized", "refused", "gone", "error"]  # of a resize asked
Written = Literal["written", "gone", "error"]  # of a mark on the Pod
Labels = Mapping[str, str | None]  # labels or annotations to merge: None removes one
COMPONENT = "pod-tailor-rightsize"


def _message(exc: ApiException) -> str:
    """The API server's own words (its Status `message`), for the log and the Pod's record."""
    try:
        return str(json.loads(exc.body or "").get("message", ""))[:300]
    except (TypeError, ValueError, AttributeError):
        return str(exc.reason)


def name_of(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


class Resizer:
    """The writes of one duty of the resize controller (`duty` names it in the log), on one API client."""

    def __init__(self, api_client: Any, *, clock: Callable[[], float], duty: str) -> None:
        self.core: Any = client.CoreV1Api(api_client)
        self.clock, self.duty = clock, duty
        self.log = logging.getLogger(f"pod_tailor.{duty}")
        self.identity = uuid.uuid4().hex[:8]  # the Events' reportingInstance: this replica

    def resize(self, pod: Obj, ops: Sequence[Mapping[str, Any]]) -> tuple[Outcome, str]:
        """PATCH the `resize` subresource; (outcome, the API server's message when not resized)."""
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
            self.log.warning("%s: %s: resize failed (%s: %s); tried again at the next pass", self.duty,
                             name_of(pod), exc.status, _message(exc))  # fmt: skip
            return "error", _message(exc)
        return "resized", ""

    def mark(self, pod: Obj, annotations: Labels, *, labels: Labels | None = None) -> Written:
        """Merge `annotations` (and `labels`; None removes one) into the Pod's metadata."""
        metadata = pod["metadata"]
        body = {"metadata": {"annotations": dict(annotations)}}
        if labels:
            body["metadata"]["labels"] = dict(labels)
        try:
            self.core.patch_namespaced_pod(
                metadata["name"], metadata["namespace"], body, _preload_content=False
            )
        except ApiException as exc:
            if exc.status == 404:
                return "gone"
            self.log.warning("%s: %s: marking the Pod failed (%s)", self.duty, name_of(pod), exc.status)
            return "error"
        return "written"

    def record(self, pod: Obj, history: Sequence[Entry], entry: Entry) -> str:
        """Write the Pod's resize record with `entry` last; the record as written ("" when the Pod is gone
        or the write failed)."""
        text = history_text(history, entry)
        return text if self.mark(pod, {RESIZED_ANNOTATION: text}) == "written" else ""

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
            self.log.warning("%s: %s: event %s not written (%s)", self.duty, name_of(pod), reason, exc.status)

    def memory_usage(self, pod: Obj) -> dict[str, Any] | None:
        """container -> working set now, from the metrics API (metrics-server); None when not served."""
        metadata = pod["metadata"]
        custom = client.CustomObjectsApi(self.core.api_client)
        try:
            pod_metrics: Any = custom.get_namespaced_custom_object(
                "metrics.k8s.io", "v1beta1", metadata["namespace"], "pods", metadata["name"]
            )
        except ApiException as exc:
            self.log.debug("%s: %s: no usage from the metrics API (%s)", self.duty, name_of(pod), exc.status)
            return None
        return {
            str(item.get("name")): (item.get("usage") or {}).get("memory")
            for item in pod_metrics.get("containers") or ()
            if isinstance(item, Mapping)
        }
