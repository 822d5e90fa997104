"""Workloads to report on, from manifests (a file, a directory, stdin) or from objects listed in a cluster.

Each `Collected` carries the Pod its controller would create (`controller_pod`): that Pod, not the
template, is what the webhook sees, with the owner reference the engine maps to a workload.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from webhook.config.yamltext import ReadError, read_input
from webhook.core.model.workload import pod_workload
from webhook.offline.dryrun import controller_pod
from webhook.offline.inputs import MANIFEST_SUFFIXES, manifest_paths
from webhook.offline.sources import (
    PodSource,
    SourceError,
    input_documents,
    load_documents,
    nothing_to_preview,
    pod_source,
    pod_sources,
)

__all__ = [
    "MANIFEST_SUFFIXES",
    "Collected",
    "Manifests",
    "collected",
    "from_manifests",
    "read_manifests",
    "replicas",
]


@dataclass(frozen=True, slots=True)
class Collected:
    kind: str
    namespace: str
    name: str
    pod: dict[str, Any]  # the Pod as its controller would create it (or the review's object)
    replicas: int
    origin: str  # the file it came from, or "cluster"


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def replicas(document: Mapping[str, Any]) -> int:
    """How many Pods of this workload run at once: the number the totals multiply by.

    DaemonSets count the nodes they are scheduled on when the status says so (else 1); Jobs and
    CronJobs their parallelism (one run at a time), a suspended CronJob none.
    """
    spec = document.get("spec") if isinstance(document.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    kind = document.get("kind")
    if kind == "DaemonSet":
        return _int((document.get("status") or {}).get("desiredNumberScheduled"), 1)
    if kind == "Job":
        return _int(spec.get("parallelism"), 1)
    if kind == "CronJob":
        if spec.get("suspend") is True:
            return 0
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        return _int(job.get("parallelism"), 1)
    if kind in ("Pod", "AdmissionReview"):
        return 1
    return _int(spec.get("replicas"), 1)


def collected(source: PodSource, *, origin: str) -> Collected:
    """One workload: a review's Pod as sent, anything else as its controller would create it."""
    if source.is_review:
        pod = source.pod
        key = pod_workload(pod, source.namespace)
        return Collected(key.kind, key.namespace, key.name, pod, 1, origin)
    pod = controller_pod(source, namespace=source.namespace)
    key = source.workload
    return Collected(key.kind, key.namespace, key.name, pod, replicas(source.document), origin)


def from_manifests(text: str, *, origin: str, namespace: str | None = None) -> list[Collected]:
    """Every Pod or pod template in `text`; raises SourceError (one line) for unusable input."""
    sources = pod_sources(load_documents(text), namespace=namespace)
    return [collected(source, origin=origin) for source in sources]


class Manifests(NamedTuple):
    items: list[Collected]
    problems: list[str]
    documents: list[dict[str, Any]]  # every object read, workloads or not: the HPAs and Services around them


def read_manifests(
    paths: Iterable[str], *, stdin: str | None = None, namespace: str | None = None, recursive: bool = False
) -> Manifests:
    """Workloads from files, directories and `-` (stdin), read as kubectl reads `-f`
    (`webhook.offline.inputs`: a directory's own manifests, with `recursive` its subdirectories' too),
    and every object read.

    A file without workloads (a Service, a kustomization) adds no workload but its objects count (see
    `webhook.offline.facts`); a document that cannot be read or parsed is a problem naming its file, line
    and column, and the rest is still reported.
    """
    found: list[Collected] = []
    problems: list[str] = []
    documents: list[dict[str, Any]] = []
    for given in paths:
        try:
            files = manifest_paths(given, recursive=recursive)
        except ReadError as exc:
            problems.append(str(exc))
            continue
        for path in files:
            try:
                text = (stdin or "") if path == "-" else read_input(path)
            except ReadError as exc:
                problems.append(str(exc))
                continue
            before = len(problems)
            read_now = [
                document
                for read in input_documents(text, origin=path, problems=problems)
                for document in read.objects
            ]
            if not read_now and len(problems) == before:
                problems.append(f"{path}: no objects in input")
            documents.extend(read_now)
            sources = []
            for document in read_now:
                try:
                    source = pod_source(document, namespace=namespace)
                except SourceError as exc:
                    problems.append(f"{path}: {exc}")
                    continue
                if source is not None:
                    sources.append(source)
            if read_now and not sources and len(problems) == before and files == [given]:
                problems.append(f"{path}: {nothing_to_preview(read_now)}")  # a file named on purpose
            found.extend(collected(source, origin=path) for source in sources)
    return Manifests(found, problems, documents)
