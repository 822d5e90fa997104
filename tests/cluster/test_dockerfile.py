"""The Dockerfile: parsed instruction by instruction, and checked against the CLI and the manifests.

No Docker daemon runs where these tests run, so the image build itself is only attempted when
`docker info` succeeds (and skipped with that reason otherwise).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from webhook.commands import build_parser

ROOT = Path(__file__).resolve().parents[2]


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs: comments dropped, backslash continuations joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical = (pending + line).strip()
        pending = ""
        keyword, _, arguments = logical.partition(" ")
        out.append((keyword.upper(), arguments.strip()))
    assert not pending, "dangling line continuation"
    return out


def stages(parsed: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for keyword, arguments in parsed:
        if keyword == "FROM":
            result.append([])
        if result:
            result[-1].append((keyword, arguments))
    return result


@pytest.fixture(scope="module")
def parsed() -> list[tuple[str, str]]:
    return instructions((ROOT / "Dockerfile").read_text())


KNOWN = {"ARG", "FROM", "ENV", "RUN", "WORKDIR", "COPY", "LABEL", "USER", "EXPOSE", "ENTRYPOINT", "CMD"}


def test_every_instruction_is_a_dockerfile_instruction(parsed: list[tuple[str, str]]) -> None:
    assert {keyword for keyword, _ in parsed} <= KNOWN


def test_the_entrypoint_runs_pod_tailor_serve_from_the_cli(parsed: list[tuple[str, str]]) -> None:
    final = stages(parsed)[-1]
    (entrypoint,) = [json.loads(a) for k, a in final if k == "ENTRYPOINT"]
    (cmd,) = [json.loads(a) for k, a in final if k == "CMD"]
    assert entrypoint + cmd == ["pod-tailor", "serve"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[entrypoint[0]] == "webhook.commands:main"
    assert build_parser().parse_args([*cmd, "--port", "8443"]).command == "serve"


def test_the_final_stage_runs_as_the_numeric_user_the_manifests_expect(parsed: list[tuple[str, str]]) -> None:
    final = stages(parsed)[-1]
    (user,) = [a for k, a in final if k == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit()
    assert int(uid) != 0
    deployment = yaml.safe_load((ROOT / "manifests" / "base" / "webhook-deployment.yaml").read_text())
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == int(uid)
    (port,) = [a for k, a in final if k == "EXPOSE"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert int(port) == container["ports"][0]["containerPort"]


def test_the_final_stage_only_copies_the_built_virtualenv(parsed: list[tuple[str, str]]) -> None:
    build, final = stages(parsed)
    assert [a for k, a in final if k == "COPY"] == ["--from=build /opt/pod-tailor /opt/pod-tailor"]
    assert not [a for k, a in final if k == "RUN"]  # no package manager, so no compilers or build tools
    assert build[0][1].endswith("AS build")


def test_dependencies_are_installed_in_a_layer_before_the_source_is_copied(
    parsed: list[tuple[str, str]],
) -> None:
    build = stages(parsed)[0]
    order = [(k, a) for k, a in build if k in ("COPY", "RUN")]
    deps = next(i for i, (k, a) in enumerate(order) if k == "RUN" and "--requirement" in a)
    source = next(i for i, (k, a) in enumerate(order) if k == "COPY" and "webhook" in a)
    assert order[deps - 1] == ("COPY", "pyproject.toml ./")
    assert deps < source


def test_the_build_context_leaves_out_local_state_and_secrets() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert {".git", ".venv", ".dev", "tests", "manifests"} <= ignored


def _docker_works() -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    return subprocess.run([docker, "info"], capture_output=True, timeout=20).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _docker_works(), reason="no working Docker daemon here")
def test_the_image_builds_and_prints_the_cli_help() -> None:
    subprocess.run(["docker", "build", "-t", "pod-tailor:test", str(ROOT)], check=True, timeout=900)
    result = subprocess.run(
        ["docker", "run", "--rm", "pod-tailor:test", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "serve" in result.stdout
