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
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubefake import FakeKube

from tests.cluster.helpers import pod_tailor_serve, usable_kubectl
from tests.tools import free_port
from webhook.core.model.pod import INJECTED_ANNOTATION
from webhook.offline.dryrun import controller_pod
from webhook.offline.sources import load_documents, pod_sources
from webhook.server.certs import write_dev_certs

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
    r"pod-tailor preview -f docs/examples/web\.yaml --diff": "TestPreview::test_the_preview_shows_a_diff",
    r"pod-tailor certs": INSTALL,
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
        assert answer["allowed"] is True  # the response, its patch decoded
        assert answer["patchType"] == "JSONPatch"
        assert "/spec/terminationGracePeriodSeconds" in {op["path"] for op in answer["patch"]}
        ready = json.loads(run(readme_command(r"curl -sk .*/readyz"), port=scripts_run))
        assert ready["pending"] == []

    def test_ci_runs_exactly_the_readme_test_command(self) -> None:
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        assert "exec bash scripts/test" in ci
        assert "scripts/test" in readme_commands()


class TestPreview:
    def test_the_preview_shows_a_diff(self, tmp_path: Path) -> None:
        command = readme_command(r"pod-tailor preview .*")
        shown = run(command, POD_TAILOR_PROFILES=str(tmp_path / "none.json"))
        added = [line[1:].strip() for line in shown.splitlines() if line.startswith("+")]
        assert {"cpu: 100m", "readinessProbe:", "terminationGracePeriodSeconds: 35"} <= set(added)


@needs_kubectl
class TestInstall:
    def test_certs_then_the_overlays_render(self, tmp_path: Path) -> None:
        """`certs` writes into the overlay; what `apply -k` would send is what `kubectl kustomize` prints."""
        work = tmp_path / "repo"
        shutil.copytree(ROOT / "manifests", work / "manifests")
        run(readme_command(r"pod-tailor certs"), cwd=work)
        for overlay in ("cert-manager", "self-signed"):
            command = readme_command(rf"kubectl apply -k manifests/overlays/{overlay}")
            rendered = run(f"{KUBECTL} kustomize {shlex.split(command)[-1]}", cwd=work)
            assert "kind: MutatingWebhookConfiguration" in rendered
        assert "caBundle: " in run(f"{KUBECTL} kustomize manifests/overlays/self-signed", cwd=work)


@dataclass
class Cluster:
    """The fake API server calling a real `pod-tailor serve` as the README installs it (the webhook entry
    of manifests/base), the webhook watching that same API server."""

    kube: FakeKube
    kubeconfig: Path
    port: int

    def kubectl(self, command: str) -> str:
        assert KUBECTL is not None
        return run(command.replace("kubectl ", f"{KUBECTL} --kubeconfig {self.kubeconfig} ", 1))

    def create(self, pod: dict[str, Any], *, dry_run: bool = False) -> tuple[dict[str, Any], list[str]]:
        """POST a Pod as a controller would; the stored Pod (after admission) and the warnings."""
        namespace = pod["metadata"]["namespace"]
        request = urllib.request.Request(
            f"{self.kube.url}/api/v1/namespaces/{namespace}/pods{'?dryRun=All' if dry_run else ''}",
            data=json.dumps(pod).encode(), headers={"Content-Type": "application/json"}, method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            warnings = [re.sub(r'^299 - "(.*)"$', r"\1", w) for w in answer.headers.get_all("Warning") or []]
            return json.loads(answer.read()), warnings

    def decided(self, pod: dict[str, Any], expected: Callable[[dict[str, Any], list[str]], bool]) -> None:
        """Wait until the webhook's watch has seen the namespace's labels: a dry-run create says so."""
        deadline = time.monotonic() + 20
        while not expected(*self.create(pod, dry_run=True)):
            assert time.monotonic() < deadline, "the webhook did not take up the namespace's labels"
            time.sleep(0.1)


@pytest.fixture(scope="class")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("readme-cluster")
    with FakeKube(token="") as kube:
        kubeconfig = kube.write_kubeconfig(tmp / "kubeconfig")
        ca, cert, key = write_dev_certs(tmp / "tls")
        with pod_tailor_serve(cert=cert, key=key, kubeconfig=kubeconfig) as port:
            manifest = ROOT / "manifests/base/mutatingwebhookconfiguration.yaml"
            configuration = yaml.safe_load(manifest.read_text())
            (entry,) = configuration["webhooks"]
            kube.add_mutating_webhook(entry, url=f"https://127.0.0.1:{port}/mutate", ca_file=ca)
            yield Cluster(kube, kubeconfig, port)


def web_deployment() -> dict[str, Any]:
    """The README's `deploy/web` in `shop`: nothing sized, serving on 8080."""
    deployment: dict[str, Any] = yaml.safe_load(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop, generation: 1}\n"
        "spec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n"
        "    metadata: {labels: {app: web}}\n    spec:\n      containers:\n"
        "      - {name: app, image: nginx:1.27, ports: [{containerPort: 8080}]}\n"
    )
    return deployment


def replica_of(deployment: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """The Pod the Deployment's ReplicaSet creates from its current template (named `name` if given)."""
    (source,) = pod_sources(load_documents(yaml.safe_dump(deployment)))
    pod: dict[str, Any] = controller_pod(source, namespace=deployment["metadata"]["namespace"])
    if name is not None:
        pod["metadata"].pop("generateName", None)
        pod["metadata"]["name"] = name
    return pod


def injected(pod: dict[str, Any]) -> str | None:
    return (pod["metadata"].get("annotations") or {}).get(INJECTED_ANNOTATION)


def shop(cluster: Cluster, **labels: str) -> None:
    cluster.kube.put({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": "shop", "labels": labels}})


@needs_kubectl
class TestAgainstTheFakeApiServer:
    """Each README command against the fake API server, and what pod-tailor then does to the next Pod."""

    def test_opting_a_namespace_in_labels_it(self, cluster: Cluster) -> None:
        """dry-run warns and changes nothing; enforce patches; the policy label picks the policy.

        Each step is read from a Pod the webhook answered, so a README label the webhook does not act on
        (a wrong key or value) fails here, not only a kubectl that cannot label.
        """
        shop(cluster)
        pod = replica_of(web_deployment())
        stored, warnings = cluster.create(pod, dry_run=True)
        assert injected(stored) is None  # not opted in: the webhook is not even called
        assert not warnings
        dry_run, enforce, batch = (
            command for command in readme_commands() if command.startswith("kubectl label namespace shop")
        )
        cluster.kubectl(dry_run)
        cluster.decided(pod, lambda stored, warnings: any(w.startswith("pod-tailor") for w in warnings))
        stored, warnings = cluster.create(pod, dry_run=True)
        assert injected(stored) is None
        cluster.kubectl(enforce)
        cluster.decided(pod, lambda stored, warnings: injected(stored) is not None)
        assert str(injected(cluster.create(pod, dry_run=True)[0])).startswith("policy=default ")
        cluster.kube.put({"apiVersion": "v1", "kind": "ConfigMap",  # a named policy (docs/install.md)
                          "metadata": {"name": "pod-tailor-policy", "namespace": "pod-tailor"},
                          "data": {"policy.yaml": "policies:\n  batch:\n    features: {probes: false}\n"}})
        cluster.kubectl(batch)
        cluster.decided(pod, lambda stored, warnings: str(injected(stored)).startswith("policy=batch "))

    def test_rollout_restart_changes_the_template(self, cluster: Cluster) -> None:
        """A Pod created before the namespace was enforced keeps its values; the restart's new Pods are
        tailored: the README's "tailor existing workloads now"."""
        shop(cluster)
        deployment = web_deployment()
        cluster.kube.put(deployment)
        before, _ = cluster.create(replica_of(deployment))
        shop(cluster, **{"pod-tailor.io/mode": "enforce"})
        cluster.decided(replica_of(deployment), lambda stored, warnings: injected(stored) is not None)
        cluster.kubectl(readme_command(r"kubectl -n shop rollout restart deploy/web"))
        restarted = cluster.kube.get("deployments", "web", namespace="shop")
        assert restarted is not None
        assert "kubectl.kubernetes.io/restartedAt" in restarted["spec"]["template"]["metadata"]["annotations"]
        after, _ = cluster.create(replica_of(restarted))
        assert injected(before) is None
        assert "workload=shop/Deployment/web" in str(injected(after))
        assert after["spec"]["containers"][0]["resources"]["requests"]
        assert "kubectl.kubernetes.io/restartedAt" in after["metadata"]["annotations"]

    def test_rollout_status_waits(self, cluster: Cluster) -> None:
        """`rollout status` waits until pod-tailor's readiness probe, as the manifest writes it, passes
        against the real server; a probe path, port or scheme the server does not answer never ends it."""
        deployment = yaml.safe_load((ROOT / "manifests/base/webhook-deployment.yaml").read_text())
        deployment["metadata"]["generation"] = 1
        cluster.kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pod-tailor"}})
        cluster.kube.put(deployment)
        assert KUBECTL is not None
        command = readme_command(r"kubectl -n pod-tailor rollout status .*")
        waiting = subprocess.Popen(
            [*shlex.split(command.replace("kubectl ", f"{KUBECTL} --kubeconfig {cluster.kubeconfig} ", 1)),
             "--timeout=60s"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            time.sleep(1)
            assert waiting.poll() is None, "rollout status did not wait for an unready Deployment"
            (container,) = deployment["spec"]["template"]["spec"]["containers"]
            probe = container["readinessProbe"]["httpGet"]
            ports = {port["name"]: port["containerPort"] for port in container["ports"]}
            assert ports[probe["port"]] == 8443  # the port `serve` listens on in the manifest
            url = f"{probe['scheme'].lower()}://127.0.0.1:{cluster.port}{probe['path']}"
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # as the kubelet probes
            deadline = time.monotonic() + 30
            while True:  # the kubelet: Ready once the probe answers 2xx
                try:
                    with urllib.request.urlopen(url, timeout=5, context=context) as answer:
                        if 200 <= answer.status < 400:
                            break
                except (urllib.error.URLError, OSError):
                    pass
                assert time.monotonic() < deadline, f"{url} never answered 2xx"
                time.sleep(0.2)
            replicas = deployment["spec"]["replicas"]
            deployment["status"] = {"observedGeneration": 1, "replicas": replicas,
                                    "updatedReplicas": replicas, "readyReplicas": replicas,
                                    "availableReplicas": replicas}
            cluster.kube.put(deployment)
            shown, _ = waiting.communicate(timeout=60)
        finally:
            waiting.kill()
        assert waiting.returncode == 0
        assert "Waiting for deployment" in shown
        assert "successfully rolled out" in shown

    def test_reading_the_annotation_prints_it(self, cluster: Cluster) -> None:
        """The README's command prints the annotation the webhook wrote on a Pod it was sent without one,
        and that annotation reads like the README's example (same header, same values in each line)."""
        shop(cluster, **{"pod-tailor.io/mode": "enforce"})
        command = readme_command(r"kubectl -n shop get pod .*")
        pod = replica_of(web_deployment(), name=shlex.split(command)[5])
        cluster.decided(pod, lambda stored, warnings: injected(stored) is not None)
        stored, _ = cluster.create(pod)
        assert injected(pod) is None
        written = injected(stored)
        assert written is not None
        shown = cluster.kubectl(command)
        assert shown == written
        example = re.search(r"```text\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
        assert example is not None
        assert shown.splitlines()[0] == example[1].splitlines()[0]
        assert [_fields(line) for line in shown.splitlines()] == [
            _fields(line) for line in example[1].splitlines()
        ]


def _fields(line: str) -> list[str]:
    """What a line of the annotation sets, without values or reasons: `app`, `requests.cpu`, ..."""
    depth, outside = 0, ""
    for char in line:  # the reasons in parentheses hold `;` and `=` of their own
        depth += {"(": 1, ")": -1}.get(char, 0)
        outside += char if depth == 0 and char not in "()" else ""
    head, _, rest = outside.partition(": ")
    if not rest or "=" in head:  # the header line: policy=... workload=... qos=...
        return [part.split("=")[0] for part in outside.split()]
    return [head, *(item.split("=")[0].strip() for item in rest.split("; "))]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
