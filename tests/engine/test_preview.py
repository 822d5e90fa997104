"""The offline preview: the same engine over manifests, reviews and Pods, as a person runs it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonpatch
import pytest
import yaml

from tests.shared import CORPUS, corpus_params, manifest_files, needs_shared
from webhook.commands import main
from webhook.config.policies import bundled_policies
from webhook.core.engine import decide
from webhook.core.model.pod import INJECTED_ANNOTATION
from webhook.core.snapshot import EMPTY_PROFILES, ClusterSnapshot
from webhook.profiles.store import FileStore, ProfileDocument

MANIFESTS = manifest_files()
REVIEW = CORPUS / "reviews" / "microservices-demo__Deployment__frontend.json"
WORKLOAD_KINDS = {
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
    "CronJob",
    "ReplicationController",
    "Pod",
}


@pytest.fixture(autouse=True)
def _no_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty store of the test's own (a missing default store would add a warning to stderr)."""
    FileStore(tmp_path / "empty.json").write(ProfileDocument({}, 0.0, "no profiles"))
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(tmp_path / "empty.json"))


def preview(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["preview", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _has_pods(path: Path) -> bool:
    try:
        return any(
            isinstance(doc, dict) and doc.get("kind") in WORKLOAD_KINDS
            for doc in yaml.safe_load_all(path.read_text())
        )
    except yaml.YAMLError:
        return False


@pytest.mark.parametrize(
    "path", corpus_params([p for p in MANIFESTS if _has_pods(p)], ids=lambda p: str(p.relative_to(CORPUS)))
)
def test_every_corpus_manifest_with_workloads_previews_to_valid_yaml(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = preview(capsys, "-f", str(path))
    refused = "the API server would refuse it" in err  # `containerPort: PORT`, left for sed to fill in
    assert code == (1 if refused else 0), err
    documents = [doc for doc in yaml.safe_load_all(out) if doc]
    assert documents
    tailored = [doc for doc in documents if INJECTED_ANNOTATION in json.dumps(doc)]
    assert tailored or "nothing to add" in err or refused


@needs_shared
def test_the_patch_for_a_review_is_exactly_what_the_engine_returns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = preview(capsys, "-f", str(REVIEW), "--patch")
    pod = json.loads(REVIEW.read_text())["request"]["object"]
    cluster = ClusterSnapshot(policies=bundled_policies())
    _, expected = decide(pod, namespace="default", cluster=cluster, profiles=EMPTY_PROFILES)
    assert code == 0
    assert json.loads(out) == list(expected.ops)
    assert jsonpatch.apply_patch(pod, json.loads(out))["spec"]["terminationGracePeriodSeconds"] == 35


def test_a_manifest_patch_is_prefixed_with_the_template_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
        "spec:\n  selector: {matchLabels: {app: web}}\n"
        "  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n"
        "      - {name: app, image: nginx, ports: [{containerPort: 80}]}\n"
    )
    code, out, _ = preview(capsys, "-f", str(manifest), "--patch")
    ops = json.loads(out)
    assert code == 0
    assert all(op["path"].startswith("/spec/template/") for op in ops)
    result = jsonpatch.apply_patch(yaml.safe_load(manifest.read_text()), ops)
    app = result["spec"]["template"]["spec"]["containers"][0]
    assert app["readinessProbe"]["tcpSocket"] == {"port": 80}
    assert (
        "workload=default/Deployment/web"
        in result["spec"]["template"]["metadata"]["annotations"][INJECTED_ANNOTATION]
    )


@needs_shared
def test_the_diff_shows_added_lines(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = preview(capsys, "-f", str(REVIEW), "--diff")
    assert code == 0
    assert "+++ Pod/frontend-756b45bfdd (tailored)" in out or "(tailored)" in out
    assert "+          preStop:" in out or "+      preStop:" in out or "preStop" in out


@needs_shared
@pytest.mark.parametrize(
    ("labels", "changed", "note"),
    [
        (["pod-tailor.io/mode=dry-run"], False, "Warning: pod-tailor would set server: startupProbe="),
        (["pod-tailor.io/mode=off"], False, "pod-tailor is off in this namespace"),
        (
            ["pod-tailor.io/mode=enforce", "pod-tailor.io/policy=nope"],
            True,
            "unknown policy 'nope'; used default",
        ),
    ],
)
def test_namespace_labels_choose_the_mode_and_policy(
    capsys: pytest.CaptureFixture[str], labels: list[str], changed: bool, note: str
) -> None:
    args = [arg for label in labels for arg in ("--namespace-label", label)]
    code, out, err = preview(capsys, "-f", str(REVIEW), "--patch", *args)
    assert code == 0
    assert bool(json.loads(out)) is changed
    assert note in err


# A document that cannot be used is left out (1); input with nothing to preview in it is refused (2).
@pytest.mark.parametrize(
    ("content", "code", "message"),
    [
        ("kind: [", 1, "input.yaml:1:8: expected the node content, but found '<stream end>'"),
        (
            "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
            2,
            "no Pod or pod template found (unsupported kind: Service)",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {}\n",
            1,
            "Deployment d has no pod template",
        ),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", 1, "Pod p has no spec"),
        ("- 1\n- 2\n", 1, "input.yaml:1: a list, not an object (apiVersion, kind, metadata)"),
        ("", 2, "input.yaml: no objects in input"),
    ],
)
def test_bad_input_gets_a_one_line_error_and_a_nonzero_exit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, code: int, message: str
) -> None:
    source = tmp_path / "input.yaml"
    source.write_text(content)
    exited, out, err = preview(capsys, "-f", str(source))
    assert exited == code
    assert out == ""
    assert message in err
    assert err.count("\n") == 1


def test_a_missing_file_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = preview(capsys, "-f", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert err == f"pod-tailor preview: -f {tmp_path / 'nope.yaml'}: no such file or directory\n"
