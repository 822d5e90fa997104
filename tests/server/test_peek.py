"""The cached path's decoder: what it accepts, the full path accepts as the same Pod CREATE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from tests.server.conftest import corpus_files
from tests.server.test_fuzz import bodies, mutated_reviews, reviews_with_an_odd_pod_field, warm
from tests.shared import SAMPLE_REVIEW, corpus_params
from webhook.admission import VerdictCache, admit, default_engine
from webhook.admission.peek import peek_review
from webhook.admission.review import Review, is_v1_pod, parse_review
from webhook.core.model.inputs import decision_inputs, template_free
from webhook.refreshers.state import State

__all__ = ["warm"]  # a fixture, imported to be used here

# The review the hand-made cases edit: the bundled sample, which every clone has.
BASE = SAMPLE_REVIEW.read_bytes()


def agrees_with_the_full_path(body: bytes) -> None:
    """The invariant: a peek is the full parse's uid, namespace, dryRun and decision inputs."""
    peeked = peek_review(body)
    if peeked is None:
        return
    review = parse_review(body)
    assert isinstance(review, Review)
    assert review.is_pod_create
    assert is_v1_pod(review.obj)
    assert (peeked.uid, peeked.namespace, peeked.dry_run) == (review.uid, review.namespace, review.dry_run)
    # As JSON with sorted keys: `==` would take 2**64 for 2.0**64 and True for 1.
    full = orjson.dumps(decision_inputs(review.obj), option=orjson.OPT_SORT_KEYS)
    assert orjson.dumps(peeked.inputs, option=orjson.OPT_SORT_KEYS) == full
    # The cache's key: the inputs as JSON, a Deployment's Pod as its template-free view (marked).
    view = template_free(peeked.inputs)
    assert peeked.key.startswith(b"~") == (view is not None)
    assert orjson.loads(peeked.key.removeprefix(b"~")) == (peeked.inputs if view is None else view)


class TestAgreementWithTheFullPath:
    @pytest.mark.parametrize("path", corpus_params(corpus_files(), ids=lambda path: path.stem))
    def test_every_corpus_review_is_peeked_and_agrees(self, path: Path) -> None:
        body = path.read_bytes()
        assert peek_review(body) is not None
        agrees_with_the_full_path(body)

    @settings(max_examples=2000, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(body=reviews_with_an_odd_pod_field() | bodies().map(lambda case: case[0])
           | mutated_reviews().map(orjson.dumps))
    def test_a_mutated_review_is_either_refused_or_agrees(self, body: bytes) -> None:
        agrees_with_the_full_path(body)


def _edited(path: tuple[str, ...], value: Any) -> bytes:
    review = orjson.loads(BASE)
    node = review
    for key in path[:-1]:
        node = node[key]
    if value is _DROP:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return orjson.dumps(review)


_DROP = object()


class TestWhatTakesTheFullPath:
    @pytest.mark.parametrize(
        ("path", "value"),
        [
            (("request", "operation"), "UPDATE"),
            (("request", "kind", "kind"), "Deployment"),
            (("request", "kind", "group"), "apps"),
            (("request", "subResource"), "status"),
            (("request", "dryRun"), "yes"),
            (("request", "name"), 5),
            (("request", "namespace"), ""),
            (("request", "uid"), _DROP),
            (("request", "object", "kind"), "Deployment"),
            (("request", "object", "apiVersion"), "v2"),
            (("request", "object", "spec"), _DROP),
            (("request", "object", "spec", "containers"), {"not": "a list"}),
            (("request", "object", "spec", "containers", 0), "not an object"),
            (("request", "object", "metadata"), None),
            (("apiVersion",), "admission.k8s.io/v1beta1"),
        ],
        ids=lambda part: "/".join(map(str, part)) if isinstance(part, tuple) else
        "dropped" if part is _DROP else repr(part)[:20],
    )
    def test_anything_but_a_plain_v1_pod_create_is_not_peeked(
        self, path: tuple[str, ...], value: Any
    ) -> None:
        assert peek_review(_edited(path, value)) is None

    @pytest.mark.parametrize(
        "body",
        [b"", b"not json", b"[]", BASE.rstrip()[:-1]],
        ids=["empty", "not json", "an array", "truncated"],
    )
    def test_a_body_that_is_not_a_json_object_is_not_peeked(self, body: bytes) -> None:
        assert peek_review(body) is None

    def test_invalid_utf_8_in_a_field_pod_tailor_does_not_read_is_not_peeked(self) -> None:
        compact = orjson.dumps(orjson.loads(BASE))
        body = compact.replace(b'"request":{', b'"request":{"\x80":1,', 1)
        assert body != compact
        assert peek_review(compact) is not None
        assert peek_review(body) is None


def _with_text(old: bytes, new: bytes) -> bytes:
    """The sample review, compact, with one piece of its JSON text replaced."""
    compact = orjson.dumps(orjson.loads(BASE))
    assert old in compact
    return compact.replace(old, new, 1)


# Bodies written by hand, as no JSON encoder would write them: where msgspec and orjson could differ.
GRACE = b'"terminationGracePeriodSeconds":'
ODD_TEXTS = {
    "2**64 grace period": (GRACE + b"30", GRACE + b"18446744073709551616"),
    "-2**63-1 grace period": (GRACE + b"30", GRACE + b"-9223372036854775809"),
    "2**63 grace period": (GRACE + b"30", GRACE + b"9223372036854775808"),
    "a 400-digit grace period": (GRACE + b"30", GRACE + b"1" + b"0" * 400),
    "a 2**64 field not read": (b'"request":{', b'"request":{"extra":18446744073709551616,'),
    "a duplicate spec": (b'"spec":{', b'"spec":{"containers":[]},"spec":{'),
    "a duplicate grace period": (GRACE + b"30", GRACE + b"5," + GRACE + b"30"),
    "an escaped key": (GRACE + b"30", b'"\\u0074erminationGracePeriodSeconds":31'),
    "grace period 30.0": (GRACE + b"30", GRACE + b"30.0"),
    "spaces": (b'"namespace":"', b' "namespace" :\t"'),
}


class TestHandWrittenBodies:
    @pytest.mark.parametrize(("old", "new"), ODD_TEXTS.values(), ids=list(ODD_TEXTS))
    def test_an_odd_body_is_either_refused_or_agrees(self, old: bytes, new: bytes) -> None:
        agrees_with_the_full_path(_with_text(old, new))

    @pytest.mark.parametrize(("old", "new"), ODD_TEXTS.values(), ids=list(ODD_TEXTS))
    def test_an_odd_body_gets_the_same_answer_with_a_warm_cache_as_without_one(
        self, warm: tuple[State, VerdictCache], old: bytes, new: bytes
    ) -> None:
        state, cache = warm
        body, engine = _with_text(old, new), default_engine()
        for _ in range(2):  # the second one may come from the cache
            cached = admit(body, cluster=state.cluster, profiles=state.profiles, engine=engine, cache=cache)
            fresh = admit(body, cluster=state.cluster, profiles=state.profiles, engine=engine, cache=None)
            assert (cached.status, cached.body, cached.outcome) == (fresh.status, fresh.body, fresh.outcome)

