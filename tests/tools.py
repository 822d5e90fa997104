"""What the tests and benchmarks take from the machine: the programs they run, and free loopback ports.

Programs (promtool, prometheus): scripts/test installs them; missing is one of two cases.

Where the suite could have installed them (root with apt-get, as in CI and on a developer's machine) a
missing program is a broken set-up and the test fails, saying to run scripts/test; only where it cannot
(not root, no apt-get) does the test skip, with that reason. Every test needing one asks here, so a
missing program never skips one test and fails another.
"""

from __future__ import annotations

import os
import shutil
import socket

import pytest

__all__ = ["can_install", "free_port", "require_programs"]


def can_install() -> bool:
    """Whether scripts/test can install Debian packages here (what it does when a program is missing)."""
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def require_programs(*names: str, package: str) -> list[str]:
    """The paths of `names`; otherwise fail, or skip where scripts/test could not have installed them."""
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        what = f"{' and '.join(missing)} not installed (Debian package {package})"
        if can_install():
            pytest.fail(f"{what}: run scripts/test, which installs it")
        pytest.skip(f"{what}: scripts/test cannot install it on this machine (not root, or no apt-get)")
    return [str(shutil.which(name)) for name in names]


def free_port() -> int:
    """A loopback port that is free right now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
