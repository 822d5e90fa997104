"""Kubernetes quantities as Decimal, written back in the canonical form the API server itself prints.

Parsing is the client library's `parse_quantity`; its `format_quantity` keeps Decimal exponents
(`1E+3m`), so rendering picks the suffix here and prints integers.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from functools import lru_cache

__all__ = ["QuantityError", "parse", "parse_or_none", "render", "render_bytes", "render_cpu"]

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


_CACHED_LENGTH = 40  # longer texts (no real quantity is) are parsed every time, never kept


def parse(value: object) -> Decimal:
    """Parse a quantity (`"250m"`, `"1Gi"`, `2`) to Decimal; raise QuantityError if it is not one.

    NaN and infinities are not quantities (Kubernetes' own parser refuses them).
    """
    if type(value) is str and len(value) <= _CACHED_LENGTH:  # nearly every call: a short text
        return _parse(value)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"not a quantity: {_shown(value)}")
    if isinstance(value, str) and len(value) > _CACHED_LENGTH:
        return _parse_uncached(value)
    if isinstance(value, int) and value.bit_length() > 64:
        return _parse_uncached(value)
    return _parse(value)


def parse_or_none(value: object) -> Decimal | None:
    """`parse`, with None for a value that is absent (None) or no quantity: a Pod's own value that
    cannot be read counts as unset."""
    try:
        return parse(value) if value is not None else None
    except QuantityError:
        return None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def _parse_uncached(value: str | int | float) -> Decimal:
    # Imported at the first parse, not with this module: `import kubernetes` loads the whole client
    # (its cost: docs/benchmarks.md, "Start-up"), and most verbs (a profiles build) never parse one.
    from kubernetes.utils.quantity import parse_quantity

    try:
        amount = Decimal(parse_quantity(value))  # type: ignore[no-untyped-call]
    except (ValueError, ArithmeticError) as exc:
        raise QuantityError(f"not a quantity: {_shown(value)}") from exc
    if not amount.is_finite():
        raise QuantityError(f"not a quantity: {_shown(value)}")
    return amount


# Pods repeat a handful of quantities ("100m", "128Mi") and a profile store repeats its rounded values;
# Decimal is immutable, so sharing is safe. At most 16,384 short keys: well under 10 MB.
_parse = lru_cache(maxsize=16_384)(_parse_uncached)


def render_cpu(cores: Decimal) -> str:
    """CPU in whole cores when exact, else millicores rounded up (`"2"`, `"250m"`, `"1500m"`)."""
    milli = (cores * 1000).to_integral_value(rounding=ROUND_CEILING)
    if milli % 1000 == 0:
        return str(int(milli) // 1000)
    return f"{int(milli)}m"


def render_bytes(amount: Decimal) -> str:
    """Bytes with the largest binary suffix that divides exactly, else a decimal one, else plain bytes."""
    whole = amount.to_integral_value(rounding=ROUND_CEILING)
    for table in (_BINARY, _DECIMAL):
        for suffix, factor in table:
            if whole >= factor and whole % factor == 0:
                return f"{int(whole) // factor}{suffix}"
    return str(int(whole))


def render(resource: str, amount: Decimal) -> str:
    """Canonical text for `amount` of `resource` (cpu in cores, everything else in bytes)."""
    return render_cpu(amount) if resource == "cpu" else render_bytes(amount)
