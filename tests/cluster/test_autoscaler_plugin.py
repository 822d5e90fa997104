"""`kubectl pod-tailor preview` against a cluster with an HPA and a VPA: the reasons reach the person.

Real kubectl, the fake API server calling a real `pod-tailor serve` that watches the same fake
(as tests/cluster/test_kubectl_plugin.py wires it), with an HPA in an enforced namespace and a VPA in
a dry-run one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubefake import FakeKube

from tests.autoscalers.kit import VPA_PREFIX, hpa, vpa
from webhook.server.certs import write_dev_certs

from .helpers import namespace, pod_tailor_serve, wait_until
from .test_kubectl_plugin import DEPLOYMENT, ROOT, needs_kubectl, plugin


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Path]:
    with FakeKube(token="") as kube:
        kube.put(namespace("shop", "dry-run"))
        kube.put(namespace("prod", "enforce"))
        kube.register(VPA_PREFIX, "verticalpodautoscalers", "VerticalPodAutoscaler")
        kube.put(hpa(namespace="prod"))
        kube.put(vpa(namespace="shop", policies=[{"containerName": "*", "controlledResources": ["memory"]}]))
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        ca, cert, key = write_dev_certs(tmp_path / "tls")
        with pod_tailor_serve(cert=cert, key=key, kubeconfig=kubeconfig) as port:
            webhooks = ROOT / "manifests/base/mutatingwebhookconfiguration.yaml"
            (entry,) = yaml.safe_load(webhooks.read_text())["webhooks"]
            kube.add_mutating_webhook(entry, url=f"https://127.0.0.1:{port}/mutate", ca_file=ca)
            plurals = ("namespaces", "limitranges", "horizontalpodautoscalers", "verticalpodautoscalers")
            wait_until(lambda: all(kube.open_watches(p) for p in plurals), what="pod-tailor watching all")
            yield kubeconfig


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT)
    return path


@needs_kubectl
def test_the_injected_annotation_names_the_hpa(cluster: Path, manifest: Path) -> None:
    result = plugin("-f", str(manifest), "-n", "prod", kubeconfig=cluster)
    assert result.returncode == 0, result.stderr
    held = 'requests.cpu=100m (from policy "default"; hpa web scales on cpu utilization 70 %)'
    assert held in result.stdout


@needs_kubectl
def test_the_dry_run_warnings_say_what_was_left_to_the_vpa(cluster: Path, manifest: Path) -> None:
    result = plugin("-f", str(manifest), "-n", "shop", kubeconfig=cluster)
    assert result.returncode == 0, result.stderr
    assert "# warning: pod-tailor left web: memory left to vpa web (Auto)" in result.stdout
    assert "requests.memory" not in result.stdout
    assert "# warning: pod-tailor would set web: requests.cpu=100m" in result.stdout
