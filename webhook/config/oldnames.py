"""Options that were renamed: the old name is still read for one release, hidden from --help, and says
the new name each time it is used (`--store is now --profiles-path`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["old_name"]


class _OldName(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, *, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        value: Any,
        option: str | None = None,
    ) -> None:
        print(f"{parser.prog}: {option} is now {self.new} (the old name goes in the next release)",
              file=sys.stderr)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else value)


def old_name(parser: Any, name: str, *, new: str, dest: str, const: object = None, type: Any = None) -> None:
    """Accept `name`, hidden, for the option now called `new` (a flag when `const` is given)."""
    extra: dict[str, Any] = {"nargs": 0, "const": const} if const is not None else {"type": type}
    parser.add_argument(
        name, dest=dest, action=_OldName, new=new, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **extra
    )
