"""A test run reads and writes no one's real home: HOME and the XDG directories are a private temporary
directory for the run and every process it starts (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
from pathlib import Path

from privatehome import MARK, TEST_CONTROLS, XDG

from webhook.profiles.checkpoint import default_checkpoint_path
from webhook.profiles.store import default_store_path

ROOT = Path(__file__).resolve().parents[2]


def in_private_home(path: str | Path) -> bool:
    home = Path(os.environ["HOME"])
    return Path(path).is_relative_to(home) and home.name.startswith(MARK)


class TestThePrivateHome:
    def test_home_and_every_xdg_directory_are_a_temporary_directory_not_the_users(self) -> None:
        home = Path(os.environ["HOME"])
        assert home.is_relative_to(tempfile.gettempdir())
        assert home != Path(pwd.getpwuid(os.getuid()).pw_dir)
        for variable in XDG:
            assert in_private_home(os.environ[variable]), variable

    def test_the_default_profile_store_and_checkpoint_live_in_it(self) -> None:
        assert in_private_home(default_store_path())
        assert in_private_home(default_checkpoint_path())

    def test_a_subprocess_inherits_it_and_no_pod_tailor_setting_of_the_caller(self) -> None:
        code = "import os, json; print(json.dumps(dict(os.environ)))"
        shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        env = json.loads(shown.stdout)
        assert env["HOME"] == os.environ["HOME"]
        settings = [name for name in env if name.startswith("POD_TAILOR_")]
        assert [name for name in settings if not name.startswith(TEST_CONTROLS)] == []
        assert "KUBECONFIG" not in env


def test_a_run_that_writes_like_the_suite_leaves_the_home_it_started_with_untouched(tmp_path: Path) -> None:
    """A child pytest started as a user would start it (their HOME, no XDG variables, their settings
    exported) runs tests/isolation/probe.py: kubectl, Chromium, the default store and checkpoint. The
    home it started with is still empty afterwards."""
    users_home = tmp_path / "home"
    users_home.mkdir()
    env = {name: value for name, value in os.environ.items() if not name.startswith("XDG_")}
    env |= {
        "HOME": str(users_home),
        "POD_TAILOR_PROFILES": str(users_home / "profiles.json"),
        "KUBECONFIG": str(users_home / ".kube" / "config"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
         "tests/isolation/probe.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout
    assert sorted(users_home.rglob("*")) == []
