"""The files `-f` names, read as kubectl reads them: a file, a directory's manifests, stdin.

`-f FILE` reads that file whatever its name; `-f DIR` reads the `.yaml`, `.yml` and `.json` files
directly in it, and with `-R/--recursive` those of its subdirectories too, in the order kubectl walks
them (names sorted, a subdirectory where its name sorts); `-f -` reads stdin. `-f` repeats, in order.
So `pod-tailor preview -f app/ -R` sees what `kubectl apply -f app/ -R` would send.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from webhook.config.yamltext import ReadError, read_input

__all__ = ["MANIFEST_SUFFIXES", "Input", "manifest_paths", "read_inputs"]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")  # kubectl's FileExtensions


class Input(NamedTuple):
    origin: str  # the file's path as given or found, or "-"
    text: str


def _walk(directory: Path, *, recursive: bool) -> Iterator[Path]:
    """As Go's filepath.Walk, which kubectl uses: entries by name, a directory entered where it sorts."""
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError as exc:
        raise ReadError(f"{directory}: cannot read: {exc.strerror}") from None
    for entry in entries:
        path = directory / entry.name
        if entry.is_dir():
            if recursive:
                yield from _walk(path, recursive=True)
        elif path.suffix in MANIFEST_SUFFIXES:
            yield path


def manifest_paths(given: str, *, recursive: bool = False) -> list[str]:
    """The files `-f given` stands for (`-` for stdin); ReadError when `given` does not exist."""
    if given == "-":
        return ["-"]
    path = Path(given)
    if path.is_dir():
        return [str(found) for found in _walk(path, recursive=recursive)]
    if not path.exists():
        raise ReadError(f"{given}: no such file")
    return [given]


def read_inputs(
    given: Sequence[str], *, recursive: bool = False, problems: list[str] | None = None
) -> list[Input]:
    """The text of every file `given` names, in order.

    A path that does not exist is a ReadError (nothing is read: a typo, as kubectl says). A file that
    cannot be read (not UTF-8, no permission) is one line in `problems` and left out, or, without
    `problems`, a ReadError.
    """
    found: list[Input] = []
    for paths in [manifest_paths(name, recursive=recursive) for name in given]:
        for path in paths:
            try:
                found.append(Input(path, read_input(path)))
            except ReadError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
    return found
