"""Quantities as a person reads them in a table or on a chart axis (`3.2` cores, `1.5Gi`).

The json, yaml and csv outputs keep the exact Kubernetes strings (`webhook.core.model.quantity.render`);
these shorter forms are for text and pictures, where `125000m` or `3758096384` help nobody.
"""

from __future__ import annotations

from decimal import Decimal

__all__ = ["amount", "cpu_text", "memory_text"]

_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _short(value: float) -> str:
    text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
    return text.removesuffix(".0")


def cpu_text(cores: Decimal | float | None) -> str:
    """`250m` below one core, else cores with one decimal (`1.5`, `12`); `-` for none."""
    if cores is None:
        return "-"
    value = float(cores)
    if value == 0:
        return "0"
    if abs(value) < 1:
        return f"{round(value * 1000):d}m"
    return _short(value)


def memory_text(amount_bytes: Decimal | float | None) -> str:
    """Binary units with one decimal (`512Mi`, `1.5Gi`); `-` for none."""
    if amount_bytes is None:
        return "-"
    value = float(amount_bytes)
    for suffix, factor in _BINARY:
        if abs(value) >= factor:
            return _short(value / factor) + suffix
    return f"{value:.0f}"


def amount(resource: str, value: Decimal | float | None) -> str:
    return cpu_text(value) if resource == "cpu" else memory_text(value)
