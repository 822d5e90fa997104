"""Fitting warnings and audit annotations into what the API server and kubectl will carry.

The API server truncates a warning past 256 characters and drops warnings past 4096 in total, so
each warning is kept under 120 characters (a longer one is split between words into several, each
piece after the first starting with "..."), the list is taken in priority order, and when some do not
fit the last slot says how many were left out instead of losing them silently.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["MAX_TOTAL", "MAX_WARNING", "audit_key", "clip", "fit_audit", "fit_warnings", "split"]

MAX_WARNING = 119  # strictly under 120 characters
MAX_TOTAL = 4096
MAX_AUDIT_VALUE = 4096
_ELLIPSIS = "..."
_NOT_NAME_CHAR = re.compile(r"[^A-Za-z0-9._-]+")


def _one_line(text: str) -> bool:
    """Already one line with single spaces (every other whitespace character is not printable)."""
    return text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " "


def clip(text: str, limit: int = MAX_WARNING) -> str:
    """One line of at most `limit` characters; an ellipsis marks a cut."""
    line = text if _one_line(text) else " ".join(text.split())
    if len(line) <= limit:
        return line
    return line[: limit - len(_ELLIPSIS)].rstrip() + _ELLIPSIS


def split(text: str, limit: int = MAX_WARNING) -> list[str]:
    """One line of at most `limit` characters, or several cut between words, each after the first
    starting with "... " (a word longer than a whole line is clipped)."""
    line = text if _one_line(text) else " ".join(text.split())
    if len(line) <= limit:
        return [line] if line else []
    pieces: list[str] = []
    current = ""
    for word in line.split(" "):
        room = limit - (len(_ELLIPSIS) + 1 if pieces else 0)
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= room:
            current = candidate
            continue
        if current:
            pieces.append(current)
        current = word if len(word) <= limit - len(_ELLIPSIS) - 1 else clip(word, limit - len(_ELLIPSIS) - 1)
    pieces.append(current)
    return [pieces[0], *(f"{_ELLIPSIS} {piece}" for piece in pieces[1:])]


def fit_warnings(by_priority: Iterable[str], *, total: int = MAX_TOTAL) -> tuple[str, ...]:
    """Split each long warning (`split`) and keep the highest-priority ones (first = most important)
    within `total`.

    If any are left out, the last kept slot becomes "... and N more" so the reader knows.
    """
    clipped = [piece for text in by_priority for piece in split(text)]
    clipped = [text for text in clipped if text]
    if sum(len(text) for text in clipped) <= total:
        return tuple(clipped)
    kept: list[str] = []
    used = 0
    note_room = len(f"pod-tailor: ... and {len(clipped)} more not shown")
    for text in clipped:
        if used + len(text) + note_room > total:
            break
        kept.append(text)
        used += len(text)
    left = len(clipped) - len(kept)
    return (*kept, f"pod-tailor: ... and {left} more not shown")


@functools.lru_cache(maxsize=256)  # a handful of fixed keys and note targets
def audit_key(text: str) -> str:
    """A valid name part of a qualified name (the API server prefixes the webhook's name and '/')."""
    key = _NOT_NAME_CHAR.sub("-", text).strip("-_.")[:63].strip("-_.")
    return key or "note"


def fit_audit(values: Mapping[str, str | Sequence[str]]) -> dict[str, str]:
    """Audit annotations with valid keys; list values are joined with '; ' and clipped."""
    result: dict[str, str] = {}
    for key, value in values.items():
        text = value if isinstance(value, str) else "; ".join(value)
        if text:
            result[audit_key(key)] = clip(text, MAX_AUDIT_VALUE)
    return result
