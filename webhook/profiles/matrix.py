"""Range (matrix) answers read without a Python object per point: each series' labels and values.

A `query_range` answer of millions of points (the exact CPU top fetch's) parsed whole as JSON makes a
list, a number and a string per point: most of a build's own CPU. Read here, it takes about a third
of that (docs/profiles.md). Prometheus and VictoriaMetrics write each series as
`{"metric":{...},"values":[[t,"v"],...]}`. Inside a JSON string every quote is escaped, so the bytes
`},"values":[` only ever close a series' labels, and a value (a number's text) never holds `]`: the
series are found by those bytes, their labels parsed as JSON, their values converted straight from
the text, and each series' values are counted against its points (`],[` between them). The rest of
the answer (status, warnings, stats) is parsed as JSON with an empty result. An answer laid out any
other way is not read here (`None`): the caller parses it whole.
"""

from __future__ import annotations

import re
from array import array
from typing import Any

import orjson

__all__ = ["matrix"]

_RESULT = b'"result":['
_SERIES = re.compile(rb'\{"metric":(\{.*?\}),"values":\[')
_VALUE = re.compile(rb',"([^"]*)"\]')


def matrix(content: bytes) -> tuple[Any, list[tuple[dict[str, str], array[float]]]] | None:
    """(the answer without its result, its series as (labels, values)); None: not a matrix laid out
    as Prometheus writes one (an error, another result type, another layout)."""
    head, opening, rest = content.partition(_RESULT)
    if not opening or b'"resultType":"matrix"' not in head:
        return None
    series: list[tuple[dict[str, str], array[float]]] = []
    at = 0
    while not rest.startswith(b"]", at):
        opened = _SERIES.match(rest, at)
        if opened is None:
            return None
        first = opened.end()
        if rest.startswith(b"]}", first):  # no values (never written by Prometheus)
            last = first
            at = first + 2
        else:
            close = rest.find(b"]]}", first)
            if close < 0:
                return None
            last = close + 1
            at = close + 3
        texts = _VALUE.findall(rest, first, last)
        if len(texts) != (rest.count(b"],[", first, last) + 1 if last > first else 0):
            return None
        try:
            values = array("d", map(float, texts))
            labels = orjson.loads(opened.group(1))
        except (ValueError, orjson.JSONDecodeError):
            return None
        if not isinstance(labels, dict):
            return None
        series.append((labels, values))
        if rest.startswith(b",", at):
            at += 1
    try:
        envelope = orjson.loads(head + _RESULT + b"]" + rest[at + 1:])
    except orjson.JSONDecodeError:
        return None
    return envelope, series
