"""A new user's first hour, through the real `pod-tailor` command: each mistake a person makes is one
line naming what, where and the fix, with the exit code a script can act on; nothing falls back
silently; every verb spells the same thing the same way.

Exit codes (webhook/commands/failures.py): 0 done; 1 done with findings (a document left out); 2 bad
options, variables or input (nothing was done); 3 a dependency could not be reached (a cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from webhook.commands import build_parser, main, unknown_variables
from webhook.commands.parser import GROUPS
from webhook.profiles.store import FileStore, ProfileDocument

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        ports: [{containerPort: 8080}]
        resources: {limits: {cpu: "1", memory: 1Gi}}
"""
BROKEN = """\
apiVersion: v1
kind: Pod
metadata:
  name: b
 labels: {app: b}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`pod-tailor ARGV` in this process: (exit code, stdout, stderr); a parse error's SystemExit too."""
    try:
        code = main(list(argv))
    except SystemExit as exited:
        code = int(exited.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def deploy(tmp_path: Path) -> Path:
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT)
    return path


@pytest.fixture(autouse=True)
def empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A built (empty) default store, so that only the warnings a test provokes appear."""
    path = tmp_path / "profiles.json"
    FileStore(path).write(ProfileDocument({}, 0.0, "no profiles"))
    monkeypatch.setenv("POD_TAILOR_PROFILES", str(path))
    return path


BAD_VALUES = [
    (["serve", "--port", "80800"], "--port: 80800 is not a port: use 1 to 65535"),
    (["dashboard", "--port", "80800"], "--port: 80800 is not a port: use 1 to 65535"),
    (["recommend", "--metrics-port", "70000"], "--metrics-port: 70000 is not a port: use 1 to 65535, or 0"),
    (["rightsize", "--metrics-port", "-1"], "--metrics-port: -1 is not a port"),
    (["dashboard", "--refresh-seconds", "0"], "--refresh-seconds: 0 seconds: use a number of seconds above"),
    (["recommend", "--interval", "soon"], "--interval: 'soon' is not a number"),
    (["rightsize", "--tick", "nan"], "--tick: 'nan' is not a finite number"),
    (["reports", "--metrics-port", "-1"], "--metrics-port: -1 is not a port"),
    (["serve", "--drain-seconds", "-5"], "--drain-seconds: -5 seconds: use a number of seconds, 0 or more"),
    (["dashboard", "--dry-run-window", "1 day"], "--dry-run-window: not a duration: '1 day'"),
    (["profiles", "build", "--window", "fortnight"], "--window: not a duration: 'fortnight'"),
    (["report", "--step", "0m"], "--step: not a duration: '0m'"),
    (["profiles", "build", "--slices", "-1"], "--slices: -1: use a whole number, 0 or more"),
    (["certs", "--days", "0"], "--days: 0: use a whole number from 1 to 3650"),
    (["profiles", "build", "--percentile", "120"], "--percentile: 120: use a number above 0 to 100"),
    (["report", "--max-shrink", "2"], "--max-shrink: 2: use a number from 0 to 1"),
]


class TestBadValuesAreRefusedTheSameWayEverywhere:
    @pytest.mark.parametrize(("argv", "message"), BAD_VALUES, ids=[" ".join(argv) for argv, _ in BAD_VALUES])
    def test_one_line_naming_the_option_and_what_to_type_exit_2(
        self, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
    ) -> None:
        code, out, err = run(capsys, *argv)
        verb = "pod-tailor " + " ".join(argv[: 2 if argv[0] == "profiles" else 1])
        assert (code, out) == (2, "")
        assert err.startswith(f"{verb}: {message}"), err
        assert err.endswith(f"(see {verb} --help)\n")
        assert err.count("\n") == 1

    def test_serve_and_the_dashboard_refuse_a_port_in_the_same_words(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        said = [run(capsys, verb, "--port", "80800")[2].split(": ", 1)[1] for verb in ("serve", "dashboard")]
        assert said[0].replace("serve", "dashboard") == said[1]

    def test_a_variable_is_read_with_the_same_rule_and_named(
        self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("POD_TAILOR_PORT", "80800")
        code, _, err = run(capsys, "--check-config", "serve")
        assert (code, err) == (2, "pod-tailor serve: POD_TAILOR_PORT: 80800 is not a port: use 1 to 65535\n")

    def test_a_step_longer_than_the_window_is_one_line_too(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, _, err = run(capsys, "--check-config", "profiles", "build", "--window", "1h", "--step", "2h")
        assert (code, err) == (2, "pod-tailor profiles build: step 2h is longer than the window 1h\n")


class TestYamlErrorsSayWhere:
    def test_a_broken_manifest_names_file_line_column_and_the_fix(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        broken = tmp_path / "broken.yaml"
        broken.write_text(BROKEN)
        code, out, err = run(capsys, "preview", "-f", str(broken))
        assert (code, out) == (1, "")  # the one document is left out
        assert err == (
            f"pod-tailor preview: {broken}:5:2: expected <block end>, but found '<block mapping start>' "
            "(while parsing a block mapping): check this line's indentation against the lines above it "
            "(this document is left out)\n"
        )

    def test_one_bad_document_is_left_out_named_and_the_others_previewed_exit_1(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        mixed = tmp_path / "app.yaml"
        mixed.write_text(DEPLOYMENT + "---\n" + BROKEN + "---\nkind: Service\nmetadata: {name: web}\n")
        code, out, err = run(capsys, "preview", "-f", str(mixed))
        assert code == 1
        assert "name: web" in out
        assert "readinessProbe:" in out
        line = f"{mixed}:19:2: expected <block end>"
        (said,) = [text for text in err.splitlines() if line in text]
        assert said.endswith("(this document is left out)")

    def test_a_policy_file_that_is_not_yaml_names_its_line_and_column(
        self, capsys: pytest.CaptureFixture[str], deploy: Path, tmp_path: Path
    ) -> None:
        policy = tmp_path / "policy.yaml"
        policy.write_text("policies:\n  default:\n\tresources: {}\n")
        code, _, err = run(capsys, "preview", "-f", str(deploy), "--policy-file", str(policy))
        assert code == 2
        assert err.startswith(
            f"pod-tailor preview: {policy}:3:1: found character '\\t' that cannot start any token"
        )
        assert err.endswith("indent with spaces, not tabs\n")

    def test_a_policy_field_with_a_bad_value_names_the_field_and_its_line(
        self, capsys: pytest.CaptureFixture[str], deploy: Path, tmp_path: Path
    ) -> None:
        policy = tmp_path / "policy.yaml"
        policy.write_text("policies:\n  default:\n    resources:\n      cpu:\n        limit: max\n")
        code, _, err = run(capsys, "preview", "-f", str(deploy), "--policy-file", str(policy))
        assert code == 2
        assert err.startswith(f"pod-tailor preview: {policy}:5:16: policies.default.resources.cpu.limit")
        assert err.count("\n") == 1


class TestInputThatIsNotText:
    def test_a_binary_file_is_named_by_its_first_bad_byte(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        image = tmp_path / "image.png"
        image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
        code, out, err = run(capsys, "preview", "-f", str(image))
        assert (code, out) == (1, "")  # the file is left out, and nothing else was given
        assert err == (
            f"pod-tailor preview: {image}: not UTF-8 text (byte 0x89 at offset 0; a binary file?): give a "
            "YAML or JSON manifest (this document is left out)\n"
        )

    def test_the_report_names_a_binary_file_among_manifests_and_reports_the_rest(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        (tmp_path / "m").mkdir()
        (tmp_path / "m" / "deploy.yaml").write_text(DEPLOYMENT)
        (tmp_path / "m" / "logo.yaml").write_bytes(b"\xff\xfe\x00k\x00i")
        code, out, err = run(capsys, "report", "-f", str(tmp_path / "m"), "-o", "json")
        assert code == 1  # done, with a file left out
        assert [w["name"] for w in json.loads(out)["workloads"]] == ["web"]
        assert f"{tmp_path / 'm' / 'logo.yaml'}: not UTF-8 text (byte 0xff at offset 0" in err


class TestNothingFallsBackSilently:
    def test_a_store_named_on_the_command_line_must_exist(
        self, capsys: pytest.CaptureFixture[str], deploy: Path, tmp_path: Path
    ) -> None:
        missing = tmp_path / "missing.json"
        for verb in (["preview"], ["report"]):
            code, out, err = run(capsys, *verb, "-f", str(deploy), "--profiles-path", str(missing))
            assert (code, out) == (2, "")
            assert err == (
                f"pod-tailor {verb[0]}: --profiles-path {missing}: no such file: build it with `pod-tailor "
                "profiles build`, or leave the option out\n"
            )

    def test_a_default_store_not_built_yet_is_a_warning_naming_where_it_was_looked_for(
        self,
        capsys: pytest.CaptureFixture[str],
        deploy: Path,
        monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path,
    ) -> None:
        monkeypatch.setenv("POD_TAILOR_PROFILES", str(tmp_path / "missing.json"))
        code, out, err = run(capsys, "report", "-f", str(deploy), "-o", "json")
        assert code == 0
        assert f"no profile store at POD_TAILOR_PROFILES={tmp_path / 'missing.json'} yet" in err
        assert "every value from the policy" in json.loads(out)["problems"][0]
        monkeypatch.delenv("POD_TAILOR_PROFILES")
        code, _, err = run(capsys, "preview", "-f", str(deploy))
        default = Path(os.environ["XDG_DATA_HOME"]) / "pod-tailor" / "profiles.json"
        assert code == 0
        assert f"pod-tailor preview: warning: no profile store at {default} yet" in err

    @pytest.mark.parametrize(
        ("label", "warning"),
        [
            (
                "pod-tailor.io/mode=enforced",
                "pod-tailor.io/mode=enforced is not a mode (enforce, dry-run, off): pod-tailor treats the "
                "namespace as off",
            ),
            (
                "pod-tailor.io/policy=batch",
                "pod-tailor.io/policy=batch names no policy (there are: default): the default policy is used",
            ),
        ],
    )
    def test_a_label_value_pod_tailor_does_not_know_is_warned_with_the_known_ones(
        self, capsys: pytest.CaptureFixture[str], deploy: Path, label: str, warning: str
    ) -> None:
        labels = ["--namespace-label", label]
        if "policy" in label:
            labels += ["--namespace-label", "pod-tailor.io/mode=enforce"]
        code, _, err = run(capsys, "preview", "-f", str(deploy), *labels)
        assert code == 0
        assert f"pod-tailor preview: warning: {warning}\n" in err

    def test_a_dry_run_patch_is_empty_not_the_api_servers_defaulting(
        self, capsys: pytest.CaptureFixture[str], deploy: Path
    ) -> None:
        code, out, err = run(
            capsys, "preview", "-f", str(deploy), "--patch", "--namespace-label", "pod-tailor.io/mode=dry-run"
        )
        assert (code, out) == (0, "[]\n")
        assert "Warning: pod-tailor would set app: readinessProbe=" in err
        code, out, _ = run(capsys, "preview", "-f", str(deploy), "--patch")
        assert any(op["path"].endswith("/readinessProbe") for op in json.loads(out))


def _visible_options(verb: list[str]) -> dict[str, str]:
    """Each visible long option of `pod-tailor VERB --help` -> its group's title."""
    parser = build_parser()
    for name in verb:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[name]
    return {
        option: str(group.title)
        for group in parser._action_groups
        for action in group._group_actions
        if action.help != argparse.SUPPRESS
        for option in action.option_strings
        if option.startswith("--")
    }


VERBS = [
    ["serve"],
    ["preview"],
    ["cluster-preview"],
    ["profiles", "build"],
    ["profiles", "show"],
    ["recommend"],
    ["certs"],
    ["report"],
    ["dashboard"],
    ["rightsize"],
    ["reports"],
]


class TestOneNamePerConcept:
    @pytest.mark.parametrize("verb", VERBS, ids=" ".join)
    def test_no_verb_shows_an_old_name(self, verb: list[str]) -> None:
        shown = set(_visible_options(verb))
        assert not shown & {
            "--store",
            "--profiles",
            "--kubernetes",
            "--store-namespace",
            "--prometheus",
            "--timeout",
        }
        if verb[0] in ("serve", "certs", "report", "dashboard", "recommend", "profiles"):
            assert "--pod-tailor-namespace" in shown
            assert "--namespace" not in shown or _visible_options(verb)["--namespace"] in (
                "input",
                "profile build",
            )

    @pytest.mark.parametrize(
        "verb",
        [v for v in VERBS if v[0] not in ("cluster-preview", "certs", "rightsize")],
        ids=" ".join,
    )
    def test_the_profile_store_file_is_profiles_path_in_every_verb_that_reads_or_writes_it(
        self, verb: list[str]
    ) -> None:
        assert _visible_options(verb)["--profiles-path"] == "profile store"

    @pytest.mark.parametrize("verb", VERBS, ids=" ".join)
    def test_help_lists_the_option_groups_in_one_order(
        self, verb: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, out, _ = run(capsys, *verb, "--help")
        titles = [line[:-1] for line in out.splitlines() if line.endswith(":") and not line.startswith(" ")]
        named = [t for t in titles if t in GROUPS]
        assert named == sorted(named, key=GROUPS.index), titles
        assert code == 0

    def test_an_option_several_verbs_take_sits_in_the_same_group_in_each(self) -> None:
        seen: dict[str, set[str]] = {}
        for verb in VERBS:
            for option, title in _visible_options(verb).items():
                seen.setdefault(option, set()).add(title)
        spread = {option: titles for option, titles in seen.items() if len(titles) > 1}
        assert spread == {}

    @pytest.mark.parametrize(
        ("variables", "named"),
        [
            ({"POD_TAILOR_PROFILES_PATH": "p"},
             ["POD_TAILOR_PROFILES_PATH (did you mean POD_TAILOR_PROFILES?)"]),
            ({"POD_TAILOR_PROFILE": "p", "POD_TAILOR_PORTS": "1"},
             ["POD_TAILOR_PORTS (did you mean POD_TAILOR_PORT?)",
              "POD_TAILOR_PROFILE (did you mean POD_TAILOR_PROFILES?)"]),
            ({"POD_TAILOR_PROFILES": "p", "POD_TAILOR_VENV": "v", "POD_TAILOR_CORPUS": "c"}, []),
        ],
    )
    def test_a_variable_that_is_a_near_miss_of_a_setting_is_named(
        self, variables: dict[str, str], named: list[str]
    ) -> None:
        said = unknown_variables({**variables, "HOME": "/h"})
        assert [line.removeprefix("warning: ").replace(" is read by no verb", "").removesuffix(": ignored")
                for line in said] == named  # fmt: skip

    def test_every_verb_sets_its_start_up_for_check_config_and_its_run(self) -> None:
        for verb in VERBS:
            parser = build_parser()
            for name in verb:
                (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
                parser = sub.choices[name]
            assert callable(parser.get_default("configure")), verb
            assert callable(parser.get_default("func")), verb

    @pytest.mark.parametrize(
        "argv",
        [
            ["preview", "-f", "x.yaml", "--profiles", "p.json"],
            ["profiles", "build", "--store", "p.json"],
            ["recommend", "--kubernetes"],
            ["report", "--store-namespace", "ns"],
            ["profiles", "build", "--prometheus", "http://p:9090"],
            ["dashboard", "--timeout", "30"],
            ["certs", "--namespace", "ns"],
        ],
        ids=" ".join,
    )
    def test_an_old_name_is_unknown(self, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
        code, _, err = run(capsys, *argv)
        assert code == 2
        assert "unrecognized arguments" in err


class TestWithoutACluster:
    def test_the_dashboard_says_at_once_that_there_is_no_cluster_and_how_to_give_one(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, out, err = run(capsys, "dashboard", "--port", "1")
        assert (code, out) == (3, "")
        assert err.startswith("pod-tailor dashboard: no cluster to read (")
        assert err.endswith("): pass --kubeconfig FILE, or -f DIR to show manifests\n")

    def test_check_config_reads_everything_and_starts_nothing(
        self, capsys: pytest.CaptureFixture[str], deploy: Path, tmp_path: Path
    ) -> None:
        assert run(capsys, "--check-config", "dashboard", "-f", str(deploy)) == (
            0,
            "pod-tailor dashboard: configuration OK\n",
            "",
        )
        code, _, err = run(capsys, "--check-config", "dashboard", "-f", str(tmp_path / "nope"))
        assert (code, err) == (
            2,
            f"pod-tailor dashboard: -f {tmp_path / 'nope'}: no such file or directory\n",
        )


# Bad input a person gives, run as a person runs it: its own process, with Python's development mode
# on (ResourceWarnings and other hidden warnings printed).
DEV_CASES = {
    "binary file": (["preview", "-f", "{image}"], "not UTF-8 text"),  # left out: exit 1
    "broken YAML": (["preview", "-f", "{broken}"], "expected <block end>"),  # left out: exit 1
    "missing file": (["report", "-f", "{missing}"], "no such file or directory"),
    "missing store": (["preview", "-f", "{deploy}", "--profiles-path", "{missing}"], "no such file"),
    "bad port": (["dashboard", "--port", "80800"], "is not a port"),
    "bad policy": (["preview", "-f", "{deploy}", "--policy-file", "{broken}"], "expected <block end>"),
    "contradictory TLS": (
        [
            "--check-config",
            "dashboard",
            "--prometheus-url",
            "http://p:9090",
            "--prometheus-ca-file",
            "/ca.crt",
        ],
        "plain http://: use https://",
    ),
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("dev")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "broken.yaml").write_text(BROKEN)
    (root / "deploy.yaml").write_text(
        DEPLOYMENT + "".join("---\n" + DEPLOYMENT.replace("name: web,", f"name: web{i},") for i in range(20))
    )
    return {
        "image": str(root / "image.png"),
        "broken": str(root / "broken.yaml"),
        "missing": str(root / "missing.yaml"),
        "deploy": str(root / "deploy.yaml"),
    }


def test_bad_input_in_development_mode_is_one_line_without_a_traceback_or_a_resource_warning(
    files: dict[str, str],
) -> None:
    """All cases in one `python -X dev` process (tests/cli/devmode.py), each with its own output."""
    cases = [[arg.format(**files) for arg in argv] for argv, _ in DEV_CASES.values()]
    result = subprocess.run(
        [sys.executable, "-X", "dev", str(ROOT / "tests" / "cli" / "devmode.py"), json.dumps(cases)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # nothing outside the cases either (a warning at exit, say)
    for name, ran in zip(DEV_CASES, json.loads(result.stdout), strict=True):
        assert ran["code"] == (1 if name in ("binary file", "broken YAML") else 2), (name, ran)
        assert ran["out"] == "", name
        assert ran["err"].count("\n") == 1, (name, ran["err"])
        assert DEV_CASES[name][1] in ran["err"], (name, ran["err"])


def test_output_to_a_reader_that_went_away_ends_quietly(files: dict[str, str]) -> None:
    """`pod-tailor preview ... | head`: the pipe closes while the command still writes."""
    process = subprocess.Popen(
        [sys.executable, "-X", "dev", "-m", "webhook", "preview", "-f", files["deploy"]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()  # the reader is gone before the first byte is written
    err = process.stderr.read()
    process.wait(timeout=120)
    assert process.returncode == 141  # as a shell shows a command ended by SIGPIPE
    for sign in ("Traceback", "BrokenPipe", "Exception ignored"):
        assert sign not in err
