"""The cached path's decoder: what it accepts, the full path accepts as the same Pod CREATE."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from tests.server.conftest import corpus_files
from tests.server.test_fuzz import bodies, mutated_reviews, reviews_with_an_odd_pod_field
from webhook.admission.peek import peek_review
from webhook.admission.review import Review, is_v1_pod, parse_review
from webhook.core.inputs import decision_inputs

CORPUS = [path.read_bytes() for path in corpus_files()]


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
    assert peeked.inputs == decision_inputs(review.obj)


class TestAgreementWithTheFullPath:
    @pytest.mark.parametrize("body", CORPUS, ids=[path.stem for path in corpus_files()])
    def test_every_corpus_review_is_peeked_and_agrees(self, body: bytes) -> None:
        assert peek_review(body) is not None
        agrees_with_the_full_path(body)

    @settings(max_examples=2000, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(body=reviews_with_an_odd_pod_field() | bodies().map(lambda case: case[0])
           | mutated_reviews().map(orjson.dumps))
    def test_a_mutated_review_is_either_refused_or_agrees(self, body: bytes) -> None:
        agrees_with_the_full_path(body)


def _edited(path: tuple[str, ...], value: Any) -> bytes:
    review = orjson.loads(CORPUS[0])
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
        [b"", b"not json", b"[]", b'{"kind": "\xff"}', CORPUS[0].rstrip()[:-1]],
        ids=["empty", "not json", "an array", "invalid utf-8", "truncated"],
    )
    def test_a_body_that_is_not_a_json_object_is_not_peeked(self, body: bytes) -> None:
        assert peek_review(body) is None

    def test_invalid_utf_8_in_a_field_pod_tailor_does_not_read_is_not_peeked(self) -> None:
        compact = orjson.dumps(orjson.loads(CORPUS[0]))
        body = compact.replace(b'"request":{', b'"request":{"\x80":1,', 1)
        assert body != compact
        assert peek_review(compact) is not None
        assert peek_review(body) is None
