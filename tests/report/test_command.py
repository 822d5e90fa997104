"""`pod-tailor report -f`, as a person or a CI job runs it: formats, files, exit codes, bad input."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from tests.report.fleet import container, resources, workload
from webhook.commands import main
from webhook.report.document import CSV_COLUMNS

FLEET = [
    workload("Deployment", "web", container("app", port=80), container("envoy", port=9901), replicas=2),
    workload(
        "StatefulSet", "db", container("pg", port=5432, resources=resources({"cpu": "1", "memory": "2Gi"}))
    ),
]
SETTLED = workload(
    "Deployment",
    "done",
    container("app", resources=resources({"cpu": "100m", "memory": "128Mi"}, {"memory": "256Mi"})),
)


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(FLEET))
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["report", *args])
    out, err = capsys.readouterr()
    return code, out, err


class TestFormats:
    def test_the_table_has_one_row_per_container_and_the_totals(
        self, capsys: pytest.CaptureFixture[str], manifests: Path
    ) -> None:
        code, out, err = run(capsys, "-f", str(manifests))
        assert (code, err) == (0, "")
        lines = out.splitlines()
        assert lines[0].split()[:4] == ["NAMESPACE", "WORKLOAD", "CONTAINER", "CPU"]
        assert [line.split()[1:3] for line in lines[1:5]] == [
            ["Deployment/web", "app"],
            ["Deployment/web", "envoy"],
            ["Deployment/web", "(pod)"],
            ["StatefulSet/db", "pg"],
        ]
        assert "-→100m" in lines[1]
        assert lines[1].split()[-1].endswith("preStop=5s")
        assert lines[3].split()[-1] == "grace=35s"  # the Pod's own value, on the Pod's own row
        totals = lines[lines.index("") + 2].split()
        assert totals[:6] == ["shop", "enforce", "default", "2", "2", "3"]

    def test_json_is_the_stable_document(self, capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
        code, out, _ = run(capsys, "-f", str(manifests), "-o", "json")
        document = json.loads(out)
        assert code == 0
        assert document["apiVersion"] == "pod-tailor.io/report/v1"
        web, db = document["workloads"]
        assert {"kind", "namespace", "name", "containers"} <= set(web)
        app = web["containers"][0]
        assert {"name", "current", "recommended", "sources", "adds"} <= set(app)
        assert app["current"] == {"requests": {}, "limits": {}}
        assert app["recommended"] == {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {}}
        assert app["sources"]["requests.cpu"] == {"from": "policy", "detail": 'from policy "default"'}
        assert [a["field"] for a in app["adds"]] == ["readinessProbe", "preStop"]
        assert web["pod"]["adds"][0]["field"] == "terminationGracePeriodSeconds"
        assert document["totals"]["cluster"]["requests"] == {
            "now": {"cpu": "1", "memory": "2Gi"},
            "after": {"cpu": "1400m", "memory": "3Gi"},
        }
        assert db["containers"][0]["sources"]["requests.cpu"] == {"from": "author"}

    def test_yaml_is_the_same_document(self, capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
        _, as_json, _ = run(capsys, "-f", str(manifests), "-o", "json")
        _, as_yaml, _ = run(capsys, "-f", str(manifests), "-o", "yaml")
        first, second = json.loads(as_json), yaml.safe_load(as_yaml)
        first.pop("generatedAt"), second.pop("generatedAt")
        assert first == second

    def test_csv_has_one_row_per_container(self, capsys: pytest.CaptureFixture[str], manifests: Path) -> None:
        code, out, _ = run(capsys, "-f", str(manifests), "-o", "csv")
        rows = list(csv.DictReader(io.StringIO(out)))
        assert code == 0
        assert tuple(rows[0]) == CSV_COLUMNS
        assert [(r["name"], r["container"]) for r in rows] == [("web", "app"), ("web", "envoy"), ("db", "pg")]
        assert (rows[0]["requests.cpu_now"], rows[0]["requests.cpu_after"], rows[0]["requests.cpu_from"]) == (
            "",
            "100m",
            "policy",
        )
        assert "terminationGracePeriodSeconds=35" in rows[0]["pod_adds"]

    def test_wide_adds_replicas_mode_and_limits(
        self, capsys: pytest.CaptureFixture[str], manifests: Path
    ) -> None:
        _, out, _ = run(capsys, "-f", str(manifests), "-o", "wide")
        header = out.splitlines()[0]
        for title in ("REPLICAS", "MODE", "CPU LIMIT", "MEMORY LIMIT", "CONFIDENCE", "WARNINGS"):
            assert title in header

    def test_output_file_gets_the_report_and_stdout_stays_empty(
        self, capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
    ) -> None:
        target = tmp_path / "out.json"
        code, out, _ = run(capsys, "-f", str(manifests), "-o", "json", "--output-file", str(target))
        assert (code, out) == (0, "")
        assert len(json.loads(target.read_text())["workloads"]) == 2

    @pytest.mark.parametrize(
        ("flags", "names"), [([], ["db"]), (["-R"], ["db", "web"])], ids=["dir", "dir-R"]
    )
    def test_a_directory_is_read_as_kubectl_reads_it_and_stdin_too(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        flags: list[str], names: list[str],
    ) -> None:
        (tmp_path / "a" / "b").mkdir(parents=True)
        (tmp_path / "a" / "b" / "web.yaml").write_text(yaml.safe_dump(FLEET[0]))
        (tmp_path / "a" / "service.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
        monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(FLEET[1])))
        code, out, err = run(capsys, "-f", str(tmp_path / "a"), *flags, "-f", "-", "-o", "json")
        assert (code, err) == (0, "")
        assert sorted(w["name"] for w in json.loads(out)["workloads"]) == names


class TestValuesOutsideThePolicysBounds:
    """An author's request below the policy's min or above its max is kept, and the report says so
    (issue 26, item 4; the server and the preview: tests/rules/test_kept_values.py)."""

    KEPT = workload(
        "Deployment", "tiny", container("app", resources=resources({"cpu": "32", "memory": "1Mi"}))
    )
    SAID = (
        "cpu request 32 is above the policy max 16; kept",
        "memory request 1Mi is below the policy min 16Mi; kept",
    )

    @pytest.fixture
    def kept(self, tmp_path: Path) -> Path:
        path = tmp_path / "tiny.yaml"
        path.write_text(yaml.safe_dump(self.KEPT))
        return path

    def test_the_document_keeps_the_values_and_carries_the_warnings(
        self, capsys: pytest.CaptureFixture[str], kept: Path
    ) -> None:
        code, out, _ = run(capsys, "-f", str(kept), "-o", "json")
        (app,) = json.loads(out)["workloads"][0]["containers"]
        assert code == 0  # nothing changes
        assert app["current"]["requests"] == app["recommended"]["requests"] == {"cpu": "32", "memory": "1Mi"}
        assert app["sources"]["requests.memory"] == {"from": "author"}
        assert tuple(app["warnings"]) == self.SAID

    def test_the_wide_table_and_the_csv_show_the_warnings(
        self, capsys: pytest.CaptureFixture[str], kept: Path
    ) -> None:
        _, wide, _ = run(capsys, "-f", str(kept), "-o", "wide")
        row = wide.splitlines()[1]
        assert row.split()[1:3] == ["Deployment/tiny", "app"]
        assert "; ".join(self.SAID) in row
        _, as_csv, _ = run(capsys, "-f", str(kept), "-o", "csv")
        (line,) = csv.DictReader(io.StringIO(as_csv))
        assert (line["requests.memory_now"], line["requests.memory_after"]) == ("1Mi", "1Mi")
        assert line["warnings"] == "; ".join(self.SAID)


class TestExitCodes:
    def test_exit_code_1_when_something_would_change(
        self, capsys: pytest.CaptureFixture[str], manifests: Path
    ) -> None:
        assert run(capsys, "-f", str(manifests), "--exit-code")[0] == 1
        assert run(capsys, "-f", str(manifests))[0] == 0

    def test_exit_code_0_when_nothing_would_change(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        path = tmp_path / "done.yaml"
        path.write_text(yaml.safe_dump(SETTLED))
        assert run(capsys, "-f", str(path), "--exit-code")[0] == 0

    def test_an_unknown_format_names_the_known_ones(
        self, capsys: pytest.CaptureFixture[str], manifests: Path
    ) -> None:
        code, out, err = run(capsys, "-f", str(manifests), "-o", "xml")
        assert (code, out) == (2, "")
        assert err == "pod-tailor report: --output xml: use one of table, wide, json, yaml, csv, html\n"

    def test_nothing_readable_is_exit_1_with_the_position_of_each_reason(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        broken = tmp_path / "broken.yaml"
        broken.write_text("apiVersion: v1\nkind: [")
        code, out, err = run(capsys, "-f", str(broken))
        assert (code, out) == (1, "")
        assert f"{broken}:2:8: expected the node content, but found '<stream end>'" in err
        assert "close it" in err
        assert "nothing to report" in err

    def test_a_file_named_with_f_that_is_missing_is_exit_2_before_anything_is_read(
        self, capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
    ) -> None:
        code, out, err = run(capsys, "-f", str(manifests), "-f", str(tmp_path / "absent.yaml"))
        assert (code, out) == (2, "")
        assert err == f"pod-tailor report: -f {tmp_path / 'absent.yaml'}: no such file or directory\n"

    def test_an_unreadable_file_among_good_ones_is_named_and_the_rest_reported(
        self, capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
    ) -> None:
        broken = tmp_path / "broken.yaml"
        broken.write_text("kind: [")
        code, out, err = run(capsys, "-f", str(manifests), "-f", str(broken), "-o", "json")
        assert code == 1  # done, with a document left out
        assert len(json.loads(out)["workloads"]) == 2
        assert f"{broken}:1:8: expected the node content" in err

    def test_an_unreadable_store_is_named_and_every_value_comes_from_the_policy(
        self, capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
    ) -> None:
        store = tmp_path / "profiles.json"
        store.write_text("{not json")
        code, out, err = run(capsys, "-f", str(manifests), "--profiles-path", str(store), "-o", "json")
        assert code == 0
        assert f"profile store {store}: not valid JSON" in err
        assert "every value from the policy" in json.loads(out)["problems"][0]

    def test_an_invalid_policy_file_is_exit_2_naming_the_field(
        self, capsys: pytest.CaptureFixture[str], manifests: Path, tmp_path: Path
    ) -> None:
        policy = tmp_path / "policy.yaml"
        policy.write_text("policies:\n  default:\n    resources:\n      cpu:\n        limit: max\n")
        code, _, err = run(capsys, "-f", str(manifests), "--policy-file", str(policy))
        assert code == 2
        assert "policies.default.resources.cpu.limit" in err
