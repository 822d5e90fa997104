"""The one set of rules for option values every command and every `POD_TAILOR_*` variable goes through:
ports, seconds, durations, counts and bounded numbers.

Each rule turns the text a person typed into its value or raises ValueError with a message that says
what was wrong and what to type instead; the command line (`webhook.commands.parser`) and the settings
(`webhook.config.settings`) only add where the text came from. `serve --port 80800` and
`dashboard --port 80800` are refused by the same words.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from webhook.profiles.queries import duration as _prometheus_duration

__all__ = [
    "Rule",
    "at_least",
    "auto_or_duration",
    "boolean",
    "choice",
    "count",
    "duration",
    "number_between",
    "port",
    "port_or_off",
    "positive_count",
    "seconds",
    "seconds_or_zero",
    "typed",
    "whole_between",
]

Rule = Callable[[str], object]


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None


def port(text: str) -> int:
    value = _integer(text)
    if not 0 < value < 65536:
        raise ValueError(f"{value} is not a port: use 1 to 65535")
    return value


def port_or_off(text: str) -> int:
    """A port, or 0 for "do not listen at all"."""
    value = _integer(text)
    if not 0 <= value < 65536:
        raise ValueError(f"{value} is not a port: use 1 to 65535, or 0 for none")
    return value


def seconds(text: str) -> float:
    value = _number(text)
    if value <= 0:
        raise ValueError(f"{text} seconds: use a number of seconds above 0")
    return value


def seconds_or_zero(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise ValueError(f"{text} seconds: use a number of seconds, 0 or more")
    return value


def duration(text: str) -> str:
    """A Prometheus duration as people type it (`90s`, `5m`, `6h`, `14d`, `2w`), kept as text."""
    _prometheus_duration(text)  # ValueError: not a duration: 'fortnight' (use e.g. 90s, 5m, ...)
    return text.strip()


def auto_or_duration(text: str) -> str:
    """`auto` (the data's own interval decides) or a duration."""
    return "auto" if text.strip() == "auto" else duration(text)


def boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{text!r}: use true or false")


def choice(*names: str) -> Callable[[str], str]:
    """One of `names`, as written."""

    def rule(text: str) -> str:
        if text not in names:
            raise ValueError(f"{text!r}: use {', '.join(names[:-1])} or {names[-1]}")
        return text

    return rule


def count(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise ValueError(f"{value}: use a whole number, 0 or more")
    return value


def positive_count(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise ValueError(f"{value}: use a whole number, 1 or more")
    return value


def whole_between(low: int, high: int) -> Callable[[str], int]:
    """A whole number from `low` to `high`."""

    def rule(text: str) -> int:
        value = _integer(text)
        if not low <= value <= high:
            raise ValueError(f"{value}: use a whole number from {low} to {high}")
        return value

    return rule


def at_least(low: float) -> Callable[[str], float]:
    def rule(text: str) -> float:
        value = _number(text)
        if value < low:
            raise ValueError(f"{text}: use a number of at least {low:g}")
        return value

    return rule


def number_between(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    """A number in [low, high], or (low, high] with `low_open`."""
    shown = f"{'above' if low_open else 'from'} {low:g} to {high:g}"

    def rule(text: str) -> float:
        value = _number(text)
        if not (low < value if low_open else low <= value) or value > high:
            raise ValueError(f"{text}: use a number {shown}")
        return value

    return rule


def typed(rule: Rule) -> Any:
    """`rule` as an argparse `type=`: its message becomes the option's error."""

    def convert(text: str) -> object:
        try:
            return rule(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(rule, "__name__", "value")
    return convert
