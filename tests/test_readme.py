"""The README is a manual: every command in its shell blocks is run here, as written, or by the named test.

Commands that need a real cluster run against the fake API server (real kubectl); `apply -k` and
`delete -k` are held to `kubectl kustomize` (what they send) and `port-forward` to the same `/readyz`
request made to a local server. A command added to the README without a line in `EXERCISED` fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubefake import FakeKube

from tests.cluster.helpers import free_port, usable_kubectl

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
KUBECTL = usable_kubectl()
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl 1.27+ not installed")

# README command (a regular expression over the whole command) -> the test here that runs it.
SERVING = "TestTheTwoCommands::test_scripts_run_serves_the_sample_review_with_the_readme_curl"
INSTALL = "TestInstall::test_certs_then_the_overlays_render"
FAKE = "TestAgainstTheFakeApiServer::"
EXERCISED = {
    r"scripts/run": SERVING,
    r"scripts/test": "TestTheTwoCommands::test_ci_runs_exactly_the_readme_test_command",
    r"curl -sS --cacert \.dev/ca\.crt .*/mutate.*": SERVING,
    r"curl -sk https://localhost:8443/readyz": SERVING,
    r"kubectl -n pod-tailor port-forward deploy/pod-tailor 8443 &": SERVING,  # the same /readyz, locally
    r"\.venv/bin/pod-tailor preview -f deploy\.yaml --diff": "TestPreview::test_the_preview_shows_a_diff",
    r"\.venv/bin/pod-tailor certs": INSTALL,
    r"kubectl apply -k manifests/overlays/(cert-manager|self-signed)": INSTALL,
    r"kubectl -n pod-tailor rollout status deploy/pod-tailor": FAKE + "test_rollout_status_waits",
    r"kubectl label namespace shop .*": FAKE + "test_opting_a_namespace_in_labels_it",
    r"kubectl pod-tailor preview -f deploy\.yaml -n shop": "tests/cluster/test_kubectl_plugin.py",
    r"kubectl -n shop rollout restart deploy/web": FAKE + "test_rollout_restart_changes_the_template",
    r"kubectl -n shop get pod .* -o jsonpath=.*": FAKE + "test_reading_the_annotation_prints_it",
}


def readme_commands() -> list[str]:
    """Every command of the README's ```sh blocks: continuation lines joined, comments dropped."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command:
                commands.append(" ".join(command.split()))
    return commands


def readme_command(pattern: str) -> str:
    found = [command for command in readme_commands() if re.fullmatch(pattern, command)]
    assert found, f"no README command matches {pattern!r}"
    return found[0]


class TestTheManual:
    def test_the_readme_stays_a_manual_of_at_most_250_lines(self) -> None:
        assert len(README.read_text(encoding="utf-8").splitlines()) <= 250

    def test_every_readme_command_is_exercised_by_a_named_test(self) -> None:
        commands = readme_commands()
        assert len(commands) >= 10
        for command in commands:
            assert any(re.fullmatch(pattern, command) for pattern in EXERCISED), command

    @pytest.mark.parametrize("where", sorted(set(EXERCISED.values())))
    def test_every_named_test_exists(self, where: str) -> None:
        if where.startswith("tests/"):
            assert (ROOT / where).is_file()
            return
        cls, name = where.split("::")
        assert callable(getattr(globals()[cls], name))

    def test_every_link_in_the_readme_and_docs_leads_to_a_file(self) -> None:
        pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
        for page in pages:
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
                if target.startswith(("http://", "https://")):
                    continue
                assert (page.parent / target).exists(), f"{page.name}: {target}"


@pytest.fixture
def scripts_run(tmp_path: Path) -> Iterator[int]:
    """`scripts/run` as the README starts it, on a free port; yields the port once it answers."""
    port = free_port()
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("POD_TAILOR_", "KUBERNETES_"))
    }
    env |= {"POD_TAILOR_PORT": str(port), "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    process = subprocess.Popen(
        ["bash", "scripts/run", "--log-level", "warning"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(
            ["curl", "-sk", f"https://localhost:{port}/healthz"], capture_output=True
        ).returncode:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "scripts/run did not start within 60 s"
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def run(command: str, *, port: int | None = None, cwd: Path = ROOT, **env: str) -> str:
    """A README command as written (the port swapped for the test's), through the shell."""
    if port is not None:
        command = command.replace("8443", str(port))
    venv = str(ROOT / ".venv" / "bin")
    result = subprocess.run(
        command,
        shell=True,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"PATH": f"{ROOT / 'scripts'}:{venv}:{os.environ['PATH']}"} | env,
    )
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
class TestTheTwoCommands:
    def test_scripts_run_serves_the_sample_review_with_the_readme_curl(self, scripts_run: int) -> None:
        answer = json.loads(run(readme_command(r"curl -sS --cacert .*/mutate.*"), port=scripts_run))
        assert answer["response"]["allowed"] is True
        assert answer["response"]["patchType"] == "JSONPatch"
        ready = json.loads(run(readme_command(r"curl -sk .*/readyz"), port=scripts_run))
        assert ready["pending"] == []

    def test_ci_runs_exactly_the_readme_test_command(self) -> None:
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        assert "exec bash scripts/test" in ci
        assert "scripts/test" in readme_commands()


class TestPreview:
    def test_the_preview_shows_a_diff(self, tmp_path: Path) -> None:
        (tmp_path / "deploy.yaml").write_text(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
            "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
            "    spec:\n      containers:\n"
            "      - {name: app, image: nginx:1.27, ports: [{containerPort: 8080}]}\n"
        )
        command = readme_command(r"\.venv/bin/pod-tailor preview .*").replace(".venv/bin/", "")
        shown = run(command, cwd=tmp_path, POD_TAILOR_PROFILES=str(tmp_path / "none.json"))
        added = [line[1:].strip() for line in shown.splitlines() if line.startswith("+")]
        assert {"cpu: 100m", "readinessProbe:", "terminationGracePeriodSeconds: 35"} <= set(added)


@needs_kubectl
class TestInstall:
    def test_certs_then_the_overlays_render(self, tmp_path: Path) -> None:
        """`certs` writes into the overlay; what `apply -k` would send is what `kubectl kustomize` prints."""
        work = tmp_path / "repo"
        shutil.copytree(ROOT / "manifests", work / "manifests")
        run(readme_command(r"\.venv/bin/pod-tailor certs").replace(".venv/bin/", ""), cwd=work)
        for overlay in ("cert-manager", "self-signed"):
            command = readme_command(rf"kubectl apply -k manifests/overlays/{overlay}")
            rendered = run(f"{KUBECTL} kustomize {shlex.split(command)[-1]}", cwd=work)
            assert "kind: MutatingWebhookConfiguration" in rendered
        assert "caBundle: " in run(f"{KUBECTL} kustomize manifests/overlays/self-signed", cwd=work)


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    """The fake API server accepting any client: kubectl sends no bearer token over plain HTTP."""
    with FakeKube(token="") as fake:
        yield fake


@needs_kubectl
class TestAgainstTheFakeApiServer:
    def kubectl(self, command: str, kubeconfig: Path) -> str:
        return run(command.replace("kubectl ", f"{KUBECTL} --kubeconfig {kubeconfig} ", 1))

    def test_opting_a_namespace_in_labels_it(self, kube: FakeKube, kubeconfig: Path) -> None:
        """dry-run, then enforce with --overwrite, then a named policy: the labels the webhook reads."""
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        labels = [c for c in readme_commands() if c.startswith("kubectl label namespace shop")]
        assert len(labels) == 3
        for command in labels:
            self.kubectl(command, kubeconfig)
        found = kube.get("namespaces", "shop")
        assert found is not None
        expected = {"pod-tailor.io/mode": "enforce", "pod-tailor.io/policy": "batch"}
        assert expected.items() <= found["metadata"]["labels"].items()

    def test_rollout_restart_changes_the_template(self, kube: FakeKube, kubeconfig: Path) -> None:
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        kube.put(_deployment("shop", "web"))
        self.kubectl(readme_command(r"kubectl -n shop rollout restart deploy/web"), kubeconfig)
        found = kube.get("deployments", "web", namespace="shop")
        assert found is not None
        assert "kubectl.kubernetes.io/restartedAt" in found["spec"]["template"]["metadata"]["annotations"]

    def test_rollout_status_waits(self, kube: FakeKube, kubeconfig: Path) -> None:
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pod-tailor"}})
        kube.put(_deployment("pod-tailor", "pod-tailor", ready=True))
        shown = self.kubectl(readme_command(r"kubectl -n pod-tailor rollout status .*"), kubeconfig)
        assert "successfully rolled out" in shown

    def test_reading_the_annotation_prints_it(self, kube: FakeKube, kubeconfig: Path) -> None:
        command = readme_command(r"kubectl -n shop get pod .*")
        name = shlex.split(command)[5]
        text = "policy=default workload=shop/Deployment/web qos=Burstable"
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        kube.put(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": "shop",
                    "annotations": {"pod-tailor.io/injected": text},
                },
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            }
        )
        assert self.kubectl(command, kubeconfig) == text


def _deployment(namespace: str, name: str, *, ready: bool = False) -> dict[str, object]:
    replicas = 2
    status = (
        {
            "observedGeneration": 1,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
        }
        if ready
        else {}
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
        "status": status,
    }


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
