"""`kubectl pod-tailor preview`: real kubectl, a fake API server that calls the real webhook over HTTPS.

The fake API server applies the MutatingWebhookConfiguration entry from manifests/base (selectors,
rules, failurePolicy) and calls a running `pod-tailor serve`, so the plugin's two server-side dry runs
go through the same admission contract a cluster uses.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import yaml
from kubefake import FakeKube

from webhook.offline.dryrun import controller_pod
from webhook.offline.sources import load_documents, pod_sources
from webhook.server.certs import write_dev_certs

from .helpers import namespace, pod_tailor_serve, usable_kubectl, wait_until

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "scripts" / "kubectl-pod_tailor"
KUBECTL = usable_kubectl()
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl 1.27+ (kustomize v5 built in) not installed"
)

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
"""


def documented(command: str) -> list[str]:
    """The lines docs/preview.md shows under `$ command` (up to the next command or the block's end),
    without its `...` elisions and the lines that differ per run (a ReplicaSet hash, a hunk's header)."""
    text = (ROOT / "docs" / "preview.md").read_text(encoding="utf-8")
    _, found, rest = text.partition(f"$ {command}\n")
    assert found, f"docs/preview.md shows no `{command}`"
    shown = rest.split("```")[0].split("\n$ ")[0].splitlines()
    return [
        line
        for line in shown
        if line.strip() and line != "..." and "pod-template-hash" not in line and not line.startswith("@@")
    ]


def assert_as_documented(command: str, out: str) -> None:
    """Every line the docs show for `command` is in what it printed now: the page cannot go stale."""
    printed = set(out.splitlines())
    stale = [line for line in documented(command) if line not in printed]
    assert not stale, f"docs/preview.md shows lines `{command}` no longer prints: {stale}\n{out}"


def plugin(*args: str, kubeconfig: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PATH": f"{PLUGIN.parent}:{os.environ['PATH']}"}
    assert KUBECTL is not None
    return subprocess.run(
        [
            KUBECTL,
            "pod-tailor",
            "preview",
            *args,
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        input=stdin,
    )


STATEFULSET_IN_A_LIST = """\
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: store}
    spec:
      serviceName: store
      selector: {matchLabels: {app: store}}
      template:
        metadata: {labels: {app: store}}
        spec:
          containers: [{name: store, image: example/blobstore:2.1, ports: [{containerPort: 9000}]}]
      volumeClaimTemplates:
        - metadata: {name: data}
          spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    """A directory as `kubectl apply -f DIR -R` takes it: a Deployment and its Service, and a StatefulSet
    in a List one directory down (with a ConfigMap beside it that holds no Pod)."""
    root = tmp_path / "app"
    (root / "store").mkdir(parents=True)
    (root / "web.yaml").write_text(DEPLOYMENT)
    (root / "store" / "store.yaml").write_text(STATEFULSET_IN_A_LIST)
    (root / "store" / "config.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    return root


class TestControllerPod:
    @pytest.mark.parametrize(
        ("kind", "owner_kind", "path"),
        [
            ("Deployment", "ReplicaSet", ("spec", "template")),
            ("StatefulSet", "StatefulSet", ("spec", "template")),
            ("DaemonSet", "DaemonSet", ("spec", "template")),
            ("Job", "Job", ("spec", "template")),
            ("CronJob", "Job", ("spec", "jobTemplate", "spec", "template")),
        ],
    )
    def test_the_pod_carries_its_template_and_a_controller_owner(
        self, kind: str, owner_kind: str, path: tuple[str, ...]
    ) -> None:
        template = {
            "metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
        document: dict[str, object] = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "x"}}
        node = document
        for key in path[:-1]:
            node = cast(dict[str, object], node.setdefault(key, {}))
        node[path[-1]] = template
        (source,) = pod_sources(load_documents(yaml.safe_dump(document)))
        pod = controller_pod(source, namespace="shop")
        assert pod["kind"] == "Pod"
        assert pod["metadata"]["namespace"] == "shop"
        assert pod["spec"] == template["spec"]
        assert pod["metadata"]["labels"]["app"] == "x"
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["controller"]) == (owner_kind, True)
        assert "blockOwnerDeletion" not in owner

    def test_a_deployment_pod_is_named_after_its_replicaset(self) -> None:
        (source, *_) = pod_sources(load_documents(DEPLOYMENT))
        pod = controller_pod(source, namespace=None)
        template_hash = pod["metadata"]["labels"]["pod-template-hash"]
        assert pod["metadata"]["ownerReferences"][0]["name"] == f"web-{template_hash}"
        assert pod["metadata"]["generateName"] == f"web-{template_hash}-"
        assert "namespace" not in pod["metadata"]  # kubectl's current namespace applies

    def test_a_statefulset_pod_claims_each_template_as_its_controller_names_it(self) -> None:
        document = yaml.safe_load(STATEFULSET_IN_A_LIST)["items"][0]
        document["spec"]["template"]["spec"]["volumes"] = [
            {"name": "data", "emptyDir": {}},  # the controller puts the claim in its place
            {"name": "config", "configMap": {"name": "store"}},
        ]
        (source,) = pod_sources([document])
        pod = controller_pod(source, namespace="shop")
        assert pod["metadata"]["name"] == "store-0"
        assert pod["spec"]["volumes"] == [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-store-0"}},
            {"name": "config", "configMap": {"name": "store"}},
        ]

    def test_a_bare_pod_is_sent_as_written_without_server_fields(self) -> None:
        pod_yaml = (
            "kind: Pod\nmetadata: {name: p, uid: u, resourceVersion: '1'}\n"
            "spec: {containers: [{name: a}]}\n"
        )
        (source,) = pod_sources(load_documents(pod_yaml))
        pod = controller_pod(source, namespace="shop")
        assert pod["metadata"] == {"name": "p", "namespace": "shop"}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeKube, Path]]:
    """Fake API server + real pod-tailor serve, wired as the manifests wire them."""
    with FakeKube(token="") as kube:
        kube.put(namespace("shop", "dry-run"))
        kube.put(namespace("prod", "enforce"))
        kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        ca, cert, key = write_dev_certs(tmp_path / "tls")
        with pod_tailor_serve(cert=cert, key=key, kubeconfig=kubeconfig) as port:
            configuration = yaml.safe_load(
                (ROOT / "manifests/base/mutatingwebhookconfiguration.yaml").read_text()
            )
            (entry,) = configuration["webhooks"]
            kube.add_mutating_webhook(entry, url=f"https://127.0.0.1:{port}/mutate", ca_file=ca)
            wait_until(lambda: kube.open_watches() >= 2, what="pod-tailor watching the fake cluster")
            yield kube, kubeconfig


@needs_kubectl
class TestAgainstACluster:
    @pytest.fixture
    def manifest(self, tmp_path: Path) -> Path:
        path = tmp_path / "deploy.yaml"
        path.write_text(DEPLOYMENT)
        return path

    def test_an_enforced_namespace_shows_exactly_what_pod_tailor_injected(
        self, cluster: tuple[FakeKube, Path], manifest: Path
    ) -> None:
        kube, kubeconfig = cluster
        result = plugin("-f", str(manifest), "-n", "prod", kubeconfig=kubeconfig)
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert out.startswith("# Deployment/web -> Pod in namespace prod (server-side dry run)")
        assert "+    pod-tailor.io/injected: " in out
        assert "+    resources:" in out
        assert "+    readinessProbe:" in out
        assert "OFFLINE" not in out
        assert_as_documented("kubectl pod-tailor preview -f deploy.yaml -n prod", out)
        creates = [p for p in kube.requests_to("/api/v1/namespaces/prod/pods") if "dryRun=All" in p]
        assert len(creates) == 2  # the baseline (skipped) and the real one
        assert kube.get("pods", "web", namespace="prod") is None

    def test_a_dry_run_namespace_shows_the_warnings_and_no_change(
        self, cluster: tuple[FakeKube, Path], manifest: Path
    ) -> None:
        _, kubeconfig = cluster
        result = plugin("-f", str(manifest), "-n", "shop", kubeconfig=kubeconfig)
        assert result.returncode == 0, result.stderr
        assert "# pod-tailor changed nothing" in result.stdout
        assert "# warning: " in result.stdout
        assert_as_documented("kubectl pod-tailor preview -f deploy.yaml -n shop", result.stdout)

    def test_a_namespace_not_opted_in_is_left_alone(
        self, cluster: tuple[FakeKube, Path], manifest: Path
    ) -> None:
        _, kubeconfig = cluster
        result = plugin("-f", str(manifest), "-n", "other", kubeconfig=kubeconfig)
        assert result.returncode == 0, result.stderr
        assert "# pod-tailor changed nothing" in result.stdout
        assert "# warning" not in result.stdout


    def test_a_directory_is_read_as_kubectl_reads_it_every_workload_in_order(
        self, cluster: tuple[FakeKube, Path], app_dir: Path
    ) -> None:
        _, kubeconfig = cluster
        flat = plugin("-f", str(app_dir), "-n", "prod", kubeconfig=kubeconfig)
        result = plugin("-f", str(app_dir), "-R", "-n", "prod", kubeconfig=kubeconfig)
        assert (flat.returncode, result.returncode) == (0, 0), result.stderr
        headers = [line for line in result.stdout.splitlines() if line.startswith("# ") and "->" in line]
        assert headers == [
            f"# {app_dir}/store/store.yaml: StatefulSet/store -> Pod in namespace prod (server-side dry run)",
            f"# {app_dir}/web.yaml: Deployment/web -> Pod in namespace prod (server-side dry run)",
        ]  # kubectl's walk: names sorted, a directory where its name sorts
        # The StatefulSet's claims, as its controller names them: the server's class for it.
        assert "class=datastore (volumeClaimTemplates data)" in result.stdout
        assert "StatefulSet/store" not in flat.stdout  # without -R, the subdirectory is not read

    def test_stdin_is_read_once_and_previewed(self, cluster: tuple[FakeKube, Path]) -> None:
        _, kubeconfig = cluster
        result = plugin("-f", "-", "-n", "prod", kubeconfig=kubeconfig, stdin=STATEFULSET_IN_A_LIST)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("# StatefulSet/store -> Pod in namespace prod")


@needs_kubectl
@pytest.mark.parametrize("given", ["dir", "stdin"])
def test_without_cluster_access_the_offline_preview_reads_the_same_input(
    tmp_path: Path, app_dir: Path, given: str
) -> None:
    with FakeKube() as gone:
        kubeconfig = gone.write_kubeconfig(tmp_path / "kubeconfig")
    if given == "dir":
        result = plugin("-f", str(app_dir), "-R", kubeconfig=kubeconfig)
        shown = [f"+++ {app_dir}/store/store.yaml: StatefulSet/store (tailored)",
                 f"+++ {app_dir}/web.yaml: Deployment/web (tailored)"]  # fmt: skip
    else:
        result = plugin("-f", "-", kubeconfig=kubeconfig, stdin=STATEFULSET_IN_A_LIST)
        shown = ["+++ StatefulSet/store (tailored)"]
    assert result.returncode == 3, result.stderr  # the cluster was not asked
    assert "showing the OFFLINE preview instead" in result.stdout.splitlines()[0]
    assert [line for line in result.stdout.splitlines() if line.startswith("+++ ")] == shown


@needs_kubectl
def test_without_cluster_access_it_says_so_and_runs_the_offline_preview(tmp_path: Path) -> None:
    with FakeKube() as gone:
        kubeconfig = gone.write_kubeconfig(tmp_path / "kubeconfig")
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(DEPLOYMENT)
    result = plugin("-f", str(manifest), kubeconfig=kubeconfig)
    assert result.returncode == 3, result.stderr  # the cluster was not asked
    first = result.stdout.splitlines()[0]
    assert first.startswith("pod-tailor: no cluster access (dial tcp 127.0.0.1:")
    assert first.endswith("showing the OFFLINE preview instead")
    assert "+++ Deployment/web (tailored)" in result.stdout
    shown = [
        line for line in documented("kubectl pod-tailor preview -f deploy.yaml") if "dial tcp" not in line
    ]
    assert set(shown) <= set(result.stdout.splitlines()), shown


def test_the_plugin_rejects_unknown_commands() -> None:
    result = subprocess.run([str(PLUGIN), "apply"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "unknown command 'apply'" in result.stderr
