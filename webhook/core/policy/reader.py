"""Reading a policy document: a typed reader whose errors name the exact field, and that error.

Every section of a policy (`webhook.core.policy.sections`, `.statistic`, `.inplace`) is read with a
`Reader` at its place in the document, so a wrong value is refused as `policies.batch.resources.cpu.
limit: must be one of ...`. The reader imports no section, so each section can use it while
`webhook.core.policy.policies` composes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Any, TypeVar

from webhook.core.model.quantity import QuantityError, parse

__all__ = ["PolicyError", "Reader"]

_E = TypeVar("_E", bound=StrEnum)


class PolicyError(ValueError):
    """A policy document that cannot be used; the message starts with the offending field's path."""


class Reader:
    """Reads typed fields from a mapping and raises PolicyError naming the full path."""

    def __init__(self, data: object, path: str) -> None:
        if not isinstance(data, Mapping):
            raise PolicyError(f"{path}: must be a mapping, got {type(data).__name__}")
        self.data, self.path = data, path

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise PolicyError(f"{self.path}.{key}: required")
        return self.data[key]

    def only(self, *known: str) -> Reader:
        """Refuse keys this level does not know, so a typo is an error rather than a silent default."""
        for key in self.data:
            if key not in known:
                raise PolicyError(f"{self.path}.{key}: unknown field (known: {', '.join(known)})")
        return self

    def child(self, key: str) -> Reader:
        return Reader(self._get(key), f"{self.path}.{key}")

    def boolean(self, key: str, *, default: bool | None = None) -> bool:
        """A required flag, or with `default` an optional one (for a resource the bundled policy lacks)."""
        if default is not None and key not in self.data:
            return default
        value = self._get(key)
        if not isinstance(value, bool):
            raise PolicyError(f"{self.path}.{key}: must be true or false, got {value!r}")
        return value

    def integer(self, key: str, *, low: int = 0, high: int = 86_400) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise PolicyError(f"{self.path}.{key}: must be an integer from {low} to {high}, got {value!r}")
        return value

    def number(self, key: str, *, low: float, high: float) -> Decimal:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise PolicyError(f"{self.path}.{key}: must be a number from {low} to {high}, got {value!r}")
        return Decimal(str(value))

    def quantity(self, key: str) -> Decimal:
        value = self._get(key)
        try:
            amount = parse(value)
        except QuantityError:
            raise PolicyError(f"{self.path}.{key}: not a Kubernetes quantity: {value!r}") from None
        if amount <= 0:
            raise PolicyError(f"{self.path}.{key}: must be positive, got {value!r}")
        return amount

    def choice(self, key: str, enum: type[_E]) -> _E:
        value = self._get(key)
        try:
            return enum(value)
        except ValueError:
            allowed = ", ".join(member.value for member in enum)
            raise PolicyError(f"{self.path}.{key}: must be one of {allowed}, got {value!r}") from None

    def optional_path(self, key: str) -> str | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.startswith("/"):
            raise PolicyError(f"{self.path}.{key}: must be null or an absolute HTTP path, got {value!r}")
        return value
