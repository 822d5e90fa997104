"""The offline preview: the engine run on every Pod found in manifests, and how its results read.

The same `decide` the server runs, on Pods and pod templates instead of admission requests. A Pod
made from a template is first given what the API server gives every new Pod before the webhooks see
it (`webhook.offline.admitted.as_created`: requests copied from limits, LimitRange defaults), so the
preview decides on exactly what the server path would decide on, and never claims a value the
cluster sets by itself. The patch is applied to (or shown against) that as-created document.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

import jsonpatch
import yaml

from webhook.admission.verdict import verdict
from webhook.core.engine import decide
from webhook.core.model.decision import Decision, PatchOp
from webhook.core.model.namespace import Mode, NamespaceSettings
from webhook.core.model.patch import pointer
from webhook.core.model.workload import CLAIM_TEMPLATES
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.admitted import as_created, json_copy
from webhook.offline.facts import with_manifest_facts
from webhook.offline.inputs import Input
from webhook.offline.sources import (
    InputDocument,
    PodSource,
    SourceError,
    input_documents,
    nothing_to_preview,
    object_sources,
)

__all__ = ["Preview", "Previewed", "dump_yaml", "notes", "prefixed", "preview_inputs", "run_preview"]


class Previewed(NamedTuple):
    source: PodSource
    decision: Decision
    mode: Mode
    document: dict[str, Any]  # the as-created document with the patch applied (enforce mode)
    created: dict[str, Any]  # the source's document with its Pod as the API server creates it


def _as_created(source: PodSource, cluster: ClusterSnapshot) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the document, its Pod) as the API server hands them to the webhooks; a review's Pod already is."""
    if source.is_review:
        return source.document, source.pod
    pod = as_created(source.pod, limit_ranges=cluster.facts_for(source.namespace).limit_ranges)
    if pod == source.pod:
        return source.document, source.pod
    document = json_copy(source.document)
    if not source.prefix:
        return pod, pod
    parent = document
    for key in source.prefix[:-1]:
        parent = parent[key]
    parent[source.prefix[-1]] = pod
    return document, pod


def prefixed(ops: tuple[PatchOp, ...], prefix: tuple[str, ...]) -> list[PatchOp]:
    """The engine's ops (against the pod-shaped object) rebased onto the whole document."""
    head = pointer(prefix)
    return [{**op, "path": head + op["path"]} for op in ops]


class Preview(NamedTuple):
    results: list[Previewed]  # one per Pod or pod template, in input order
    documents: list[dict[str, Any]]  # every input document in order, workloads tailored, others as read


def run_preview(
    text: str,
    *,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    origin: str = "input",
    problems: list[str] | None = None,
) -> list[Previewed]:
    """Run the engine on every Pod found in `text` (read from `origin`); see `preview_inputs`.

    Without `problems`, the first document that cannot be used raises SourceError.
    """
    found: list[str] = [] if problems is None else problems
    before = len(found)
    try:
        preview = preview_inputs(
            [Input(origin, text)], cluster=cluster, profiles=profiles, namespace=namespace, labels=labels,
            problems=found,
        )
    except SourceError:
        if problems is None and len(found) > before:
            raise SourceError(found[before]) from None
        raise
    if problems is None and len(found) > before:
        raise SourceError(found[before])
    return preview.results


def preview_inputs(
    inputs: Sequence[Input],
    *,
    cluster: ClusterSnapshot,
    profiles: ProfileSnapshot,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    problems: list[str],
) -> Preview:
    """Run the engine on every Pod in `inputs`, and give back every document, in order, as kubectl
    would apply it: workloads tailored, everything else (Services, ConfigMaps) unchanged.

    `labels`, when given, are the labels of whichever namespace the objects land in. HPAs, VPAs,
    Services, Ingresses and routes in any of `inputs` count as if they were in the cluster, so a
    Service in one file decides the traffic path of a Deployment in another. A document that cannot
    be read or used is one line in `problems` and left out; SourceError when there was no Pod to
    begin with.
    """
    before = len(problems)
    documents = [doc for given in inputs for doc in input_documents(given.text, origin=given.origin,
                                                                   problems=problems)]
    objects = [obj for document in documents for obj in document.objects]
    if not objects and len(problems) == before:
        where = ", ".join(given.origin for given in inputs) or "input"
        raise SourceError(f"{where}: no objects in input")
    by_object = object_sources(documents, namespace=namespace, problems=problems)
    sources = [source for obj in objects if (source := by_object.get(id(obj)))]
    if not sources and len(problems) > before:  # every workload left out: the rest still comes out
        return Preview([], _reassembled(documents, by_object, {}))
    if not sources:
        raise SourceError(nothing_to_preview([obj for obj in objects if id(obj) in by_object]))
    cluster = with_manifest_facts(cluster, objects, namespace=namespace)
    if labels is not None:
        cluster = dataclasses.replace(cluster, namespaces={source.namespace: labels for source in sources})
    results = []
    tailored: dict[int, dict[str, Any]] = {}
    for source in sources:
        created, pod = _as_created(source, cluster)
        claims = source.claim_templates  # its Pods show them as claims of their own (`claim_templates`)
        settings, decision = decide(
            {**pod, CLAIM_TEMPLATES: list(claims)} if claims else pod,
            namespace=source.namespace,
            cluster=cluster,
            profiles=profiles,
            workload=None if source.is_review else source.workload,
        )
        document = created
        if settings.mode is Mode.ENFORCE and decision.ops:
            document = jsonpatch.apply_patch(created, prefixed(decision.ops, source.prefix))
        results.append(Previewed(source, decision, settings.mode, document, created))
        tailored[id(source.document)] = document
    return Preview(results, _reassembled(documents, by_object, tailored))


def _reassembled(
    documents: Sequence[InputDocument], kept: dict[int, PodSource | None], tailored: dict[int, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The documents in order, each object replaced by its tailored self; a List keeps its shape."""
    out = []
    for document in documents:
        if document.objects and document.objects[0] is document.document:
            if id(document.document) in kept:
                out.append(tailored.get(id(document.document), document.document))
            continue
        items = document.document.get("items")
        if isinstance(items, list):
            items = [
                tailored.get(id(item), item)
                for item in items
                if not isinstance(item, dict) or id(item) in kept
            ]
            out.append({**document.document, "items": items})
        else:
            out.append(document.document)
    return out


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the injected annotation) as readable `|` blocks."""


def _block_strings(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _block_strings)


def dump_yaml(document: dict[str, Any]) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=10_000)


def notes(source: PodSource, decision: Decision, mode: Mode, *, label: str | None = None) -> list[str]:
    """The warnings kubectl would print for this Pod (the server's own wording), then a note; each
    headed by `label` (`Kind/name`, or `FILE: Kind/name` when several files were read)."""
    label = label or source.label
    shown = verdict(NamespaceSettings(mode, decision.policy), decision)
    lines = [f"# {label}:"] if shown.warnings else []
    lines += [f"Warning: {warning}" for warning in shown.warnings]
    if mode is Mode.OFF:
        lines.append(f"# {label}: pod-tailor is off in this namespace; nothing would change")
    elif decision.skipped:
        lines.append(f"# {label}: left alone: {decision.skipped}")
    elif mode is Mode.ENFORCE and not decision.ops:
        lines.append(f"# {label}: nothing to add")
    return lines
