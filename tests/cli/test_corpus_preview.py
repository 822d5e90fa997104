"""The whole shared corpus through `pod-tailor preview`, as a person previews an app: each directory of
manifests (`-f DIR`: its Deployments with the Services of their sibling files), and the reviews.

Every document comes out, in order, the ones without Pods unchanged; every tailored workload still
validates strictly; nothing an author set is changed. A rule about the previewed Pods is one function
`check(pod: PreviewedPod)` marked `@rule` (the Pod as written, as tailored, and the Services of its
input): `test_every_previewed_pod_keeps_each_rule` runs each rule on every Pod of every directory and
names each Pod that breaks it. Add a rule as one more `@rule` function above that test.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.shared import CORPUS, MISSING, corpus_params
from webhook.commands import main
from webhook.offline.inputs import MANIFEST_SUFFIXES
from webhook.offline.sources import SourceError, pod_source

MANIFESTS = CORPUS / "manifests"
REVIEWS = CORPUS / "reviews"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the same documents, several times faster


def app_directories() -> list[Path]:
    """Each corpus directory that holds manifests itself (an app, as its repository lays it out), then
    the reviews; none without ../shared."""
    if not CORPUS.is_dir():
        return []
    found = {path.parent for path in MANIFESTS.rglob("*") if path.suffix in MANIFEST_SUFFIXES}
    return [*sorted(found), REVIEWS]


@dataclass(frozen=True, slots=True)
class Previewed:
    """One `pod-tailor preview -f DIR` run: what went in (read here, independently), what came out."""

    directory: Path
    code: int
    stderr: str
    given: list[dict[str, Any]]  # the input documents that are YAML, in kubectl's order
    unreadable: int  # input documents that are not YAML
    shown: list[dict[str, Any]]  # the output documents


@dataclass(frozen=True, slots=True)
class PreviewedPod:
    """A Pod or pod template of the corpus: as written, as `preview` tailored it, and what surrounds it."""

    id: str  # directory/Kind/name
    kind: str
    before: dict[str, Any]  # the pod-shaped object as written (a template, a Pod, a review's object)
    after: dict[str, Any]  # the same object in preview's output
    document: dict[str, Any]  # the whole output document
    written: dict[str, Any]  # the whole input document
    services: tuple[dict[str, Any], ...]  # the Services among the same input


def _documents(directory: Path) -> tuple[list[dict[str, Any]], int]:
    """(the documents `kubectl apply -f DIR` would send, how many are left out: not YAML, or refused by
    the API server), read with PyYAML document by document (a template with `{{replicas}}` in it is not
    YAML; one with `containerPort: PORT` is refused)."""
    found: list[dict[str, Any]] = []
    unreadable = 0
    for path in sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES):
        for chunk in re.split(r"^---[ \t]*$", path.read_text(), flags=re.MULTILINE):
            try:
                document = yaml.load(chunk, Loader=LOADER)
            except yaml.YAMLError:
                unreadable += 1
                continue
            if document is None:
                continue
            try:
                if isinstance(document, dict):
                    pod_source(json.loads(json.dumps(document, default=str)))
            except SourceError:
                unreadable += 1
                continue
            found.append(document)
    return json.loads(json.dumps(found, default=str)), unreadable


@functools.cache
def previewed(directory: Path) -> Previewed:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["preview", "-f", str(directory)])
    shown = [doc for doc in yaml.load_all(out.getvalue(), Loader=LOADER) if doc is not None]
    return Previewed(directory, code, err.getvalue(), *_documents(directory), shown)


def _objects(documents: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for document in documents:
        if str(document.get("kind", "")).endswith("List"):
            yield from (item for item in document.get("items") or () if isinstance(item, dict))
        else:
            yield document


def _pod(document: dict[str, Any]) -> dict[str, Any] | None:
    try:
        source = pod_source(document)
    except SourceError:
        return None
    return source.pod if source is not None else None


@functools.cache
def pods_of(directory: Path) -> tuple[PreviewedPod, ...]:
    """The Pods and pod templates of one directory's preview, beside what was written."""
    run = previewed(directory)
    given, shown = list(_objects(run.given)), list(_objects(run.shown))
    services = tuple(doc for doc in given if doc.get("kind") == "Service")
    where = str(directory.relative_to(CORPUS))
    pods = []
    for written, document in zip(given, shown, strict=False):
        before, after = _pod(written), _pod(document)
        if before is None or after is None:
            continue
        meta = after.get("metadata") or {}
        name = meta.get("generateName") or meta.get("name") or (document.get("metadata") or {}).get("name")
        kind = str(document.get("kind"))
        pods.append(PreviewedPod(f"{where}/{kind}/{name}", kind, before, after, document, written, services))
    return tuple(pods)


APPS = app_directories()
APP_PARAMS = corpus_params(APPS, ids=lambda p: str(p.relative_to(CORPUS)))
RULES: list[Callable[[PreviewedPod], None]] = []


def rule(check: Callable[[PreviewedPod], None]) -> Callable[[PreviewedPod], None]:
    """A rule every previewed Pod keeps: it asserts, or calls pytest.skip for a Pod it does not apply to."""
    RULES.append(check)
    return check


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container of a pod-shaped object: init containers (native sidecars too), then the others."""
    spec = pod.get("spec") or {}
    return [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]


def selected_by(pod: PreviewedPod) -> list[dict[str, Any]]:
    """The Services of the Pod's input whose selector matches its labels (same namespace, as written)."""
    labels = (pod.after.get("metadata") or {}).get("labels") or {}
    namespace = (pod.written.get("metadata") or {}).get("namespace")
    return [
        service
        for service in pod.services
        if (selector := (service.get("spec") or {}).get("selector"))
        and (service.get("metadata") or {}).get("namespace") == namespace
        and all(labels.get(key) == value for key, value in selector.items())
    ]


def _validates(document: dict[str, Any]) -> str | None:
    """None when `document` validates strictly on 1.30, else the validator's message."""
    try:
        kubernetes_validate.validate(document, "1.30", strict=True)
    except (kubernetes_validate.ValidationError, kubernetes_validate.utils.SchemaNotFoundError) as exc:
        return " ".join(str(exc).split())[:300]
    return None


def test_the_corpus_is_all_there() -> None:
    if not APPS:
        pytest.skip(MISSING)
    assert len(APPS) == 93
    assert len(pods_of(REVIEWS)) == 132


class TestEveryDocumentComesOut:
    @pytest.mark.parametrize("directory", APP_PARAMS)
    def test_documents_in_equal_documents_out_in_order(self, directory: Path) -> None:
        run = previewed(directory)
        assert run.code == (1 if run.unreadable else 0), run.stderr
        assert run.stderr.count("(this document is left out)") == run.unreadable
        assert [(d.get("kind"), (d.get("metadata") or {}).get("name")) for d in run.shown] == [
            (d.get("kind"), (d.get("metadata") or {}).get("name")) for d in run.given
        ]

    @pytest.mark.parametrize("directory", APP_PARAMS)
    def test_what_holds_no_pod_comes_out_unchanged(self, directory: Path) -> None:
        run = previewed(directory)
        for written, shown in zip(_objects(run.given), _objects(run.shown), strict=True):
            if _pod(written) is None:
                assert shown == written


@rule
def every_tailored_workload_still_validates(pod: PreviewedPod) -> None:
    document = pod.document["request"]["object"] if pod.kind == "AdmissionReview" else pod.document
    written = pod.written["request"]["object"] if pod.kind == "AdmissionReview" else pod.written
    problem = _validates(document)
    if problem is not None and _validates(written) is not None:
        pytest.skip(f"as published it does not validate on 1.30 either: {problem}")
    assert problem is None


AUTHOR_FIELDS = ("readinessProbe", "livenessProbe", "startupProbe")


@rule
def nothing_the_author_set_is_changed(pod: PreviewedPod) -> None:
    after = {body["name"]: body for body in containers(pod.after)}
    for body in containers(pod.before):
        tailored = after[body["name"]]
        for field in AUTHOR_FIELDS:
            if field in body:
                assert tailored[field] == body[field], f"{body['name']}: {field}"
        for hook, handler in (body.get("lifecycle") or {}).items():
            assert tailored["lifecycle"][hook] == handler, f"{body['name']}: lifecycle.{hook}"
        for section, values in (body.get("resources") or {}).items():
            if isinstance(values, dict):
                assert (tailored["resources"][section] or {}).items() >= values.items(), body["name"]
    grace = (pod.before.get("spec") or {}).get("terminationGracePeriodSeconds")
    if grace is not None and grace != 30:  # 30 is the API server's default: no one's choice
        assert pod.after["spec"]["terminationGracePeriodSeconds"] == grace


@rule
def no_startup_probe_without_liveness(pod: PreviewedPod) -> None:
    for body in containers(pod.after):
        if "startupProbe" in body:
            before = {c["name"]: c for c in containers(pod.before)}[body["name"]]
            if "startupProbe" not in before:
                assert "livenessProbe" in body, body["name"]


@rule
def no_limit_without_evidence(pod: PreviewedPod) -> None:
    """The preview has no usage history: every limit is the author's (or LimitRanger's default)."""
    before = {c["name"]: c for c in containers(pod.before)}
    for body in containers(pod.after):
        limits = (body.get("resources") or {}).get("limits") or {}
        written = ((before[body["name"]].get("resources") or {}).get("limits")) or {}
        assert set(limits) <= set(written), body["name"]


def _targets(pod: PreviewedPod) -> set[Any]:
    return {port.get("targetPort", port.get("port")) for service in selected_by(pod)
            for port in (service.get("spec") or {}).get("ports") or ()}  # fmt: skip


def _declares(body: dict[str, Any], targets: set[Any]) -> bool:
    return any((p.get("containerPort") in targets or p.get("name") in targets)
               and p.get("protocol", "TCP") == "TCP" for p in body.get("ports") or ())  # fmt: skip


@rule
def every_container_a_service_sends_to_has_a_pre_stop(pod: PreviewedPod) -> None:
    targets = _targets(pod)
    annotations = (pod.after.get("metadata") or {}).get("annotations") or {}
    if not targets or "pod-tailor.io/injected" not in annotations or "pod-tailor.io/exclude" in annotations:
        pytest.skip("no Service sends to it, or pod-tailor left it alone")
    if (pod.after.get("spec") or {}).get("restartPolicy", "Always") != "Always":
        pytest.skip("runs to completion")
    for body in (pod.after.get("spec") or {}).get("containers") or ():
        if _declares(body, targets) and body["name"] not in ("istio-proxy", "linkerd-proxy"):
            assert (body.get("lifecycle") or {}).get("preStop") is not None, body["name"]


@rule
def no_probe_where_no_service_sends_when_one_selects_the_pod(pod: PreviewedPod) -> None:
    targets = _targets(pod)
    if not targets:
        pytest.skip("no Service selects it")
    numbers = {t for t in targets if isinstance(t, int)}
    regular = (pod.after.get("spec") or {}).get("containers") or ()
    before = {c["name"]: c for c in containers(pod.before)}
    for body in regular:
        if "readinessProbe" in body and "readinessProbe" not in before[body["name"]]:
            assert _declares(body, targets) or (numbers and len(regular) == 1) or any(
                (before[body["name"]].get(f) or {}).get(h, {}).get("port") in numbers
                for f in AUTHOR_FIELDS for h in ("httpGet", "tcpSocket", "grpc")
            ), body["name"]


# Rules go above this line (`@rule`).


@pytest.mark.parametrize("directory", APP_PARAMS)
@pytest.mark.parametrize("check", RULES, ids=lambda check: check.__name__)
def test_every_previewed_pod_keeps_each_rule(check: Callable[[PreviewedPod], None], directory: Path) -> None:
    broken = []
    for pod in pods_of(directory):
        try:
            check(pod)
        except pytest.skip.Exception:
            continue
        except AssertionError as exc:
            broken.append(f"{pod.id}: {' '.join(str(exc).split())[:400]}")
    assert not broken, "\n".join(broken)
