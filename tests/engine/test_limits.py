"""Annotations over their length limit are ignored with a warning; quantities are parsed within bounds."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from tests.engine.podkit import pod as make_pod
from webhook.config.policies import bundled_policies
from webhook.core.engine import tailor
from webhook.core.facts import ClusterFacts
from webhook.core.model.annotations import MAX_LENGTH, limit_of
from webhook.core.model.pod import (
    EXCLUDE_ANNOTATION,
    EXCLUDE_CONTAINERS_ANNOTATION,
    INJECTED_ANNOTATION,
    LIMIT_RANGER_ANNOTATION,
    PROBE_PATH_ANNOTATION,
)
from webhook.core.model.quantity import QuantityError, parse

POLICY = bundled_policies().policies["default"]


def decided(pod: dict[str, Any]) -> Any:
    return tailor(pod, policy=POLICY, profiles={}, facts=ClusterFacts(server_version=(1, 31)))


def annotated(key: str, value: str) -> dict[str, Any]:
    return make_pod(annotations={key: value})


class TestAnnotationLimits:
    def test_a_probe_path_at_the_limit_is_used(self) -> None:
        path = "/" + "a" * (MAX_LENGTH[PROBE_PATH_ANNOTATION] - 1)
        decision = decided(annotated(PROBE_PATH_ANNOTATION, path))
        assert any(op["value"].get("httpGet", {}).get("path") == path for op in decision.ops
                   if isinstance(op["value"], dict))
        assert decision.warnings == ()

    def test_a_probe_path_over_the_limit_is_ignored_with_a_warning_and_never_copied(self) -> None:
        path = "/" + "a" * 2_000_000
        decision = decided(annotated(PROBE_PATH_ANNOTATION, path))
        assert decision.warnings == (
            f"ignored {PROBE_PATH_ANNOTATION}: 2000001 characters, over the limit of 512",
        )
        assert path not in str(decision.ops)
        assert sum(len(str(op)) for op in decision.ops) < 10_000

    @pytest.mark.parametrize(
        "key",
        [EXCLUDE_ANNOTATION, EXCLUDE_CONTAINERS_ANNOTATION, LIMIT_RANGER_ANNOTATION, INJECTED_ANNOTATION,
         "pod-tailor.io/some-future-annotation"],
    )
    def test_every_annotation_pod_tailor_reads_has_a_limit(self, key: str) -> None:
        limit = limit_of(key)
        assert limit is not None
        decision = decided(annotated(key, "x" * (limit + 1)))
        assert decision.warnings[0].startswith(f"ignored {key}: {limit + 1} characters")

    def test_an_annotation_pod_tailor_does_not_read_has_no_limit(self) -> None:
        assert limit_of("example.com/blob") is None
        assert decided(annotated("example.com/blob", "x" * 1_000_000)).warnings == ()

    def test_an_oversized_previous_explanation_is_replaced_not_extended(self) -> None:
        pod = annotated(INJECTED_ANNOTATION, "x" * 100_000)
        original = copy.deepcopy(pod)
        decision = decided(pod)
        text = next(op["value"] for op in decision.ops if op["path"].endswith("pod-tailor.io~1injected"))
        assert len(text) < 2000
        assert pod == original  # the Pod given is never changed


class TestQuantityBounds:
    @pytest.mark.parametrize("text", ["NaN", "nan", "sNaN", "Infinity", "-inf"])
    def test_not_a_number_and_infinities_are_not_quantities(self, text: str) -> None:
        with pytest.raises(QuantityError):
            parse(text)

    @pytest.mark.parametrize("value", [float("nan"), float("inf")])
    def test_float_nan_and_infinity_are_not_quantities(self, value: float) -> None:
        with pytest.raises(QuantityError):
            parse(value)

    def test_a_long_text_is_parsed_but_never_kept(self) -> None:
        from webhook.core.model import quantity

        before = quantity._parse.cache_info().currsize
        assert parse("1" * 10_000 + "m") == Decimal("1" * 10_000) / 1000
        with pytest.raises(QuantityError) as raised:
            parse("x" * 1_000_000)
        assert quantity._parse.cache_info().currsize == before
        assert len(str(raised.value)) < 120
