"""The private home every test run gets (tests/conftest.py sets it up before any test is collected).

HOME and the XDG directories point into a fresh temporary directory for the test process and so for
every process it starts: kubectl's cache, Chromium's files, the default profile store and the build
checkpoint all land there. The caller's POD_TAILOR_* settings and KUBECONFIG are dropped, so a run
neither reads nor writes the real home (tests/isolation/ proves it).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["MARK", "TEST_CONTROLS", "XDG", "make_private_home"]

MARK = "pod-tailor-tests-home-"  # the private home's directory name starts with this
XDG = {
    "XDG_DATA_HOME": ".local/share",
    "XDG_CACHE_HOME": ".cache",
    "XDG_CONFIG_HOME": ".config",
    "XDG_STATE_HOME": ".local/state",
    "XDG_RUNTIME_DIR": "run",
}
# Variables that steer the tests themselves (a fixed clock hour, where screenshots are copied): kept.
TEST_CONTROLS = ("POD_TAILOR_TEST_", "POD_TAILOR_SCREENSHOTS")


def make_private_home() -> Path:
    """A fresh home for this run, set in os.environ (which every subprocess inherits)."""
    home = Path(tempfile.mkdtemp(prefix=MARK))
    os.environ["HOME"] = str(home)
    for variable, relative in XDG.items():
        path = home / relative
        path.mkdir(parents=True, mode=0o700)
        os.environ[variable] = str(path)
    for variable in [name for name in os.environ if name.startswith("POD_TAILOR_")]:
        if not variable.startswith(TEST_CONTROLS):
            del os.environ[variable]  # a developer's exported settings must not steer a test
    os.environ.pop("KUBECONFIG", None)  # nor point one at a real cluster
    return home
