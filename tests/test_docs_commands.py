"""Every shell command in docs/ is run by the tests where it can run here, like the README's.

Each command of a ```sh/```bash/```console block (`$` lines of console blocks, every line of sh blocks) is
matched by one row below: the test that runs it as written (or runs what it does against the fake API
server / a local server, as tests/test_readme.py explains), an example block that scripts/docs.py re-runs
(tests/test_docs.py fails when its output is stale), or a reason it cannot run here. A command added to a
page without a row fails this test.
"""

from __future__ import annotations

import argparse
import ast
import base64
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubefake import FakeKube

from tests.cluster.helpers import usable_kubectl
from webhook.server.selfsigned import write_certificates

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED = "generated example (scripts/docs.py runs it; tests/test_docs.py checks its output)"
EXAMPLE_MARK = "<!-- generated example: scripts/docs.py runs these commands in docs/examples -->"
README_SERVING = (
    "tests/test_readme.py::TestTheTwoCommands::test_scripts_run_serves_the_sample_review_with_the_readme_curl"
)
README_FAKE = "tests/test_readme.py::TestAgainstTheFakeApiServer::"
PLUGIN = "tests/cluster/test_kubectl_plugin.py::"
INSTALL = "tests/test_readme.py::TestInstall::test_certs_then_the_overlays_render"
OVERLAYS = "tests/cluster/test_documented_overlays.py::TestEachDocumentedOverlay"

SECRET = (
    "tests/test_docs_commands.py::test_the_documented_secret_holds_every_key_the_credentials_component_reads"
)

# (page, command regular expression) -> where it is run, or "not here: why".
EXERCISED: dict[tuple[str, str], str] = {
    ("admission.md", r"curl -sS --cacert \.dev/ca\.crt .*/mutate\?timeout=10s'"): README_SERVING,
    ("install.md", r"docker build -t \S+ \."): (
        "not here: needs a container engine's daemon, absent on the test machine"
    ),
    ("install.md", r"docker push \S+"): "not here: needs a registry the reader can write to",
    ("install.md", r"kustomize edit set image ghcr\.io/pod-tailor/pod-tailor=\S+"): OVERLAYS,
    ("install.md", r"kubectl -n pod-tailor create secret generic pod-tailor-prometheus .*"): SECRET,
    ("install.md", r"kubectl apply -k my-pod-tailor"): OVERLAYS,
    ("install.md", r"kubectl apply -k manifests/overlays/(cert-manager|self-signed)"): INSTALL,
    ("install.md", r"kubectl -n pod-tailor rollout status deploy/pod-tailor"): README_FAKE
    + "test_rollout_status_waits",
    ("install.md", r"pod-tailor certs"): INSTALL,
    ("install.md", r"kubectl -n pod-tailor port-forward deploy/pod-tailor 8443 &"): README_SERVING,
    ("install.md", r"curl -sk https://localhost:8443/readyz"): README_SERVING,
    ("leader-election.md", r"pod-tailor recommend --profiles-store kubernetes --leader-elect .*"): (
        "tests/test_docs_commands.py::test_a_synopsis_names_only_options_the_verb_has"
    ),
    ("preview.md", r"pod-tailor preview -f web\.yaml .*"): GENERATED,
    ("preview.md", r"pod-tailor preview -f app(/deploy\.yaml)? \| grep .*"): GENERATED,
    ("preview.md", r"pod-tailor preview -f app/ -R \| kubectl (diff|apply) -f -"): (
        "tests/cli/test_preview_inputs.py::TestTheOutputPipesIntoKubectl"
    ),
    ("preview.md", r"kubectl pod-tailor preview -f deploy\.yaml -n (prod|shop)"): PLUGIN
    + "TestAgainstACluster",
    ("preview.md", r"kubectl pod-tailor preview -f deploy\.yaml"): PLUGIN
    + "test_without_cluster_access_it_says_so_and_runs_the_offline_preview",
    ("profiles.md", r"pod-tailor profiles build --prometheus-url \S+ --namespace shop .*"): (
        "tests/profiles/test_cli.py"
    ),
    ("profiles.md", r"pod-tailor profiles show shop(/jvm -o json)?"): "tests/profiles/test_cli.py",
    ("profiles.md", r"pod-tailor profiles build --prometheus-url \S+ --namespace partial -q"): (
        "tests/profiles/test_cli.py"
    ),
    ("prometheus-connection.md", r"kubectl -n pod-tailor create secret generic pod-tailor-prometheus .*"): (
        SECRET
    ),
    ("openreports.md", r"kubectl get reports? .*"): (
        "tests/test_docs_commands.py::test_the_documented_report_commands_show_what_pod_tailor_reports_wrote"
    ),
    ("report-and-dashboard.md", r"pod-tailor report -f shop --profiles-path profiles\.json"): GENERATED,
    ("report-and-dashboard.md", r"kubectl -n pod-tailor port-forward deploy/pod-tailor-recommender 8080"): (
        "tests/dashboard"
    ),
}


def page_commands() -> list[tuple[str, str, bool]]:
    """(page, command, in a generated example block) for every shell command of docs/*.md."""
    found = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"(<!--[^\n]*-->\n)?```(sh|bash|shell|console)\n(.*?)```", text, flags=re.S):
            generated = match[1] is not None and match[1].strip() == EXAMPLE_MARK
            lines = match[3].replace("\\\n", " ").splitlines()
            if match[2] == "console":
                lines = [line[2:] for line in lines if line.startswith("$ ")]
            for line in lines:
                command = re.sub(r"\s+#.*$", "", line).strip()
                if command and not command.startswith("#"):
                    found.append((page.name, " ".join(command.split()), generated))
    return found


def row(page: str, command: str) -> str | None:
    for (where, pattern), by in EXERCISED.items():
        if where == page and re.fullmatch(pattern, command):
            return by
    return None


def test_every_command_of_the_docs_has_a_row() -> None:
    commands = page_commands()
    assert len(commands) >= 20
    missing = [f"{page}: {command}" for page, command, _ in commands if row(page, command) is None]
    assert not missing, "commands in docs/ that no test runs:\n" + "\n".join(missing)


def test_every_row_matches_a_command_still_in_the_docs() -> None:
    commands = page_commands()
    unused = [
        key
        for key in EXERCISED
        if not any(page == key[0] and re.fullmatch(key[1], command) for page, command, _ in commands)
    ]
    assert not unused


def test_a_command_said_to_be_generated_sits_in_a_generated_block() -> None:
    for page, command, generated in page_commands():
        assert (row(page, command) == GENERATED) == generated, f"{page}: {command}"


def test_commands_not_run_here_are_few_and_say_why() -> None:
    skipped = [by for by in EXERCISED.values() if by.startswith("not here")]
    assert len(skipped) <= 2
    assert all(len(by) > len("not here: ") + 20 for by in skipped)


def _defined(path: Path, names: list[str]) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scope: list[ast.stmt] = tree.body
    for name in names:
        found = [
            node
            for node in scope
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
        ]
        if not found:
            return False
        scope = found[0].body
    return True


@pytest.mark.parametrize("where", sorted({by for by in EXERCISED.values() if by.startswith("tests/")}))
def test_every_named_test_exists(where: str) -> None:
    path, *names = where.split("::")
    assert (ROOT / path).exists(), path
    names = [name for name in names if name]
    if names:
        assert _defined(ROOT / path, names), where


def test_a_synopsis_names_only_options_the_verb_has() -> None:
    """A usage line in the docs (`[--opt VALUE]` brackets) names real options of its verb."""
    from webhook.commands import build_parser

    for page, command, _ in page_commands():
        if not command.startswith("pod-tailor ") or "[" not in command:
            continue
        words = command.replace("[", " ").replace("]", " ").split()
        verb = words[1]
        subparsers = next(
            action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)
        )
        known = {name for action in subparsers.choices[verb]._actions for name in action.option_strings}
        unknown = [word for word in words if word.startswith("--") and word not in known]
        assert not unknown, f"{page}: {command}: {unknown}"


def documented(page: str, pattern: str) -> str:
    found = [c for where, c, _ in page_commands() if where == page and re.fullmatch(pattern, c)]
    assert found, f"{page} shows no command matching {pattern!r}"
    return found[0]


@pytest.mark.skipif(usable_kubectl() is None, reason="kubectl 1.27+ not installed")
@pytest.mark.parametrize("page", ["install.md", "prometheus-connection.md"])
def test_the_documented_secret_holds_every_key_the_credentials_component_reads(
    page: str, tmp_path: Path
) -> None:
    """The page's `kubectl create secret` runs as written (real kubectl, the fake API server): the Secret it
    makes has the username the component's variables read and a file for each *_FILE path it mounts."""
    command = documented(page, r"kubectl -n pod-tailor create secret generic pod-tailor-prometheus .*")
    (tmp_path / "password").write_text("s3cret\n")
    write_certificates(tmp_path / "pki")
    shutil.copy(tmp_path / "pki" / "ca.crt", tmp_path / "ca.crt")
    kubectl = usable_kubectl()
    assert kubectl is not None
    with FakeKube(token="") as kube:  # kubectl sends no token over plain http
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pod-tailor"}})
        config = kube.write_kubeconfig(tmp_path / "kubeconfig")
        done = subprocess.run(
            [kubectl, "--kubeconfig", str(config), *shlex.split(command)[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        secret = kube.get("secrets", "pod-tailor-prometheus", namespace="pod-tailor")
    assert secret is not None
    data = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert data["username"] == "pod-tailor"
    assert data["password"] == "s3cret\n"
    component = yaml.safe_load_all(
        (ROOT / "manifests/components/prometheus-credentials/recommender-credentials.yaml").read_text()
    )
    variables = [
        variable
        for document in component
        for container in document["spec"]["template"]["spec"]["containers"]
        for variable in container.get("env", ())
    ]
    refs = [v["valueFrom"]["secretKeyRef"] for v in variables if "secretKeyRef" in v.get("valueFrom", ())]
    keys = {ref["key"] for ref in refs}
    files = {Path(v["value"]).name for v in variables if v["name"].endswith("_FILE") and "value" in v}
    assert keys
    assert files
    assert keys | files <= set(data), (keys | files) - set(data)


@pytest.mark.skipif(usable_kubectl() is None, reason="kubectl 1.27+ not installed")
def test_the_documented_report_commands_show_what_pod_tailor_reports_wrote(tmp_path: Path) -> None:
    """docs/openreports.md's two kubectl commands, as written, against the fake API server serving the
    pinned CRD, after a real `pod-tailor reports` process wrote the workload's Report."""
    from tests.cluster.helpers import wait_until
    from tests.report.fleet import container, namespace, workload
    from tests.reports.kit import report_crd

    kubectl = usable_kubectl()
    assert kubectl is not None
    with FakeKube(token="", garbage_collection=True) as kube:  # kubectl sends no token over plain http
        kube.serve_version(1, 33)
        kube.install_crd(report_crd())
        kube.put(namespace("shop", "dry-run"))
        kube.put(workload("Deployment", "web", container(port=8080)))
        config = kube.write_kubeconfig(tmp_path / "kubeconfig")
        process = subprocess.Popen(
            [sys.executable, "-m", "webhook", "reports", "--kubeconfig", str(config),
             "--profiles-path", str(tmp_path / "profiles.json"), "--tick", "0.2"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_until(lambda: kube.get("reports", "pod-tailor-deployment-web", namespace="shop"),
                       timeout=60, what="the report")  # fmt: skip
        finally:
            process.terminate()
            process.wait(timeout=30)
        shown = []
        for pattern in (r"kubectl get reports -n shop -l \S+", r"kubectl get report \S+ -n shop -o yaml"):
            command = documented("openreports.md", pattern)
            done = subprocess.run(
                [kubectl, "--kubeconfig", str(config), *shlex.split(command)[1:]],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            shown.append(done.stdout)
    assert "pod-tailor-deployment-web" in shown[0]
    written = yaml.safe_load(shown[1])
    assert written["kind"] == "Report"
    assert written["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pod-tailor"
    assert {result["policy"] for result in written["results"]} == {"pod-tailor"}
