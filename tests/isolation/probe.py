"""Writes the way the suite's tests do (kubectl, Chromium, the default profile store and checkpoint, a
`pod-tailor` subprocess); tests/isolation/test_private_home.py runs this file in a child pytest started
with a home of its own and checks that nothing reached that home. Not collected by a normal run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kubefake import FakeKube

from webhook.profiles.checkpoint import Checkpoint, default_checkpoint_path, save
from webhook.profiles.store import FileStore, ProfileDocument, default_store_path


def home() -> Path:
    return Path(os.environ["HOME"])


def test_the_default_store_and_checkpoint_are_written_under_the_private_home() -> None:
    FileStore().write(ProfileDocument({}, 1.0, "probe"))
    save(Checkpoint("probe"), default_checkpoint_path())
    assert default_store_path().is_file()
    assert default_checkpoint_path().is_file()
    assert default_store_path().is_relative_to(home())
    assert default_checkpoint_path().is_relative_to(home())


def test_a_subprocess_writes_the_default_store_under_the_private_home() -> None:
    code = "from webhook.profiles.store import *; FileStore().write(ProfileDocument({}, 2.0, 'child'))"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert FileStore().read().source == "child"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_keeps_its_cache_under_the_private_home(tmp_path: Path) -> None:
    with FakeKube(token="") as kube:
        config = kube.write_kubeconfig(tmp_path / "kubeconfig")
        subprocess.run(
            ["kubectl", "--kubeconfig", str(config), "get", "namespaces"], check=True, capture_output=True,
            timeout=60,
        )
    assert list((home() / ".kube" / "cache").rglob("*.json"))


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed")
def test_chromium_starts_and_draws_a_page(tmp_path: Path) -> None:
    from tests.dashboard.browser import start_browser

    browser = start_browser(tmp_path / "profile")
    try:
        browser.get("data:text/html,<p>probe</p>")
        assert "probe" in browser.page_source
    finally:
        browser.quit()
