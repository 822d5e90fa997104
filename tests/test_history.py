"""The commit rules of docs/contributing.md, held for every commit since they were written down.

Older history is left as it is: rewriting published commits would break every clone.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The last commit before the rules were written down: they hold for every commit after it.
RULES_SINCE = "a5e1edb"
SUBJECT_LIMIT = 72


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout


def _commits() -> list[tuple[str, int, str]]:
    """(hash, number of parents, subject) of every commit after RULES_SINCE on HEAD."""
    if _git("cat-file", "-e", f"{RULES_SINCE}^{{commit}}") is None:
        pytest.skip(f"no git history holding {RULES_SINCE} here (an export or a shallow clone)")
    listed = _git("log", "--format=%h %p%x00%s", f"{RULES_SINCE}..HEAD") or ""
    found = []
    for line in listed.splitlines():
        head, subject = line.split("\x00", 1)
        commit, *parents = head.split()
        found.append((commit, len(parents), subject))
    return found


def test_every_commit_subject_fits_in_72_characters() -> None:
    long = [f"{commit} ({len(subject)}): {subject[:80]}" for commit, _, subject in _commits()
            if len(subject) > SUBJECT_LIMIT]  # fmt: skip
    assert long == []


def test_history_is_linear_with_no_merge_commits() -> None:
    merges = [f"{commit}: {subject}" for commit, parents, subject in _commits() if parents > 1]
    assert merges == []
