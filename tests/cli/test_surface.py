"""Issue 45, item by item, through the real command: `python -X dev -m webhook ...` in a process of its own
(hidden warnings such as ResourceWarning shown), with a private home and no cluster, its message and exit
code asserted, and never a traceback or a ResourceWarning on its stderr.

The cases that only run a command and read what it said run together, four at a time, once per module
(`ran`); the ones that serve (the dashboard) or run a script start their own process. Exit codes, as every
verb has them (webhook/commands/failures.py): 0 done, 1 findings, 2 bad options or input, 3 a dependency
not reached.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.tools import free_port
from webhook.server.certs import write_dev_certs

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: nginx:1.27, ports: [{containerPort: 8080}]}]
"""
POD = "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers: {containers}\n"


def named(name: str) -> str:
    """The web Deployment, called `name`."""
    return WEB.replace("name: web", f"name: {name}").replace("app: web", f"app: {name}")


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def files(root: Path) -> dict[str, Path]:
    """The inputs of every case, by name."""
    written = {
        "web.yaml": WEB,
        "strings.yaml": POD.format(name="s", containers="[nginx]"),
        "string.yaml": POD.format(name="s2", containers='"nginx"'),
        "negative.yaml": WEB.replace("spec:\n  selector", "spec:\n  replicas: -3\n  selector"),
        "eighty.yaml": WEB.replace("containerPort: 8080", 'containerPort: "eighty"'),
        "no-containers.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: e}\nspec: {}\n",
        "bad-policy.yaml": "policies: [not, a, mapping]\n",
        "mixed/good.yaml": WEB,
        "mixed/strings.yaml": POD.format(name="s", containers="[nginx]"),
        "nested/apps/web.yaml": WEB,
        "two/a.yaml": named("a"),
        "two/b.yaml": named("b"),
    }
    for name, text in written.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    ca, cert, key = write_dev_certs(root / "tls")
    return {**{name: root / name for name in written}, "cert": cert, "key": key, "ca": ca,
            "store": ROOT / "docs" / "examples" / "profiles.json"}  # fmt: skip


def environment(home: Path, **more: str) -> dict[str, str]:
    """This process' environment without pod-tailor's variables or a cluster, a private home."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("POD_TAILOR_", "KUBERNETES_", "XDG_"))}
    return {**kept, "HOME": str(home), "KUBECONFIG": str(home / "no-kubeconfig"), **more}


def run(argv: list[str], *, env: Mapping[str, str], cwd: Path = ROOT, timeout: float = 60) -> Ran:
    done = subprocess.run([sys.executable, "-X", "dev", "-m", "webhook", *argv], capture_output=True,
                          text=True, cwd=cwd, env=dict(env), timeout=timeout)  # fmt: skip
    return Ran(done.returncode, done.stdout, done.stderr)


def quiet(ran: Ran) -> None:
    """No traceback, no warning Python shows in development mode."""
    for sign in ("Traceback", "ResourceWarning", "Exception ignored", "DeprecationWarning"):
        assert sign not in ran.err, ran.err


# name -> (argv, extra variables); `{name}` is a file of `files`, `{port}` a free port.
CASES: dict[str, tuple[list[str], dict[str, str]]] = {
    # 1. --check-config says what the start says
    "serve: missing policy file": (["serve", "--policy-file", "/nope.yaml", "--cert-file", "{cert}",
                                    "--key-file", "{key}", "--port", "{port}"], {}),
    "serve: invalid policy file": (["serve", "--policy-file", "{bad-policy.yaml}", "--cert-file", "{cert}",
                                    "--key-file", "{key}", "--port", "{port}"], {}),
    "serve: missing certificate files": (["serve", "--cert-file", "/nope.crt", "--key-file", "/nope.key",
                                          "--port", "{port}"], {}),
    "serve: no certificate": (["serve", "--port", "{port}"], {}),
    "recommend: no Prometheus URL": (["recommend"], {}),
    "report: ConfigMap store, no cluster": (
        ["report", "--profiles-store", "kubernetes", "-f", "{web.yaml}"], {}
    ),
    # 2. bad input is one line, never a traceback
    "report: containers [nginx]": (["report", "-f", "{strings.yaml}"], {}),
    "report: containers 'nginx'": (["report", "-f", "{string.yaml}"], {}),
    "report: one bad file of a directory": (["report", "-f", "{mixed}", "-o", "json"], {}),
    "preview: containers [nginx]": (["preview", "-f", "{strings.yaml}"], {}),
    # 4. the flags the issue found in the docs
    "recommend --kubernetes": (["recommend", "--kubernetes"], {}),
    "profiles build --prometheus": (["profiles", "build", "--prometheus", "http://p:9090"], {}),
    "profiles show --store": (["profiles", "show", "--store", "p.json"], {}),
    "report --store-namespace": (["report", "--store-namespace", "pod-tailor"], {}),
    "recommend --timeout": (["recommend", "--timeout", "30"], {}),
    "certs --namespace": (["certs", "--namespace", "ns"], {}),
    "report --cluster": (["report", "--cluster"], {}),
    # 5. one name per setting
    "preview: POD_TAILOR_PROFILES": (["preview", "-f", "{web.yaml}", "-n", "shop"],
                                     {"POD_TAILOR_PROFILES": "{store}"}),
    "preview: POD_TAILOR_PROFILES_PATH": (["preview", "-f", "{web.yaml}", "-n", "shop"],
                                          {"POD_TAILOR_PROFILES_PATH": "{store}"}),
    "report: -n and --namespace": (["report", "-f", "{two}", "-n", "default", "--namespace", "other", "-o",
                                    "json"], {}),
    # 6. no silent fallback, one convention of exit codes and logs
    "cluster-preview --kubectl /nope": (["cluster-preview", "-f", "{web.yaml}", "--kubectl", "/nope"], {}),
    "cluster-preview --context bogus": (["cluster-preview", "-f", "{web.yaml}", "--context", "bogus"], {}),
    "recommend: a failed build": (["recommend", "--prometheus-url", "http://127.0.0.1:{port}", "--max-builds",
                                   "1", "--no-checkpoint", "--profiles-path", "{home}/p.json"], {}),
    "report: no cluster": (["report"], {}),
    "dashboard: no cluster": (["dashboard", "--port", "{port}"], {}),
    # 7. manifests the API server would refuse, and -f DIR
    "preview: replicas -3": (["preview", "-f", "{negative.yaml}"], {}),
    "report: replicas -3": (["report", "-f", "{negative.yaml}", "-f", "{web.yaml}", "-o", "json"], {}),
    "preview: containerPort eighty": (["preview", "-f", "{eighty.yaml}"], {}),
    "preview: spec {}": (["preview", "-f", "{no-containers.yaml}"], {}),
    "preview: notes of two files": (["preview", "-f", "{two}", "--namespace-label",
                                     "pod-tailor.io/mode=dry-run"], {}),
    "preview: --patch of two workloads": (["preview", "-f", "{two}", "--patch"], {}),
    "report: -f DIR of subfolders": (["report", "-f", "{nested}"], {}),
    "dashboard: -f DIR of subfolders": (["dashboard", "-f", "{nested}", "--port", "{port}"], {}),
    "preview: -f DIR of subfolders": (["preview", "-f", "{nested}"], {}),
    "report: -f DIR -R": (["report", "-f", "{nested}", "-R", "-o", "json"], {}),
    # 8. small things
    "certs --out elsewhere": (["certs", "--out", "{home}/certs"], {}),
    "certs --days 100000": (["certs", "--days", "100000", "--out", "{home}/certs"], {}),
    "README's preview example": (["preview", "-f", "docs/examples/web.yaml", "--diff"], {}),
}
CHECKED = (
    "serve: missing policy file", "serve: invalid policy file", "serve: missing certificate files",
    "serve: no certificate", "recommend: no Prometheus URL", "report: ConfigMap store, no cluster",
)


@pytest.fixture(scope="module")
def given(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], Path]:
    root = tmp_path_factory.mktemp("surface")
    (root / "home").mkdir()
    return files(root), root / "home"


def _filled(text: str, given: dict[str, Path], home: Path, port: int) -> str:
    directories = {name: str(given[f"{name}/{first}"].parents[depth])
                   for name, first, depth in (("two", "a.yaml", 0), ("mixed", "good.yaml", 0),
                                              ("nested", "apps/web.yaml", 1))}  # fmt: skip
    names = {**{name: str(path) for name, path in given.items()}, **directories, "home": str(home),
             "port": str(port)}
    return re.sub(r"\{([\w./ -]+)\}", lambda m: names[m[1]], text)


@pytest.fixture(scope="module")
def ran(given: tuple[dict[str, Path], Path]) -> dict[str, Ran]:
    """Every case, and every case of item 1 again under --check-config."""
    paths, home = given
    jobs = {}
    for name, (argv, extra) in CASES.items():
        port = free_port()
        argv = [_filled(arg, paths, home, port) for arg in argv]
        env = environment(home, **{key: _filled(value, paths, home, port) for key, value in extra.items()})
        jobs[name] = (argv, env)
        if name in CHECKED:
            jobs[f"--check-config {name}"] = (["--check-config", *argv], env)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run, argv, env=env) for name, (argv, env) in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def said(ran: dict[str, Ran], case: str) -> Ran:
    result = ran[case]
    quiet(result)
    return result


class TestItem1CheckConfigChecks:
    @pytest.mark.parametrize(
        ("case", "code", "message"),
        [
            ("serve: missing policy file", 2,
             "pod-tailor serve: policy file /nope.yaml: No such file or directory"),
            ("serve: invalid policy file", 2, "must be a mapping"),
            ("serve: missing certificate files", 2, "pod-tailor serve: --cert-file /nope.crt, --key-file "
             "/nope.key: cannot load the TLS certificate: No such file or directory"),
            ("serve: no certificate", 2, "pod-tailor serve: serve needs --cert-file and --key-file"),
            ("recommend: no Prometheus URL", 2,
             "pod-tailor recommend: no Prometheus URL: pass --prometheus-url"),
            ("report: ConfigMap store, no cluster", 3, "pod-tailor report: no cluster to read"),
        ],
    )
    def test_the_check_says_what_the_start_says_in_one_line_with_its_exit_code(
        self, ran: dict[str, Ran], case: str, code: int, message: str
    ) -> None:
        start, check = said(ran, case), said(ran, f"--check-config {case}")
        assert (check.code, check.err) == (start.code, start.err)
        assert start.code == code
        assert message in start.err
        assert start.err.count("\n") == 1
        assert "configuration OK" not in check.out

    def test_a_config_that_starts_is_ok_and_starts_nothing(self, given: tuple[dict[str, Path], Path]) -> None:
        paths, home = given
        checked = run(["--check-config", "serve", "--cert-file", str(paths["cert"]), "--key-file",
                       str(paths["key"]), "--port", "1"], env=environment(home))  # fmt: skip
        quiet(checked)
        assert (checked.code, checked.out, checked.err) == (0, "pod-tailor serve: configuration OK\n", "")


class DashboardRun:
    """`pod-tailor dashboard ARGS` in development mode until left; on leaving, its stderr is checked."""

    def __init__(self, args: list[str], home: Path) -> None:
        self.args, self.home, self.port = args, home, free_port()

    def __enter__(self) -> str:
        self.process = subprocess.Popen(
            [sys.executable, "-X", "dev", "-m", "webhook", "dashboard", *self.args, "--port", str(self.port),
             "--refresh-seconds", "3600"],
            cwd=ROOT, env=environment(self.home), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    return url
            except httpx.HTTPError:
                pass
            assert self.process.poll() is None, self.process.stderr.read() if self.process.stderr else ""
            assert time.monotonic() < deadline, "the dashboard did not become ready in 60 s"
            time.sleep(0.1)

    def __exit__(self, *_: object) -> None:
        self.process.terminate()
        err = self.process.communicate(timeout=30)[1]
        quiet(Ran(self.process.returncode, "", err))
        assert all(line.startswith("{") for line in err.splitlines()), err  # JSON lines, as serve logs


class TestItem2NoTraceback:
    @pytest.mark.parametrize("case", ["report: containers [nginx]", "report: containers 'nginx'"])
    def test_a_pod_whose_containers_are_not_objects_is_named_and_the_report_has_nothing(
        self, ran: dict[str, Ran], case: str
    ) -> None:
        result = said(ran, case)
        assert result.code == 1
        assert "spec.containers is not a list of objects: the API server would refuse it" in result.err
        assert "pod-tailor report: nothing to report" in result.err

    def test_one_such_file_of_several_leaves_the_rest_reported(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "report: one bad file of a directory")
        assert result.code == 1
        assert [w["name"] for w in json.loads(result.out)["workloads"]] == ["web"]
        assert "strings.yaml: Pod s: spec.containers is not a list of objects" in result.err

    def test_preview_says_the_same_of_the_same_file(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "preview: containers [nginx]")
        assert result.code == 1
        assert "Pod s: spec.containers is not a list of objects: the API server would refuse it" in result.err

    def test_the_dashboard_serves_the_rest_and_names_the_bad_file(
        self, given: tuple[dict[str, Path], Path]
    ) -> None:
        paths, home = given
        with DashboardRun(["-f", str(paths["mixed/good.yaml"].parent)], home) as url:
            body = httpx.get(url + "/api/report", timeout=10).json()
        assert [w["name"] for w in body["workloads"]] == ["web"]
        assert any("spec.containers is not a list of objects" in problem for problem in body["problems"])


class TestItem3CertsScript:
    def test_generate_sh_passes_its_arguments_to_certs_not_to_pip(self, tmp_path: Path) -> None:
        """Without pod-tailor on PATH it sources scripts/_venv.sh, here a virtualenv that is up to date
        (a fresh install stamp, the repository's command): `--days 30` must reach `pod-tailor certs`,
        not pip as extras. Its `python` only says it was asked to install: nothing is installed."""
        venv = tmp_path / "venv"
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "pod-tailor").symlink_to(Path(sys.executable).parent / "pod-tailor")
        stub = venv / "bin" / "python"
        stub.write_text("#!/bin/sh\necho \"scripts/_venv.sh would install: $*\" >&2\nexit 97\n")
        stub.chmod(0o755)
        (venv / ".installed").touch()
        path = ":".join(p for p in os.environ["PATH"].split(":") if not (Path(p) / "pod-tailor").exists())
        done = subprocess.run(
            ["bash", str(ROOT / "certs" / "generate.sh"), "--days", "30", "--out", str(tmp_path / "out")],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
            env={**environment(tmp_path), "PATH": path, "POD_TAILOR_VENV": str(venv)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "valid 30 days" in done.stdout
        assert (tmp_path / "out" / "tls.crt").is_file()
        assert "would install" not in done.stderr


class TestItem4DocsNameRealFlags:
    @pytest.mark.parametrize(
        ("case", "flag"),
        [
            ("recommend --kubernetes", "--kubernetes"),
            ("profiles build --prometheus", "--prometheus"),
            ("profiles show --store", "--store"),
            ("report --store-namespace", "--store-namespace"),
            ("recommend --timeout", "--timeout"),
            ("certs --namespace", "--namespace"),
            ("report --cluster", "--cluster"),
        ],
    )
    def test_a_flag_the_docs_named_wrongly_is_unknown_to_its_verb(
        self, ran: dict[str, Ran], case: str, flag: str
    ) -> None:
        """tests/test_docs_flags.py holds every page to the parsers; these are the ones the issue found."""
        result = said(ran, case)
        assert result.code == 2
        assert f"unrecognized arguments: {flag}" in result.err
        assert result.err.count("\n") == 1


class TestItem5OneNamePerSetting:
    def test_every_verb_reads_the_store_from_POD_TAILOR_PROFILES(self, ran: dict[str, Ran]) -> None:  # noqa: N802
        result = said(ran, "preview: POD_TAILOR_PROFILES")
        assert result.code == 0
        assert "requests.cpu=350m (profile" in result.out

    def test_a_near_miss_of_a_variable_is_named_not_ignored(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "preview: POD_TAILOR_PROFILES_PATH")
        assert result.code == 0
        assert ("pod-tailor preview: warning: POD_TAILOR_PROFILES_PATH is read by no verb (did you mean "
                "POD_TAILOR_PROFILES?): ignored") in result.err
        assert "requests.cpu=100m (from policy" in result.out

    def test_report_takes_n_and_namespace_as_one_option(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "report: -n and --namespace")
        assert result.code == 0
        assert {w["namespace"] for w in json.loads(result.out)["workloads"]} == {"default"}

    @pytest.mark.parametrize(
        "verb", [["serve"], ["preview"], ["profiles", "show"], ["report"], ["dashboard"]], ids=" ".join
    )
    def test_each_verb_documents_the_same_variable_for_the_store(
        self, verb: list[str], given: tuple[dict[str, Path], Path]
    ) -> None:
        shown = run([*verb, "--help"], env=environment(given[1]))
        assert shown.code == 0
        assert re.search(r"--profiles-path FILE\s+the profile store file \[POD_TAILOR_PROFILES;", shown.out)


class TestItem6NoSilentFallback:
    def test_a_kubectl_that_is_not_there_is_an_error_not_a_fallback(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "cluster-preview --kubectl /nope")
        assert (result.code, result.out) == (2, "")
        assert result.err == "pod-tailor cluster-preview: --kubectl /nope: no such executable\n"

    @pytest.mark.skipif(KUBECTL is None, reason="kubectl not installed")
    def test_a_context_that_does_not_exist_is_named_not_a_refusal(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "cluster-preview --context bogus")
        assert (result.code, result.out) == (2, "")
        assert result.err == 'pod-tailor cluster-preview: kubectl: context "bogus" does not exist\n'

    def test_a_last_build_that_failed_is_the_exit_code_and_the_log_is_json(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "recommend: a failed build")
        assert result.code == 3  # Prometheus could not be reached
        logged = [json.loads(line) for line in result.err.splitlines()]
        assert any(line["message"].startswith("profile build failed") for line in logged)

    def test_without_a_url_recommend_stops_at_once(self, ran: dict[str, Ran]) -> None:
        assert said(ran, "recommend: no Prometheus URL").code == 2

    @pytest.mark.parametrize("case", ["report: no cluster", "dashboard: no cluster"])
    def test_no_cluster_is_exit_3_in_every_verb(self, ran: dict[str, Ran], case: str) -> None:
        result = said(ran, case)
        assert (result.code, result.out) == (3, "")
        assert "no cluster to read (no in-cluster service account and no kubeconfig): pass --kubeconfig" in (
            result.err
        )


class TestItem7InvalidManifests:
    @pytest.mark.parametrize(
        ("case", "problem"),
        [
            ("preview: replicas -3", "Deployment web: spec.replicas -3 is not a whole number, 0 or more"),
            ("preview: containerPort eighty", "Deployment web: spec.template: spec.containers[].ports[]."
             "containerPort 'eighty' is not a port number (1 to 65535)"),
            ("preview: spec {}", "Pod e: spec.containers is empty"),
        ],
    )
    def test_what_the_api_server_would_refuse_is_named_and_left_out_exit_1(
        self, ran: dict[str, Ran], case: str, problem: str
    ) -> None:
        result = said(ran, case)
        assert result.code == 1
        assert f".yaml:1: {problem}: the API server would refuse it (this document is left out)" in result.err

    def test_the_report_counts_no_pod_of_a_refused_workload(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "report: replicas -3")
        assert result.code == 1
        report = json.loads(result.out)
        assert [(w["name"], w["replicas"]) for w in report["workloads"]] == [("web", 1)]

    def test_notes_of_several_files_name_their_file(
        self, ran: dict[str, Ran], given: tuple[dict[str, Path], Path]
    ) -> None:
        result = said(ran, "preview: notes of two files")
        two = given[0]["two/a.yaml"].parent
        assert result.code == 0
        assert f"# {two / 'a.yaml'}: Deployment/a:" in result.err.splitlines()
        assert f"# {two / 'b.yaml'}: Deployment/b:" in result.err.splitlines()

    def test_a_patch_of_several_workloads_says_whose_it_is(
        self, ran: dict[str, Ran], given: tuple[dict[str, Path], Path]
    ) -> None:
        result = said(ran, "preview: --patch of two workloads")
        two = given[0]["two/a.yaml"].parent
        lines = [json.loads(line) for line in result.out.splitlines()]
        assert [(line["file"], line["workload"]) for line in lines] == [
            (str(two / "a.yaml"), "Deployment/a"), (str(two / "b.yaml"), "Deployment/b"),
        ]
        assert all(op["path"].startswith("/spec/template/") for line in lines for op in line["patch"])

    @pytest.mark.parametrize("verb", ["report", "dashboard", "preview"])
    def test_a_directory_whose_manifests_sit_in_subfolders_says_so_and_suggests_r(
        self, ran: dict[str, Ran], verb: str, given: tuple[dict[str, Path], Path]
    ) -> None:
        result = said(ran, f"{verb}: -f DIR of subfolders")
        nested = given[0]["nested/apps/web.yaml"].parents[1]
        assert (result.code, result.out) == (2, "")
        assert result.err == (
            f"pod-tailor {verb}: -f {nested}: no .yaml, .yml or .json file in it, so no file was read; its "
            "subdirectories hold 1: add -R to read them\n"
        )
        assert [w["name"] for w in json.loads(said(ran, "report: -f DIR -R").out)["workloads"]] == ["web"]


class TestItem8SmallThings:
    def test_certs_elsewhere_does_not_point_at_the_self_signed_overlay(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "certs --out elsewhere")
        assert result.code == 0
        assert "kubectl apply -k manifests/overlays/self-signed" not in result.out
        assert result.out.splitlines()[-1].startswith("apply with an overlay of your own: ")

    def test_certs_refuses_a_lifetime_of_centuries(self, ran: dict[str, Ran]) -> None:
        result = said(ran, "certs --days 100000")
        assert result.code == 2
        assert result.err.startswith("pod-tailor certs: --days: 100000: use a whole number from 1 to 3650")

    def test_the_readme_previews_a_file_the_repository_has(self, ran: dict[str, Ran]) -> None:
        assert "pod-tailor preview -f docs/examples/web.yaml --diff" in README
        result = said(ran, "README's preview example")
        assert result.code == 0
        assert "+++ Deployment/web (tailored)" in result.out

    def test_the_readme_decodes_the_patch_as_scripts_run_says_to(self) -> None:
        decode = "r[\"patch\"]=json.loads(base64.b64decode(r.get(\"patch\",\"W10=\")))"
        assert decode in README
        assert decode in (ROOT / "scripts" / "run").read_text(encoding="utf-8")

    def test_the_readme_spells_the_command_one_way_and_names_the_server_side_dry_run(self) -> None:
        assert ".venv/bin/pod-tailor" not in README
        assert "kubectl apply --dry-run=server" in README

    def test_the_readme_names_every_debian_package_scripts_test_installs(self) -> None:
        script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
        installed = re.findall(r"need\+=\(([\w-]+)\)", script)
        assert installed
        for package in set(installed):
            assert f"`{package}`" in README, package

    @pytest.mark.parametrize("store", [True, False])
    def test_scripts_run_says_whether_it_sizes_from_the_per_user_store(
        self, tmp_path: Path, store: bool
    ) -> None:
        """scripts/run with a bad extra argument: it says which store applies, then serve refuses."""
        if store:
            (tmp_path / ".local" / "share" / "pod-tailor").mkdir(parents=True)
            (tmp_path / ".local" / "share" / "pod-tailor" / "profiles.json").write_text("{}")
        env = {**environment(tmp_path), "POD_TAILOR_PORT": str(free_port())}
        done = subprocess.run(["bash", str(ROOT / "scripts" / "run"), "--log-level", "loud"],
                              capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)  # fmt: skip
        assert done.returncode == 2
        where = tmp_path / ".local" / "share" / "pod-tailor" / "profiles.json"
        expected = (f"requests from the profile store {where} where it has a workload" if store
                    else f"no profile store at {where}: requests from the policy alone")
        assert expected in done.stderr


README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_case_ran_in_development_mode_without_a_traceback(ran: dict[str, Ran]) -> None:
    """The cases above read what they need; this reads every stderr."""
    for case in ran:
        said(ran, case)
