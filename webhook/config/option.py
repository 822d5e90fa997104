"""One option of the command line: its flags, the `POD_TAILOR_*` variable it is also read from, the rule
its text goes through, its default and its help.

The declarations are in `webhook.config.catalog`; this module reads them. The command line gives a
value (converted by argparse with the option's rule); an option not given is then read from its
variable with the same rule, else takes its default (`resolve`). A value that cannot be used is a
`SettingsError` naming the option or the variable, which `pod-tailor` says in one line (exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from webhook.config.values import Rule, boolean, typed

__all__ = ["ENV_PREFIX", "Kind", "Option", "SettingsError", "argument", "setting"]

ENV_PREFIX = "POD_TAILOR_"
Kind = Literal["value", "list", "switch", "flag"]


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the option or the variable."""


@dataclass(frozen=True, slots=True)
class Option:
    """`kind`: value (one value), list (repeatable; its variable holds one value per line), switch
    (`--x/--no-x`) or flag (`--x` alone, on). `flags` empty: a variable only (a password, which the
    process list would show as an option)."""

    name: str  # the attribute the value lands in
    group: str  # its group in `--help` (webhook.commands.parser.GROUPS)
    help: str
    default: Any = None
    rule: Rule | None = None  # text -> value (webhook.config.values); None: the text as it is
    kind: Kind = "value"
    flags: tuple[str, ...] = ()
    variable: str | None = None
    metavar: str | None = None
    shown: str | None = None  # how the default reads in --help, where its value would not say it

    @property
    def flag(self) -> str:
        """The long form: how messages and docs name it."""
        return next((flag for flag in self.flags if flag.startswith("--")), self.variable or self.name)

    def read(self, text: str, *, source: str) -> Any:
        """The value of `text` given as `source` (an option or a variable); SettingsError naming it."""
        try:
            if self.kind == "list":
                return [line.strip() for line in text.splitlines() if line.strip()]
            if self.kind in ("switch", "flag"):
                return boolean(text)
            if text == "" and self.default is None:  # an empty variable leaves an optional value unset
                return None
            return self.rule(text) if self.rule is not None else text
        except ValueError as exc:
            raise SettingsError(f"{source}: {exc}") from None

    def value(self, given: Any, env: Mapping[str, str], default: Any) -> Any:
        """What the option holds: `given` on the command line (None: not given), else its variable,
        else `default`."""
        if given is not None:
            return self.read(given, source=self.flag) if isinstance(given, str) and self.rule else given
        if self.variable is not None and self.variable in env:
            return self.read(env[self.variable], source=self.variable)
        return list(default) if self.kind == "list" else default

    def described(self, default: Any) -> str:
        """The help with where else it is read from and its default: `... [POD_TAILOR_PORT; 8443]`."""
        shown = self.shown if self.shown is not None else _shown(default, self.kind)
        where = [part for part in (self.variable, shown) if part]
        return f"{self.help} [{'; '.join(where)}]" if where else self.help

    def add_to(self, parser: Any, *, default: Any, required: bool = False) -> None:
        """The argparse option: not given leaves the attribute unset (`resolve` fills it in)."""
        shown = self.described(default).replace("%", "%%")  # argparse formats help with %
        common: dict[str, Any] = {"dest": self.name, "default": argparse.SUPPRESS, "help": shown}
        if self.kind == "flag":
            parser.add_argument(*self.flags, action="store_true", **common)
            return
        if self.kind == "switch":
            parser.add_argument(*self.flags, action=argparse.BooleanOptionalAction, **common)
            return
        if required:
            common["required"] = True
        converted = {"type": typed(self.rule)} if self.rule is not None else {}
        action = "append" if self.kind == "list" else "store"
        parser.add_argument(*self.flags, action=action, metavar=self.metavar, **converted, **common)


def _shown(default: Any, kind: Kind) -> str:
    if kind == "switch":
        return "on" if default else "off"
    if default is None or kind == "flag" or default in ((), []):
        return ""
    if isinstance(default, Enum):
        return str(default.value)
    return f"{default:g}" if isinstance(default, float) else str(default)


def _names(name: str) -> tuple[str, ...]:
    return ("--" + name.replace("_", "-"),)


def setting(
    name: str, group: str, help: str, default: Any = None, *, variable: str | None = None,
    flags: tuple[str, ...] | None = None, **more: Any,
) -> Option:
    """An option that is also read from a variable, `POD_TAILOR_<NAME>` unless named."""
    return Option(name, group, help, default, flags=_names(name) if flags is None else flags,
                  variable=variable or ENV_PREFIX + name.upper(), **more)


def argument(name: str, group: str, help: str, default: Any = None, *, flags: tuple[str, ...] | None = None,
             **more: Any) -> Option:
    """An option of the command line only: what one run reads or writes."""
    return Option(name, group, help, default, flags=_names(name) if flags is None else flags, **more)
