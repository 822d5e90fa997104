"""Reading a Pod as the API server sends it: containers, opt-outs, LimitRanger marks, serving ports."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from webhook import PREFIX

__all__ = [
    "EXCLUDE_ANNOTATION",
    "EXCLUDE_CONTAINERS_ANNOTATION",
    "INJECTED_ANNOTATION",
    "LIMIT_RANGER_ANNOTATION",
    "NO_LIMIT_MARK",
    "PROBE_PATH_ANNOTATION",
    "SKIP_LABEL",
    "ContainerRef",
    "containers",
    "exclusions",
    "guessed_requests",
    "is_long_running",
    "is_side_port",
    "limit_ranger_marks",
    "malformed",
    "serving_port",
]

SKIP_LABEL = PREFIX + "skip"
EXCLUDE_ANNOTATION = PREFIX + "exclude"  # e.g. "probes,preStop"
EXCLUDE_CONTAINERS_ANNOTATION = PREFIX + "exclude-containers"  # e.g. "istio-proxy,log-shipper"
PROBE_PATH_ANNOTATION = PREFIX + "probe-path"  # e.g. "/healthz": httpGet probes instead of tcpSocket
INJECTED_ANNOTATION = PREFIX + "injected"
LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"

# "LimitRanger plugin set: cpu, memory request for container app; cpu limit for init container setup"
_LIMIT_RANGER_PART = re.compile(
    r"(?P<resources>[\w./-]+(?:, [\w./-]+)*) (?P<kind>request|limit)"
    r" for (?:init )?container (?P<name>[^\s;]+)"
)


@dataclass(frozen=True, slots=True)
class ContainerRef:
    """A container and where it sits, so patch paths can be built without searching again."""

    group: str  # "containers" | "initContainers"
    index: int
    body: Mapping[str, Any]
    name: str  # read many times per decision: kept, not looked up

    @property
    def path(self) -> tuple[str | int, ...]:
        return ("spec", self.group, self.index)

    @property
    def is_native_sidecar(self) -> bool:
        return self.group == "initContainers" and self.body.get("restartPolicy") == "Always"

    def restarts_on_resize(self, resource: str) -> bool:
        """Whether resizing `resource` in place restarts the container: its `resizePolicy` for it is
        RestartContainer (the default is NotRequired)."""
        for entry in self.body.get("resizePolicy") or ():
            if isinstance(entry, Mapping) and entry.get("resourceName") == resource:
                return entry.get("restartPolicy") == "RestartContainer"
        return False


def _string_map(value: object) -> bool:
    return value is None or (
        isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    )


def _metadata_problem(metadata: object) -> str | None:
    if not isinstance(metadata, dict):
        return "metadata is not an object"
    for key in ("labels", "annotations"):
        if not _string_map(metadata.get(key)):
            return f"metadata.{key} is not a map of strings"
    for key in ("name", "generateName", "namespace"):
        if metadata.get(key) is not None and not isinstance(metadata[key], str):
            return f"metadata.{key} is not a string"
    owners = metadata.get("ownerReferences")
    if owners is not None and not (isinstance(owners, list) and all(isinstance(ref, dict) for ref in owners)):
        return "metadata.ownerReferences is not a list of objects"
    return None


def _port_problem(ports: object) -> str | None:
    """What the API server would refuse in a container's `ports`: a containerPort that is no port number
    (the engine would pass such a port over, and the Pod get no probe, without a word)."""
    if not isinstance(ports, list):
        return "ports is not a list"
    for port in ports:
        number = port.get("containerPort") if isinstance(port, dict) else port
        if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 65536:
            return f"ports[].containerPort {number!r} is not a port number (1 to 65535)"
    return None


def malformed(pod: object) -> str | None:
    """Why this object cannot be treated as a Pod, or None: what the API server would refuse, of what
    the engine reads. Checked before any rule runs, by the server and by every verb that reads manifests
    (`webhook.offline.sources`)."""
    if not isinstance(pod, dict):
        return "object is not a JSON object"
    problem = _metadata_problem(pod.get("metadata", {}))
    if problem is not None:
        return problem
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return "spec is missing or not an object"
    for group in ("containers", "initContainers"):
        items = spec.get(group, [])
        if items is None:
            continue
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            return f"spec.{group} is not a list of objects"
        for item in items:
            if not isinstance(item.get("name"), str):
                return f"spec.{group}[].name is not a string"
            for key in ("resources", "lifecycle", "readinessProbe", "livenessProbe", "startupProbe"):
                if item.get(key) is not None and not isinstance(item[key], dict):
                    return f"spec.{group}[].{key} is not an object"
            problem = _port_problem(item.get("ports") or [])
            if problem is not None:
                return f"spec.{group}[].{problem}"
    if not spec.get("containers"):
        return "spec.containers is empty"
    return None


def containers(pod: Mapping[str, Any]) -> Iterator[ContainerRef]:
    """Regular and init containers (native sidecars included); ephemeral containers never."""
    spec = pod["spec"]
    for group in ("initContainers", "containers"):
        for index, body in enumerate(spec.get(group) or ()):
            yield ContainerRef(group, index, body, str(body.get("name", "")))


def is_long_running(pod: Mapping[str, Any]) -> bool:
    """Pods that serve until stopped; Job and CronJob Pods (restartPolicy Never/OnFailure) do not."""
    if pod["spec"].get("restartPolicy", "Always") != "Always":
        return False
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return not any(isinstance(ref, dict) and ref.get("kind") == "Job" for ref in owners)


# Ports a readiness probe should not pick while another exists: they answer while the application does
# not (a metrics exporter, an admin or debug listener, a separate health port).
_SIDE_PORT_WORDS = frozenset(
    {
        "metrics",
        "metric",
        "prometheus",
        "prom",
        "monitoring",
        "admin",
        "management",
        "debug",
        "pprof",
        "health",
        "healthz",
        "status",
    }
)


def is_side_port(port: Mapping[str, Any]) -> bool:
    """A port named like metrics/admin/debug/pprof/health (`metrics`, `http-metrics`, `admin-api`)."""
    return _side_name(str(port.get("name", "")))


@functools.lru_cache(maxsize=1024)  # a cluster names its ports with a few dozen words
def _side_name(name: str) -> bool:
    return any(word in _SIDE_PORT_WORDS for word in re.split(r"[-_.]", name.lower()))


def serving_port(
    container: Mapping[str, Any], prefer: frozenset[int | str] = frozenset()
) -> Mapping[str, Any] | None:
    """The port a probe should target: one a Service sends to (`prefer`: container port numbers or
    names), else one named `http`/`http-*`, else the first TCP port; ports named like
    metrics/admin/debug/pprof/health only when there is no other."""
    tcp = [
        port
        for port in container.get("ports") or ()
        if isinstance(port, dict)
        and port.get("protocol", "TCP") == "TCP"
        and isinstance(port.get("containerPort"), int)
    ]
    candidates = [port for port in tcp if not is_side_port(port)] or tcp
    for port in candidates if prefer else ():
        if port["containerPort"] in prefer or port.get("name") in prefer:
            return port
    for port in candidates:
        name = str(port.get("name", ""))
        if name == "http" or name.startswith("http-"):
            return port
    return candidates[0] if candidates else None


def _csv(value: object) -> frozenset[str]:
    if not isinstance(value, str):
        return frozenset()
    return frozenset(part.strip() for part in value.split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class Exclusions:
    skip_pod: bool
    features: frozenset[str]
    containers: frozenset[str]


def exclusions(pod: Mapping[str, Any]) -> Exclusions:
    """The Pod's own opt-outs: the skip label, excluded features and excluded containers."""
    metadata = pod.get("metadata") or {}
    labels, annotations = metadata.get("labels") or {}, metadata.get("annotations") or {}
    return Exclusions(
        skip_pod=str(labels.get(SKIP_LABEL, "")).lower() == "true",
        features=_csv(annotations.get(EXCLUDE_ANNOTATION)),
        containers=_csv(annotations.get(EXCLUDE_CONTAINERS_ANNOTATION)),
    )


def limit_ranger_marks(pod: Mapping[str, Any]) -> frozenset[tuple[str, str, str]]:
    """(container, "request"|"limit", resource) triples that LimitRanger filled in, from its annotation."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LIMIT_RANGER_ANNOTATION)
    if not isinstance(text, str):
        return frozenset()
    marks = set()
    for match in _LIMIT_RANGER_PART.finditer(text):
        for resource in match["resources"].split(", "):
            marks.add((match["name"], match["kind"], resource))
    return frozenset(marks)


NO_LIMIT_MARK = "no limit without usage history"
# "app: requests.memory=256Mi (from policy "default"; no limit without usage history); ..."
_GUESSED = re.compile(r"requests\.(?P<resource>[\w./-]+)=\S+ \([^()]*" + re.escape(NO_LIMIT_MARK) + r"\)")


def guessed_requests(pod: Mapping[str, Any]) -> frozenset[tuple[str, str]]:
    """(container, resource) whose request pod-tailor itself set from a guess and left without a limit,
    read back from its own annotation, so a reinvocation does not take them for a person's."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(INJECTED_ANNOTATION)
    if not isinstance(text, str):
        return frozenset()
    guessed = set()
    for line in text.splitlines()[1:]:
        name, _, entries = line.partition(": ")
        for match in _GUESSED.finditer(entries):
            guessed.add((name, match["resource"]))
    return frozenset(guessed)
