"""The reviews the tests and benches send (tests/reviews.py) are the ones an API server sends.

Rebuilt from a recorded review's object, uid, user and options, `admission_review` gives the recorded
review back to the byte (field order included, as `orjson.dumps` writes it and the webhook's uid peek
reads it); `review_for` changes only what it is asked to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.reviews import KUBECTL_CREATE, admission_review, review_for
from tests.shared import SAMPLE_REVIEW, corpus_params, review_files
from webhook.admission.peek import peek_uid


def rebuilt(recorded: dict[str, Any]) -> dict[str, Any]:
    request = recorded["request"]
    options = {k: v for k, v in request["options"].items() if k not in ("kind", "apiVersion", "dryRun")}
    return admission_review(
        request["object"], uid=request["uid"], namespace=request["namespace"], user=request["userInfo"],
        dry_run=request["dryRun"], options=options,
    )  # fmt: skip


@pytest.mark.parametrize("path", [SAMPLE_REVIEW, *corpus_params(review_files(), ids=lambda p: p.stem)])
def test_a_built_review_is_the_recorded_one_to_the_byte(path: Path) -> None:
    recorded = orjson.loads(path.read_bytes())
    assert orjson.dumps(rebuilt(recorded)) == orjson.dumps(recorded)


def test_the_built_bytes_carry_the_uid_where_the_api_server_writes_it() -> None:
    pod = {"metadata": {"generateName": "web-", "namespace": "shop"}, "spec": {"containers": []}}
    body = orjson.dumps(admission_review(pod, uid="u-1"))
    assert peek_uid(body[:200], prefix_only=True) == "u-1"


@pytest.mark.parametrize(
    ("metadata", "name", "namespace"),
    [
        ({"generateName": "web-7d4b9c8f6d-", "namespace": "shop"}, None, "shop"),
        ({"name": "redis-0", "generateName": "redis-", "namespace": "db"}, "redis-0", "db"),
        ({"name": "kafkaclient"}, "kafkaclient", None),
    ],
)
def test_name_and_namespace_are_left_out_when_empty_as_go_omits_them(
    metadata: dict[str, str], name: str | None, namespace: str | None
) -> None:
    request = admission_review({"metadata": metadata, "spec": {}})["request"]
    assert (request.get("name"), request.get("namespace")) == (name, namespace)


def test_a_dry_run_says_so_in_the_request_and_in_its_create_options() -> None:
    request = admission_review({"metadata": {"name": "p"}}, dry_run=True, options=KUBECTL_CREATE)["request"]
    assert request["dryRun"] is True
    assert request["options"] == {
        "kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"],
        "fieldManager": "kubectl-create", "fieldValidation": "Strict",
    }  # fmt: skip
    assert review_for(dry_run=True)["request"]["options"]["dryRun"] == ["All"]
    assert "dryRun" not in review_for(dry_run=False)["request"]["options"]


def test_review_for_changes_only_what_it_is_asked_to() -> None:
    recorded = orjson.loads(SAMPLE_REVIEW.read_bytes())
    changed = review_for(
        namespace="prod", uid="u-2", labels={"tier": "web"}, annotations={"a/b": "c"}, name="x"
    )
    request, metadata = changed["request"], changed["request"]["object"]["metadata"]
    assert (request["uid"], request["namespace"], metadata["namespace"], metadata["name"]) == (
        "u-2", "prod", "prod", "x"
    )
    assert metadata["labels"] == {**recorded["request"]["object"]["metadata"]["labels"], "tier": "web"}
    assert metadata["annotations"] == {"a/b": "c"}
    for key in ("uid", "namespace", "object"):
        del request[key], recorded["request"][key]
    assert changed == recorded
