"""JSON Patch built while deciding, never by diffing: every op is known to apply to the Pod it was built on.

Diffing with `jsonpatch.make_patch` costs most of a request; instead the builder walks the real Pod for
each value it sets, adds a missing parent once as a whole object, and folds later values under that
parent into the same op.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from webhook.core.model.decision import PatchOp

__all__ = ["PatchBuilder", "pointer"]

Path = tuple[str | int, ...]


def _escape(part: str | int) -> str:
    text = str(part)
    if "~" in text or "/" in text:
        return text.replace("~", "~0").replace("/", "~1")
    return text


@functools.lru_cache(maxsize=4096)  # paths hold indexes, not names: a few hundred distinct ones
def pointer(path: Path) -> str:
    """RFC 6901 pointer for `path`, escaping `~` and `/` in keys (`pod-tailor.io~1injected`)."""
    return "/" + "/".join(map(_escape, path)) if path else ""


class PatchBuilder:
    """Collects ops against one Pod; `set` is safe to call for any path whose lists already exist."""

    def __init__(self, pod: Mapping[str, Any]) -> None:
        self._pod = pod
        self._ops: list[PatchOp] = []
        self._created: dict[Path, dict[str, Any]] = {}  # objects this patch adds, by path

    @property
    def ops(self) -> tuple[PatchOp, ...]:
        return tuple(self._ops)

    def set(self, path: Path, value: Any) -> None:
        """Set `path` to `value`: `add` for a new member, `replace` for an existing one."""
        node: Any = self._pod
        for depth in range(len(path) - 1):
            key = path[depth]
            child = node[key] if key.__class__ is int else node.get(key)
            if child is None:
                # Missing in the Pod: either this patch already adds it, or it is added now, whole.
                prefix = path[: depth + 1]
                target = self._created.get(prefix)
                if target is not None:
                    self._fill(target, path[depth + 1 :], value, prefix)
                else:
                    new = self._build(path[depth + 1 :], value, prefix)
                    self._ops.append({"op": "add", "path": pointer(prefix), "value": new})
                return
            node = child
        last = path[-1]
        # Decoded JSON: objects are dicts (a dict check costs less than an ABC's).
        exists = isinstance(node, dict) and last in node and node[last] is not None
        self._ops.append({"op": "replace" if exists else "add", "path": pointer(path), "value": value})

    def drop(self, path: Path) -> None:
        """Take back what this patch set at `path` (a value the Pod did not have): the op that sets it,
        or its member in an object this patch adds."""
        target = pointer(path)
        self._ops = [op for op in self._ops if op["path"] != target]
        for depth in range(len(path) - 1, 0, -1):
            created = self._created.get(path[:depth])
            if created is not None:
                inner: Any = created
                for key in path[depth:-1]:
                    inner = inner.get(str(key)) if isinstance(inner, dict) else None
                if isinstance(inner, dict):
                    inner.pop(str(path[-1]), None)
                return

    def _build(self, keys: Path, value: Any, at: Path) -> dict[str, Any]:
        """A new object at `at` holding `value` under `keys`; every level is remembered for later fills."""
        root: dict[str, Any] = {}
        self._created[at] = root
        self._fill(root, keys, value, at)
        return root

    def _fill(self, target: dict[str, Any], keys: Path, value: Any, at: Path) -> None:
        for depth, key in enumerate(keys[:-1]):
            child = target.get(str(key))
            if child is None:
                child = {}
                target[str(key)] = child
                self._created[at + keys[: depth + 1]] = child
            target = child
        target[str(keys[-1])] = value
