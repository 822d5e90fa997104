"""The offline preview of a manifest decides exactly what the server decides for the Pod made from it.

Each corpus AdmissionReview (`<repo>__<Kind>__<name>.json`) was built from a manifest in
`../shared/corpus/manifests/<repo>`: the server path (`admit`) answers the review, the preview reads
the manifest. Both must inject the same values with the same explanations and warn the same: the
preview applies what the API server does to a new Pod before the webhooks see it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.shared import CORPUS, needs_shared, review_files
from webhook.admission import admit, default_engine
from webhook.config.policies import bundled_policies
from webhook.core.snapshot import ClusterSnapshot, ProfileSnapshot
from webhook.offline.preview import run_preview
from webhook.offline.sources import TEMPLATE_PATHS

pytestmark = needs_shared
CLUSTER = ClusterSnapshot(policies=bundled_policies(), server_version=(1, 31))


def _images(pod_spec: Any) -> list[str]:
    if not isinstance(pod_spec, dict):
        return []
    found = [*(pod_spec.get("initContainers") or ()), *(pod_spec.get("containers") or ())]
    return [str(c.get("image")) for c in found if isinstance(c, dict)]


def manifest_for(review: Path) -> dict[str, Any] | None:
    """The manifest document the review's Pod was made from: by repository, kind, name and images
    (two samples of one repository may share a name)."""
    repo, kind, name = review.stem.split("__", 2)
    images = _images(json.loads(review.read_text())["request"]["object"]["spec"])
    for path in sorted((CORPUS / "manifests" / repo).rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:
            continue
        for document in documents:
            if (isinstance(document, dict) and document.get("kind") == kind
                    and (document.get("metadata") or {}).get("name") == name
                    and _images(_template_spec(document)) == images):
                return document
    return None


def _template_spec(document: dict[str, Any]) -> Any:
    found: Any = document
    for key in TEMPLATE_PATHS.get(str(document.get("kind")), ()):
        found = (found or {}).get(key) if isinstance(found, dict) else None
    return (found or {}).get("spec") if isinstance(found, dict) else None


PAIRS = [(review, found) for review in review_files() if (found := manifest_for(review)) is not None]


def server_says(review: Path) -> tuple[set[tuple[str, str]], list[str]]:
    """(pod-tailor.io/injected lines, warnings) of the server's answer."""
    answer = json.loads(admit(review.read_bytes(), cluster=CLUSTER, profiles=ProfileSnapshot(),
                              engine=default_engine()).body)["response"]  # fmt: skip
    ops = json.loads(base64.b64decode(answer["patch"])) if "patch" in answer else []
    pod = jsonpatch.apply_patch(json.loads(review.read_text())["request"]["object"], ops)
    return _lines(_injected(pod)), answer.get("warnings", [])


def _injected(pod: dict[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("annotations") or {}).get("pod-tailor.io/injected", ""))


def _lines(annotation: str) -> set[tuple[str, str]]:
    """The annotation's container lines (the header names the workload, which differs by design)."""
    return {tuple(line.split(": ", 1)) for line in annotation.splitlines()[1:]}  # type: ignore[misc]


def test_most_corpus_reviews_have_their_manifest() -> None:
    assert len(PAIRS) >= 100


@pytest.mark.parametrize(("review", "manifest"), PAIRS, ids=[review.stem for review, _ in PAIRS])
def test_preview_of_the_manifest_injects_what_the_server_injects(
    review: Path, manifest: dict[str, Any]
) -> None:
    namespace = json.loads(review.read_text())["request"]["namespace"]
    (found,) = run_preview(yaml.safe_dump(manifest), cluster=CLUSTER, profiles=ProfileSnapshot(),
                           namespace=namespace)  # fmt: skip
    pod = found.document
    for key in found.source.prefix:
        pod = pod[key]
    lines, warnings = server_says(review)
    assert _lines(_injected(pod)) == lines
    said = [w if w.startswith("pod-tailor") else f"pod-tailor: {w}" for w in found.decision.warnings]
    assert said == warnings
