"""A copy of a dataclass instance with some fields changed, for the admission path's hot copies (pure).

`dataclasses.replace` checks every field and passes it through `__init__`; the decision path copies a
quota namespace's facts, its checkpointed context and its decision once each per decision, and this
takes a third to a half of that time (every field set as it is, frozen or not, then the changes).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

__all__ = ["copied"]

_T = TypeVar("_T")
_NAMES: dict[type, tuple[str, ...]] = {}


def copied(source: _T, **changes: Any) -> _T:
    """`source` (a dataclass instance) with `changes`, without running its `__init__`."""
    kind = type(source)
    names = _NAMES.get(kind)
    if names is None:
        names = _NAMES[kind] = tuple(item.name for item in fields(kind))  # type: ignore[arg-type]
    new = object.__new__(kind)
    for name in names:
        object.__setattr__(new, name, getattr(source, name))
    for name, value in changes.items():
        object.__setattr__(new, name, value)
    return new
