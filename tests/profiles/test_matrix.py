"""Matrix answers read per series (`profiles/matrix.py`) say what the whole JSON says, or leave it to it."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from webhook.profiles.matrix import matrix

_TRICKY = ['},"values":[[', '"', "\\", "]]}", '{"metric":', "ü", "\n", ",", "]"]
labels = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(st.text(max_size=12), st.sampled_from(_TRICKY)),
    max_size=4,
)
values = st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0])),
                  min_size=1, max_size=30)


def _text(value: float) -> str:
    """A value as Prometheus writes one (Go's strconv: NaN, +Inf, -Inf, shortest repr)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _answer(series: list[tuple[dict[str, str], list[float]]], **extra: Any) -> dict[str, Any]:
    result = [{"metric": m, "values": [[1_700_000_000 + 60 * k, _text(v)] for k, v in enumerate(vs)]}
              for m, vs in series]
    return {"status": "success", "data": {"resultType": "matrix", "result": result,
                                          "stats": {"samples": {"peakSamples": 3}}}, **extra}


def _same(got: list[float], want: list[float]) -> bool:
    return len(got) == len(want) and all(
        (math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(got, want, strict=True))


class TestAMatrixAnswer:
    @given(st.lists(st.tuples(labels, values), max_size=5), st.booleans())
    def test_read_lean_it_holds_the_same_labels_values_warnings_and_stats_as_parsed_whole(
        self, series: list[tuple[dict[str, str], list[float]]], warned: bool
    ) -> None:
        answer = _answer(series, **({"warnings": ["partial"]} if warned else {}))
        read = matrix(orjson.dumps(answer))
        assert read is not None
        envelope, found = read
        assert envelope["status"] == "success"
        assert envelope.get("warnings") == answer.get("warnings")
        assert envelope["data"]["stats"] == answer["data"]["stats"]
        assert envelope["data"]["result"] == []
        assert [labels for labels, _ in found] == [m for m, _ in series]
        assert all(_same(list(got), want) for (_, got), (_, want) in zip(found, series, strict=True))

    @given(st.lists(st.tuples(labels, values), min_size=1, max_size=3))
    def test_laid_out_otherwise_it_is_left_to_the_whole_parse_or_read_the_same(
        self, series: list[tuple[dict[str, str], list[float]]]
    ) -> None:
        spaced = json.dumps(_answer(series), indent=1).encode()  # another writer's spacing
        read = matrix(spaced)
        assert read is None or [labels for labels, _ in read[1]] == [m for m, _ in series]


class TestOtherAnswersAreNotReadLean:
    def test_an_error_a_vector_and_a_cut_answer(self) -> None:
        error = {"status": "error", "errorType": "execution", "error": 'query "result":[ too many samples'}
        vector = {"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": {"a": "b"}, "value": [1, "2"]}]}}
        whole = orjson.dumps(_answer([({"pod": "a"}, [1.0, 2.0])]))
        for content in (orjson.dumps(error), orjson.dumps(vector), whole[: len(whole) - 40]):
            assert matrix(content) is None
