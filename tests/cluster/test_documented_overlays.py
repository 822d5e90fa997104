"""Every overlay the docs show is rendered as a user would render it, and every container it runs starts.

An overlay is a ```yaml block of README.md or docs/*.md whose first line names its file
(`# my-pod-tailor/kustomization.yaml`); it is written beside a copy of the checkout (`../pod-tailor/`),
rendered with `kubectl kustomize`, validated strictly, and each Deployment's containers are started
offline with `pod-tailor --check-config` and the command line, environment and files the kubelet would
give them (ConfigMap values from the rendered ConfigMaps, $(VAR) expanded in the arguments, a serving
certificate where a Secret volume is mounted, the in-cluster API as a kubeconfig that names it), through
the command's own entry point (`webhook.commands.main`) in this process, which costs no interpreter start.
`--check-config` reads every file a start reads and finds the API server's configuration, so a container
whose files or cluster access would be missing fails here as its start would.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubefake import write_kubeconfig

from tests.cluster.test_manifests import KUBECTL, VERSIONS, build, validate
from webhook.commands import main
from webhook.server.certs import write_dev_certs
from webhook.server.selfsigned import write_certificates

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl 1.27+ (kustomize v5 built in) not installed")


@dataclass(frozen=True)
class Overlay:
    page: str
    directory: str
    text: str


def documented_overlays() -> list[Overlay]:
    found = []
    for page in PAGES:
        for block in re.findall(r"```yaml\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
            named = re.fullmatch(r"# ([\w.-]+)/kustomization\.yaml", block.splitlines()[0])
            if named:
                found.append(Overlay(page.name, named[1], block))
    return found


OVERLAYS = documented_overlays()


class Checkout:
    """A copy of the manifests at `<tmp>/pod-tailor/manifests` (self-signed certificates made), beside
    which overlays are written and rendered once each."""

    def __init__(self, work: Path) -> None:
        self.work, self.rendered = work, dict[str, list[dict[str, Any]]]()
        manifests = work / "pod-tailor" / "manifests"
        shutil.copytree(ROOT / "manifests", manifests, ignore=shutil.ignore_patterns("generated"))
        write_certificates(manifests / "overlays" / "self-signed" / "generated")

    def render(self, directory: str, text: str) -> list[dict[str, Any]]:
        if directory not in self.rendered:
            target = self.work / directory
            target.mkdir()
            (target / "kustomization.yaml").write_text(text)
            self.rendered[directory] = build(target)
        return self.rendered[directory]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Checkout:
    return Checkout(tmp_path_factory.mktemp("work"))


def environment(container: dict[str, Any], objects: list[dict[str, Any]]) -> dict[str, str]:
    """The container's variables as the kubelet sets them (a Secret's value is a stand-in)."""
    config_maps = {o["metadata"]["name"]: o.get("data", {}) for o in objects if o["kind"] == "ConfigMap"}
    env = {}
    for variable in container.get("env", ()):
        source = variable.get("valueFrom", {})
        if "value" in variable:
            env[variable["name"]] = variable["value"]
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            env[variable["name"]] = config_maps[ref["name"]][ref["key"]]
        elif "secretKeyRef" in source:
            env[variable["name"]] = f"secret-{source['secretKeyRef']['key']}"
        elif "fieldRef" in source:
            env[variable["name"]] = {"metadata.namespace": "pod-tailor"}.get(
                source["fieldRef"]["fieldPath"], "pod-tailor-7d4b9-x2x9q"
            )
    return env


@dataclass(frozen=True)
class Started:
    code: int
    out: str
    err: str


def mounted(container: dict[str, Any], root: Path) -> dict[str, str]:
    """mountPath -> a directory under `root` standing for what the kubelet mounts there: each holds a
    serving certificate's files (tls.crt, tls.key, ca.crt), what the TLS Secret's volume holds; no start
    reads the other volumes' files."""
    found = {}
    for index, mount in enumerate(container.get("volumeMounts", ())):
        directory = root / f"volume-{index}"
        write_dev_certs(directory)
        found[mount["mountPath"]] = str(directory)
    return found


def check_config(container: dict[str, Any], objects: list[dict[str, Any]], root: Path) -> Started:
    """`pod-tailor --check-config ARGS` with the container's environment and files: starts it, contacts
    nothing."""
    paths = mounted(container, root)

    def placed(text: str) -> str:
        for mount, directory in paths.items():
            if text == mount or text.startswith(mount.rstrip("/") + "/"):
                return directory + text[len(mount.rstrip("/")):]
        return text

    env = {name: placed(value) for name, value in environment(container, objects).items()}
    env["KUBECONFIG"] = str(write_kubeconfig(root / "in-cluster-kubeconfig", server="https://10.96.0.1:443"))
    variable = re.compile(r"\$\((\w+)\)")
    expanded = [variable.sub(lambda m: env.get(m[1], m[0]), arg) for arg in container.get("args", ())]
    args = [placed(arg) for arg in expanded]
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("POD_TAILOR_")]:
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(sys, "stdout", out)
        patch.setattr(sys, "stderr", err)
        code = main(["--check-config", *args])
    return Started(code, out.getvalue(), err.getvalue())


def containers(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        c for o in objects if o["kind"] == "Deployment" for c in o["spec"]["template"]["spec"]["containers"]
    ]


def test_the_install_and_connection_pages_show_an_overlay() -> None:
    assert {o.page for o in OVERLAYS} >= {"install.md", "prometheus-connection.md"}


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda o: f"{o.page}:{o.directory}")
class TestEachDocumentedOverlay:
    def test_it_renders_and_every_object_validates_strictly(
        self, checkout: Checkout, overlay: Overlay
    ) -> None:
        objects = checkout.render(overlay.directory, overlay.text)
        assert {"MutatingWebhookConfiguration", "Deployment"} <= {o["kind"] for o in objects}
        for obj in objects:  # the oldest version is checked per component in test_manifests.py
            validate(obj, VERSIONS[-1])

    def test_every_container_runs_the_image_it_names(self, checkout: Checkout, overlay: Overlay) -> None:
        objects = checkout.render(overlay.directory, overlay.text)
        wanted = {
            f"{entry['newName']}:{entry.get('newTag', VERSION)}"
            for entry in yaml.safe_load(overlay.text).get("images", ())
        } or {f"ghcr.io/pod-tailor/pod-tailor:{VERSION}"}
        assert {c["image"] for c in containers(objects)} == wanted

    def test_every_container_starts_with_its_command_line_and_environment(
        self, checkout: Checkout, overlay: Overlay, tmp_path: Path
    ) -> None:
        objects = checkout.render(overlay.directory, overlay.text)
        for index, container in enumerate(containers(objects)):
            result = check_config(container, objects, tmp_path / str(index))
            assert result.code == 0, (container["name"], result.err)
            assert result.out.endswith("configuration OK\n"), result.out
            assert result.err == "", result.err  # not even a renamed option's note

    def test_every_container_that_reads_prometheus_reads_the_overlays_url(
        self, checkout: Checkout, overlay: Overlay
    ) -> None:
        objects = checkout.render(overlay.directory, overlay.text)
        urls = {
            environment(c, objects).get("POD_TAILOR_PROMETHEUS_URL")
            for c in containers(objects)
            if any(e["name"].startswith("POD_TAILOR_PROMETHEUS_") for e in c.get("env", ()))
        }
        (literal,) = [
            item
            for generator in yaml.safe_load(overlay.text).get("configMapGenerator", ())
            for item in generator.get("literals", ())
            if item.startswith("url=")
        ]
        assert urls == {literal.removeprefix("url=")}


def test_the_overlay_that_set_the_url_on_the_recommender_alone_is_refused_in_one_line(
    checkout: Checkout, tmp_path: Path
) -> None:
    """What docs/prometheus-connection.md used to show: the dashboard kept the plain-http URL beside the CA
    file and crash-looped with a traceback. Now the mistake is one line naming the fix, at start."""
    text = """\
resources: [../pod-tailor/manifests/overlays/cert-manager]
components: [../pod-tailor/manifests/components/prometheus-credentials]
patches:
  - patch: |
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: pod-tailor-recommender, namespace: pod-tailor}
      spec:
        template:
          spec:
            containers:
              - name: recommender
                env:
                  - {name: POD_TAILOR_PROMETHEUS_URL, value: "https://mimir.example/prometheus"}
"""
    objects = checkout.render("recommender-only", text)
    by_name = {c["name"]: c for c in containers(objects)}
    assert check_config(by_name["recommender"], objects, tmp_path / "recommender").code == 0
    refused = check_config(by_name["dashboard"], objects, tmp_path / "dashboard")
    assert refused.code == 2
    assert refused.err.count("\n") == 1, refused.err
    assert "pod-tailor dashboard: " in refused.err
    assert "plain http://: use https://" in refused.err
    assert "Traceback" not in refused.err


def test_every_image_tag_in_the_manifests_is_the_packages_version() -> None:
    for path in (ROOT / "manifests").rglob("kustomization.yaml"):
        for entry in yaml.safe_load(path.read_text()).get("images", ()):
            assert entry["newTag"] == VERSION, path
