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
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:])


def _resolve(pod: Any, tokens: tuple[str, ...], added: Mapping[tuple[str, ...], Any]) -> Any:
    node = pod
    for depth, token in enumerate(tokens):
        prefix = tokens[: depth + 1]
        if prefix in added:
            node = added[prefix]
        elif isinstance(node, Mapping):
            node = node.get(token, _MISSING)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def _full_check(pod: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> None:
    try:
        jsonpatch.apply_patch(orjson.loads(orjson.dumps(pod)), list(ops), in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError) as exc:
        raise PatchError(str(exc)) from None


def check_patch(pod: Mapping[str, Any], ops: Sequence[Mapping[str, Any]]) -> None:
    """Raise `PatchError` unless every op applies in order to `pod` (which is not modified)."""
    added: dict[tuple[str, ...], Any] = {}
    for op in ops:
        kind = op.get("op")
        if kind not in ("add", "replace") or "value" not in op:
            return _full_check(pod, ops)
        tokens = _tokens(op.get("path"))
        if not tokens:
            raise PatchError("the patch replaces the whole Pod")
        parent = _resolve(pod, tokens[:-1], added)
        if isinstance(parent, list):
            return _full_check(pod, ops)  # list inserts shift indices; let jsonpatch judge
        if not isinstance(parent, Mapping):
            raise PatchError(f"{op['path']}: the parent does not exist")
        if kind == "replace" and tokens not in added and tokens[-1] not in parent:
            raise PatchError(f"{op['path']}: replace of a member that does not exist")
        orjson.dumps(op["value"])  # must be JSON
        added[tokens] = op["value"]
    return None
