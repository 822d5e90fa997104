"""A cheap last check that a JSON Patch will apply to the Pod it was built for.

A patch that fails to apply fails the Pod's creation even under `failurePolicy: Ignore`, so it must
never leave the webhook. Applying it to a copy with `jsonpatch` costs more than deciding it, so for
the ops the engine emits (`add`/`replace` of object members) this walks the pointers instead,
following values added by earlier ops; anything else (list inserts, remove, move, test) gets the full
`jsonpatch` application on a copy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch
import orjson

__all__ = ["PatchError", "check_patch"]

_MISSING = object()


class PatchError(ValueError):
    pass


def _tokens(pointer: Any) -> tuple[str, ...]:
    if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
        raise PatchError(f"not a JSON pointer: {pointer!r}")
    parts = pointer.split("/")[1:]
    if "~" not in pointer:
        return tuple(parts)
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in parts)


def _step(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        return node.get(token, _MISSING)
    if isinstance(node, list) and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    return _MISSING


_Path = tuple[str, ...]


def _resolve(pod: Any, tokens: _Path, added: Mapping[_Path, Any], walked: dict[_Path, Any]) -> Any:
    """The node at `tokens`, values added by earlier ops taking the place of what the Pod holds.

    `walked` remembers nodes of the Pod itself by path, for the ops that share parents.
    """
    start, node = 0, pod
    for depth in range(len(tokens), 0, -1):  # the deepest value an earlier op added on the way
        if tokens[:depth] in added:
            start, node = depth, added[tokens[:depth]]
            break
    else:
        found = walked.get(tokens, _MISSING)
        if found is not _MISSING:
            return found
    for depth in range(start, len(tokens)):
        node = _step(node, tokens[depth])
        if node is _MISSING:
            return _MISSING
    if start == 0:
        walked[tokens] = node
    return node


def _full_check(pod: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> None:
    try:
        jsonpatch.apply_patch(orjson.loads(orjson.dumps(pod)), list(ops), in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError) as exc:
        raise PatchError(str(exc)) from None


def check_patch(pod: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> None:
    """Raise `PatchError` unless every op applies in order to `pod` (which is not modified).

    `pod` is decoded JSON (objects are dicts). Whether the values are JSON is not checked here:
    encoding the patch (`response.encode_patch`) fails on anything else.
    """
    added: dict[tuple[str, ...], Any] = {}
    walked: dict[tuple[str, ...], Any] = {}
    for op in ops:
        kind = op.get("op")
        if kind not in ("add", "replace") or "value" not in op:
            return _full_check(pod, ops)
        tokens = _tokens(op.get("path"))
        if not tokens:
            raise PatchError("the patch replaces the whole Pod")
        parent = _resolve(pod, tokens[:-1], added, walked)
        if isinstance(parent, list):
            return _full_check(pod, ops)  # list inserts shift indices; let jsonpatch judge
        if not isinstance(parent, dict):
            raise PatchError(f"{op['path']}: the parent does not exist")
        exists = tokens in added or tokens[-1] in parent
        if kind == "replace" and not exists:
            raise PatchError(f"{op['path']}: replace of a member that does not exist")
        if exists:  # what earlier ops added below the value this op replaces is gone with it
            depth = len(tokens)
            for path in [path for path in added if len(path) > depth and path[:depth] == tokens]:
                del added[path]
        added[tokens] = op["value"]
    return None
