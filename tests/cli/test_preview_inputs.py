"""`pod-tailor preview -f FILE|DIR [-R]` as kubectl reads its input, through the real command: every
document comes out in order, workloads tailored and the rest unchanged, so the output pipes into
`kubectl apply -f -`; Services in any file decide the traffic path."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubefake import FakeKube

from tests.cli.test_first_hour import BROKEN, ROOT, run
from tests.cluster.helpers import usable_kubectl
from webhook.core.model.pod import INJECTED_ANNOTATION
from webhook.profiles.store import FileStore, ProfileDocument

EXAMPLES = ROOT / "docs" / "examples"


def deployment(name: str, *, port: int = 8080) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                         "ports": [{"containerPort": port}]}]},
            },
        },
    }


def service(name: str, *, target: int = 8080) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": target}]},
    }


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"key": "value"}}


def write(path: Path, *documents: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def shown(out: str) -> list[tuple[str, str]]:
    return [(doc["kind"], doc["metadata"]["name"]) for doc in yaml.safe_load_all(out) if doc is not None]


def annotation(document: dict[str, Any]) -> str:
    return str(document["spec"]["template"]["metadata"]["annotations"][INJECTED_ANNOTATION])


@pytest.fixture(autouse=True)
def empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "profiles.json"
    FileStore(path).write(ProfileDocument({}, 0.0, "no profiles"))
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(path))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """app/ as people keep it: files, a subdirectory, and files kubectl does not read."""
    root = tmp_path / "app"
    write(root / "b-web.yaml", deployment("web"), config_map("web-config"))
    write(root / "a-api.yml", deployment("api"))
    write(root / "c-db.json", config_map("db"))
    (root / "README.md").write_text("# not a manifest\n")
    write(root / "notes.txt", config_map("txt"))
    write(root / "b" / "svc.yaml", service("web"))
    write(root / "b" / "deep" / "more.yaml", config_map("deep"))
    write(root / "z" / "last.yaml", service("api"))
    return root


class TestEveryDocumentComesOutInOrder:
    def test_a_services_and_config_maps_pass_through_unchanged_beside_the_tailored_deployment(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        given = [config_map("settings"), deployment("web"), service("web")]
        code, out, err = run(capsys, "preview", "-f", str(write(tmp_path / "app.yaml", *given)))
        documents = list(yaml.safe_load_all(out))
        assert code == 0, err
        assert [(d["kind"], d["metadata"]["name"]) for d in documents] == [
            ("ConfigMap", "settings"), ("Deployment", "web"), ("Service", "web")
        ]
        assert (documents[0], documents[2]) == (given[0], given[2])
        assert "readinessProbe" in documents[1]["spec"]["template"]["spec"]["containers"][0]

    @pytest.mark.parametrize(
        ("argv", "expected"),
        [
            (["-f", "{root}"], [("Deployment", "api"), ("Deployment", "web"), ("ConfigMap", "web-config"),
                                ("ConfigMap", "db")]),
            (["-f", "{root}", "-R"], [("Deployment", "api"), ("ConfigMap", "deep"), ("Service", "web"),
                                      ("Deployment", "web"), ("ConfigMap", "web-config"),
                                      ("ConfigMap", "db"), ("Service", "api")]),
            (["-f", "{root}/c-db.json", "-f", "{root}/a-api.yml"],
             [("ConfigMap", "db"), ("Deployment", "api")]),
            (["-f", "{root}/z", "--recursive", "-f", "{root}/b-web.yaml"],
             [("Service", "api"), ("Deployment", "web"), ("ConfigMap", "web-config")]),
            (["-f", "{root}/notes.txt", "-f", "{root}/a-api.yml"],
             [("ConfigMap", "txt"), ("Deployment", "api")]),
        ],
        ids=["dir-only-its-own-manifests", "dir-recursive-as-kubectl-walks", "two-files-in-the-order-given",
             "dir-and-file", "a-file-named-is-read-whatever-its-suffix"],
    )
    def test_files_and_directories_are_read_as_kubectl_reads_them(
        self, capsys: pytest.CaptureFixture[str], tree: Path, argv: list[str], expected: list[tuple[str, str]]
    ) -> None:
        code, out, err = run(capsys, "preview", *(arg.format(root=tree) for arg in argv))
        assert code == 0, err
        assert shown(out) == expected

    def test_stdin_is_read_with_the_files(
        self, capsys: pytest.CaptureFixture[str], tree: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(service("from-stdin"))))
        code, out, err = run(capsys, "preview", "-f", str(tree / "a-api.yml"), "-f", "-")
        assert code == 0, err
        assert shown(out) == [("Deployment", "api"), ("Service", "from-stdin")]

    def test_a_list_stays_one_list_with_its_workloads_tailored(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        listed = {"apiVersion": "v1", "kind": "List", "items": [service("web"), deployment("web")]}
        path = write(tmp_path / "list.yaml", listed, config_map("c"))
        code, out, err = run(capsys, "preview", "-f", str(path))
        documents = list(yaml.safe_load_all(out))
        assert code == 0, err
        assert [d["kind"] for d in documents] == ["List", "ConfigMap"]
        served, tailored = documents[0]["items"]
        assert served == service("web")
        assert "preStop=sleep" in annotation(tailored)

    def test_a_bad_document_is_left_out_and_named_and_the_others_still_come_out_exit_1(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        path = tmp_path / "app.yaml"
        path.write_text(
            yaml.safe_dump(service("web")) + "---\n" + BROKEN + "---\n"
            + yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "empty"},
                              "spec": {}})
            + "---\n" + yaml.safe_dump(deployment("web"))
        )
        code, out, err = run(capsys, "preview", "-f", str(path))
        assert code == 1
        assert shown(out) == [("Service", "web"), ("Deployment", "web")]
        left_out = [line for line in err.splitlines() if line.endswith("(this document is left out)")]
        assert len(left_out) == 2
        assert left_out[0].startswith(f"pod-tailor preview: {path}:")
        assert "expected <block end>" in left_out[0]
        assert "Deployment empty has no pod template at spec.template" in left_out[1]

    def test_the_diff_of_several_files_names_the_file_of_each_workload(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        prod = write(tmp_path / "prod" / "web.yaml", deployment("web"))
        staging = write(tmp_path / "staging" / "web.yaml", deployment("web"), service("web"))
        code, out, err = run(capsys, "preview", "-f", str(prod), "-f", str(staging), "--diff")
        assert code == 0, err
        assert [line for line in out.splitlines() if line.startswith("+++ ")] == [
            f"+++ {prod}: Deployment/web (tailored)", f"+++ {staging}: Deployment/web (tailored)"
        ]

    def test_a_missing_directory_is_refused_before_anything_is_read(
        self, capsys: pytest.CaptureFixture[str], tree: Path
    ) -> None:
        code, out, err = run(capsys, "preview", "-f", str(tree), "-f", str(tree / "nope"))
        assert (code, out) == (2, "")
        assert err == f"pod-tailor preview: -f {tree / 'nope'}: no such file or directory\n"

    def test_every_previewed_workload_validates_strictly(
        self, capsys: pytest.CaptureFixture[str], tree: Path
    ) -> None:
        code, out, err = run(capsys, "preview", "-f", str(tree), "-R")
        assert code == 0, err
        for document in yaml.safe_load_all(out):
            kubernetes_validate.validate(document, "1.30", strict=True)


class TestServicesInAnyFileDecideTheTrafficPath:
    @pytest.mark.parametrize(
        ("files", "expected"),
        [
            ({"deploy.yaml": [deployment("web")]}, "preStop=sleep 5s (native sleep"),
            ({"deploy.yaml": [deployment("web")], "svc.yaml": [service("web")]},
             "preStop=sleep 5s (behind Service web type ClusterIP"),
            ({"deploy.yaml": [deployment("web")], "svc.yaml": [service("other")]},
             "preStop=sleep 5s (no Service selects the Pod yet"),
            ({"deploy.yaml": [deployment("web")], "sub/svc.yaml": [service("web")]},
             "preStop=sleep 5s (native sleep"),  # not read without -R
        ],
        ids=["no-service", "a-service-in-a-sibling-file", "a-service-of-another-app",
             "a-service-in-a-subdir"],
    )
    def test_the_pre_stop_is_sized_for_the_service_found_in_a_sibling_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, files: dict[str, list[dict[str, Any]]],
        expected: str,
    ) -> None:
        for name, documents in files.items():
            write(tmp_path / "app" / name, *documents)
        code, out, err = run(capsys, "preview", "-f", str(tmp_path / "app"))
        (tailored,) = [d for d in yaml.safe_load_all(out) if d["kind"] == "Deployment"]
        assert code == 0, err
        assert expected in annotation(tailored)

    def test_with_r_the_service_in_a_subdirectory_counts(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        write(tmp_path / "app" / "deploy.yaml", deployment("web"))
        write(tmp_path / "app" / "sub" / "svc.yaml", service("web"))
        code, out, err = run(capsys, "preview", "-f", str(tmp_path / "app"), "-R")
        tailored = next(d for d in yaml.safe_load_all(out) if d["kind"] == "Deployment")
        assert code == 0, err
        assert "behind Service web type ClusterIP" in annotation(tailored)

    def test_a_service_given_in_another_f_counts_too(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        deploy = write(tmp_path / "deploy.yaml", deployment("web"))
        svc = write(tmp_path / "elsewhere" / "svc.yaml", service("web"))
        code, out, err = run(capsys, "preview", "-f", str(deploy), "-f", str(svc))
        tailored = next(d for d in yaml.safe_load_all(out) if d["kind"] == "Deployment")
        assert code == 0, err
        assert "behind Service web type ClusterIP" in annotation(tailored)


def with_init(document: dict[str, Any]) -> dict[str, Any]:
    spec = document["spec"]["template"]["spec"]
    spec["initContainers"] = [{"name": "migrate", "image": "busybox:1.36", "command": ["true"]}]
    return document


class TestTheReportReadsTheSameInputs:
    def test_the_grace_period_is_on_the_pods_own_row_not_on_the_init_containers(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        path = write(tmp_path / "app.yaml", with_init(deployment("web")), service("web"))
        code, out, err = run(capsys, "report", "-f", str(path))
        rows = [line.split() for line in out.split("\n\n")[0].splitlines()[1:]]
        assert code == 0, err
        assert [row[2] for row in rows] == ["migrate", "app", "(pod)"]
        assert [row[-1] for row in rows] == ["-", "readiness,preStop=5s", "grace=35s"]
        code, out, err = run(capsys, "report", "-f", str(path), "-o", "wide")
        (pod_row,) = [line.split() for line in out.splitlines() if " (pod) " in line]
        assert code == 0, err
        assert "grace=35s" in pod_row

    def test_csv_keeps_the_pod_values_in_their_column_and_names_the_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        path = write(tmp_path / "app.yaml", with_init(deployment("web")), service("web"))
        code, out, err = run(capsys, "report", "-f", str(path), "-o", "csv")
        rows = list(csv.DictReader(io.StringIO(out)))
        assert code == 0, err
        assert [(row["container"], row["source"]) for row in rows] == [
            ("migrate", str(path)), ("app", str(path))
        ]
        assert all(row["pod_adds"] == "terminationGracePeriodSeconds=35" for row in rows)
        assert "terminationGracePeriodSeconds" not in rows[0]["adds"]

    def test_same_named_workloads_of_two_files_stay_two_rows_named_by_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        write(tmp_path / "app" / "prod.yaml", deployment("web", port=8080))
        write(tmp_path / "app" / "staging.yaml", deployment("web", port=9090))
        code, out, err = run(capsys, "report", "-f", str(tmp_path / "app"), "-o", "json")
        workloads = json.loads(out)["workloads"]
        assert code == 0, err
        assert [(w["name"], w["source"]) for w in workloads] == [
            ("web", str(tmp_path / "app" / "prod.yaml")), ("web", str(tmp_path / "app" / "staging.yaml"))
        ]
        assert json.loads(out)["totals"]["cluster"]["workloads"] == 2
        code, out, _ = run(capsys, "report", "-f", str(tmp_path / "app"))
        named = [line.split()[1:4] for line in out.split("\n\n")[0].splitlines()[1:]]
        assert named == [
            ["Deployment/web", f"({tmp_path / 'app' / name})", container]
            for name in ("prod.yaml", "staging.yaml") for container in ("app", "(pod)")
        ]

    @pytest.mark.parametrize(
        ("flags", "path"), [([], "no Service selects"), (["-R"], "behind Service web")], ids=["dir", "dir-R"]
    )
    def test_a_service_in_any_file_read_decides_the_traffic_path(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], path: str
    ) -> None:
        write(tmp_path / "app" / "deploy.yaml", deployment("web"))
        write(tmp_path / "app" / "other.yaml", service("other"))
        write(tmp_path / "app" / "sub" / "svc.yaml", service("web"))
        code, out, err = run(capsys, "report", "-f", str(tmp_path / "app"), *flags, "-o", "json")
        (web,) = json.loads(out)["workloads"]
        (pre_stop,) = [a for a in web["containers"][0]["adds"] if a["field"] == "preStop"]
        assert code == 0, err
        assert pre_stop["source"].startswith(path)


class TestTheOutputPipesIntoKubectl:
    """`pod-tailor preview -f app | kubectl diff -f -` and `| kubectl apply -f -`, with the real kubectl
    against the shared fake API server (which serves no OpenAPI: --validate=false)."""

    @pytest.fixture
    def kubectl(self) -> str:
        found = usable_kubectl()
        if found is None:
            pytest.skip("needs kubectl 1.27+ on PATH")
        return found

    def test_diff_then_apply_creates_every_document_tailored_and_a_second_diff_is_empty(
        self, kubectl: str, tmp_path: Path
    ) -> None:
        shown = subprocess.run(
            [sys.executable, "-m", "webhook", "preview", "-f", str(EXAMPLES / "app")],
            capture_output=True, text=True, timeout=120, check=True, cwd=ROOT,
        ).stdout
        with FakeKube(token="") as kube:
            kube.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
            config = str(kube.write_kubeconfig(tmp_path / "kubeconfig"))

            def kubectl_with(*verb: str) -> subprocess.CompletedProcess[str]:
                return subprocess.run(
                    [kubectl, "--kubeconfig", config, *verb, "-f", "-"],
                    input=shown, capture_output=True, text=True, timeout=120,
                )

            assert kubectl_with("diff").returncode == 1  # 1: there are differences (all new)
            applied = kubectl_with("apply", "--validate=false")
            assert applied.returncode == 0, applied.stderr
            assert applied.stdout.splitlines() == [
                "deployment.apps/web created", "configmap/web-settings created", "service/web created"
            ]
            deployment = kube.get("deployments", "web", namespace="default")
            assert deployment is not None
            (app,) = deployment["spec"]["template"]["spec"]["containers"]
            assert app["lifecycle"]["preStop"] == {"sleep": {"seconds": 5}}
            assert kube.get("services", "web", namespace="default") is not None
            assert kube.get("configmaps", "web-settings", namespace="default") is not None
            again = kubectl_with("diff")
            assert (again.returncode, again.stdout) == (0, "")
