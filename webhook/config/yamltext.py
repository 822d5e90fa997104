"""YAML as people write it (manifests, policy files): a file or stdin as text, documents with positions.

Every problem is one line a person can act on: the file, the line and column, what is wrong, and the
fix (`deploy.yaml:14:3: mapping values are not allowed here: quote a value that holds ': '`). A
multi-document file is parsed one document at a time, so one bad document is reported (and left out)
while the others are still used. Bytes that are not UTF-8 text (an image, a UTF-16 file) are refused by
offset, never with a traceback.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "DocumentError", "ReadError", "decode", "parse_yaml", "position", "read_input", "yaml_documents"
]


class ReadError(ValueError):
    """Input that cannot be read at all: the message is one line naming the file and the fix."""


class DocumentError(ValueError):
    """One document that cannot be parsed; the others of its file still can."""


_SEPARATOR = re.compile(r"^(---|\.\.\.)(\s|$)")
# What a YAML parser's message means for a person writing a manifest: (problem starts with, the fix).
_FIXES = (
    ("found character '\\t'", "indent with spaces, not tabs"),
    ("mapping values are not allowed", "quote a value that holds ': ', or check the indentation"),
    ("expected <block end>", "check this line's indentation against the lines above it"),
    ("could not find expected ':'", "a key needs ': ' after it; quote a value that spans lines"),
    ("found undefined alias", "define the &anchor before the *alias that uses it"),
    ("found unexpected end of stream", "close the quote or bracket opened above"),
    ("expected the node content, but found '<stream end>'", "the text ends inside a value: close it"),
    ("found unknown escape character", "use single quotes, or escape the backslash as \\\\"),
    ("expected ',' or '}'", "separate the items of {...} with commas, or close it"),
    ("expected ',' or ']'", "separate the items of [...] with commas, or close it"),
)


def decode(data: bytes, *, origin: str) -> str:
    """UTF-8 text (a BOM is dropped); anything else is a ReadError naming the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start]
        raise ReadError(
            f"{origin}: not UTF-8 text (byte 0x{bad:02x} at offset {exc.start}; a binary file?): "
            "give a YAML or JSON manifest"
        ) from None


def read_input(given: str) -> str:
    """The text of the file `given`, or of stdin for `-`; ReadError for a missing, unreadable or
    binary file, or a directory."""
    if given == "-":
        stdin = getattr(sys.stdin, "buffer", None)  # a test's StringIO holds text already
        return decode(stdin.read(), origin="-") if stdin is not None else sys.stdin.read()
    path = Path(given)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ReadError(f"{given}: no such file") from None
    except IsADirectoryError:
        raise ReadError(f"{given}: is a directory: name a file") from None
    except OSError as exc:
        raise ReadError(f"{given}: cannot read: {exc.strerror}") from None
    return decode(data, origin=given)


def _fix(problem: str) -> str:
    for start, fix in _FIXES:
        if problem.startswith(start):
            return fix
    return "fix the YAML there"


def _problem(exc: yaml.YAMLError, *, origin: str, first_line: int) -> str:
    """`origin:line:column: what (while what) : fix`, lines counted in the whole file."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        problem = (exc.problem or "not valid YAML").strip()
        context = f" ({exc.context.strip()})" if exc.context else ""
        return f"{origin}:{first_line + mark.line}:{mark.column + 1}: {problem}{context}: {_fix(problem)}"
    if isinstance(exc, yaml.reader.ReaderError):
        return (
            f"{origin}: character {exc.character!r} at offset {exc.position} is not allowed in YAML (a "
            "binary file?): give a YAML or JSON manifest"
        )
    return f"{origin}:{first_line}: not valid YAML: {' '.join(str(exc).split())[:200]}"


def parse_yaml(text: str, *, origin: str, first_line: int = 1) -> Any:
    """One YAML (or JSON) document; DocumentError with the position for a bad one."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DocumentError(_problem(exc, origin=origin, first_line=first_line)) from None
    except RecursionError:
        raise DocumentError(f"{origin}:{first_line}: nested too deeply to read") from None
    except ValueError as exc:  # a timestamp that is not a date: 2024-02-30
        shown = " ".join(str(exc).split())[:200]
        raise DocumentError(f"{origin}:{first_line}: unreadable value: {shown}") from None


def position(text: str, path: Sequence[str]) -> tuple[int, int] | None:
    """(line, column), from 1, of the value at `path` (mapping keys, list indexes as digits) in a YAML
    document, or of the deepest part of it that is there; None when the text is not YAML or `path`
    starts nowhere."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    mark = None
    for key in path:
        found = None
        if isinstance(node, yaml.MappingNode):
            found = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            found = node.value[int(key)]
        if found is None:
            break
        node, mark = found, found.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else None


def _chunks(text: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of each document between `---` / `...` lines."""
    lines = text.splitlines(keepends=True)
    start = 0
    for number, line in enumerate(lines):
        if _SEPARATOR.match(line) and number > start:
            yield start + 1, "".join(lines[start:number])
            start = number
    yield start + 1, "".join(lines[start:])


def yaml_documents(text: str, *, origin: str, problems: list[str]) -> list[tuple[int, Any]]:
    """(first line, parsed document) of each document of a multi-document YAML text, empty ones left
    out; each document that cannot be parsed adds its one-line problem to `problems` and is left out."""
    found = []
    for first_line, chunk in _chunks(text):
        try:
            document = parse_yaml(chunk, origin=origin, first_line=first_line)
        except DocumentError as exc:
            problems.append(str(exc))
            continue
        if document is not None:
            found.append((first_line, document))
    return found
