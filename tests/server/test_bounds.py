"""Memory bounded by bytes: a verdict cache keyed on what is read, answers no larger than their request."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from tests.reviews import review_for
from tests.server.conftest import labelled_state
from webhook.admission import Outcome, VerdictCache, admit
from webhook.admission.cache import MAX_ENTRY_INPUTS
from webhook.admission.handler import ErrorReason, answer_limit
from webhook.config.policies import load_policy_text
from webhook.core.engine import decide
from webhook.core.model.namespace import MODE_LABEL, POLICY_LABEL
from webhook.core.snapshot import ClusterSnapshot
from webhook.offline.traffic import with_manifest_traffic
from webhook.refreshers.state import State


def replica(uid: str, *, name: str | None = None, owner: tuple[str, str] | None = None,
            labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
            namespace: str = "shop", standalone: bool = False) -> bytes:
    review = review_for(namespace=namespace, uid=uid)
    metadata = review["request"]["object"]["metadata"]
    if standalone:
        del metadata["ownerReferences"]
    if owner is not None:
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1],
                                        "uid": f"owner-{uid}", "controller": True}]
    if name is not None:
        metadata.pop("generateName", None)
        metadata["name"] = name
    metadata.setdefault("labels", {}).update(labels or {})
    metadata.setdefault("annotations", {}).update(annotations or {})
    return orjson.dumps(review)


def answered(state: State, cache: VerdictCache, body: bytes) -> Any:
    return admit(body, cluster=state.cluster, profiles=state.profiles, engine=decide, cache=cache)


def response(answer: Any) -> dict[str, Any]:
    found: dict[str, Any] = orjson.loads(answer.body)["response"]
    return found


class TestWhatTheCacheIsKeyedOn:
    def test_statefulset_ordinals_share_one_verdict(self) -> None:
        state, cache = labelled_state(), VerdictCache(8)
        answers = [
            answered(state, cache, replica(
                f"uid-{index}", name=f"db-{index}", owner=("StatefulSet", "db"),
                labels={"statefulset.kubernetes.io/pod-name": f"db-{index}",
                        "apps.kubernetes.io/pod-index": str(index), "controller-revision-hash": "db-7f9c"},
            ))
            for index in range(3)
        ]
        assert (cache.misses, cache.hits) == (1, 2)
        assert len({response(answer)["patch"] for answer in answers}) == 1
        assert answers[2].workload == "shop/StatefulSet/db"

    def test_the_pods_of_an_indexed_job_share_one_verdict(self) -> None:
        state, cache = labelled_state(), VerdictCache(8)
        for index in range(4):
            index_text = str(index)
            answered(state, cache, replica(
                f"job-{index}", name=f"backup-{index}-x7k2p", owner=("Job", "backup"),
                labels={"batch.kubernetes.io/job-completion-index": index_text, "job-name": "backup"},
                annotations={"batch.kubernetes.io/job-completion-index": index_text},
            ))
        assert (cache.misses, cache.hits) == (1, 3)

    def test_a_pod_without_a_controller_is_keyed_on_its_own_name(self) -> None:
        state, cache = labelled_state(), VerdictCache(8)
        first = answered(state, cache, replica("one", name="standalone-a", standalone=True))
        second = answered(state, cache, replica("two", name="standalone-b", standalone=True))
        assert (cache.misses, cache.hits) == (2, 0)
        assert (first.workload, second.workload) == ("shop/Pod/standalone-a", "shop/Pod/standalone-b")

    def test_a_large_annotation_nobody_reads_costs_nothing_in_the_cache(self) -> None:
        state, cache = labelled_state(), VerdictCache(8)
        for index in range(3):
            blob = {"example.com/blob": str(index) * 250_000}
            answered(state, cache, replica(f"big-{index}", annotations=blob))
        assert (cache.misses, cache.hits) == (1, 2)
        assert cache.bytes < 20_000

    def test_labels_pod_tailor_reads_stay_in_the_key(self) -> None:
        state, cache = labelled_state(), VerdictCache(8)
        answered(state, cache, replica("one"))
        skipped = answered(state, cache, replica("two", labels={"pod-tailor.io/skip": "true"}))
        assert skipped.outcome is Outcome.SKIPPED
        assert cache.hits == 0


def new_template(uid: str, template_hash: str, *, deployment: str = "guestbook-ui", **labels: str) -> bytes:
    """A Pod of the sample Deployment's ReplicaSet for another template (after a rollout)."""
    return replica(uid, owner=("ReplicaSet", f"{deployment}-{template_hash}"),
                   labels={"pod-template-hash": template_hash, **labels})


class TestANewTemplate:
    def test_the_first_pods_of_a_new_template_share_the_old_templates_verdict(self) -> None:
        state, cache = labelled_state(), VerdictCache(8)
        hashes = ("5d8b89b6dc", "7c9f4d2b8x", "6b4")
        answers = [answered(state, cache, new_template(f"t-{h}", h)) for h in hashes]
        assert (cache.misses, cache.hits) == (1, 2)
        assert {answer.workload for answer in answers} == {"shop/Deployment/guestbook-ui"}
        assert len({response(answer)["patch"] for answer in answers}) == 1

    def test_its_verdict_is_the_one_it_would_get_uncached(self) -> None:
        state, warm = labelled_state(), VerdictCache(8)
        answered(state, warm, new_template("old", "5d8b89b6dc"))
        cached = answered(state, warm, new_template("new", "7c9f4d2b8x"))
        fresh = answered(state, VerdictCache(0), new_template("new", "7c9f4d2b8x"))
        assert warm.hits == 1
        assert cached.body == fresh.body

    @pytest.mark.parametrize(
        ("first", "second"),
        [
            # A ReplicaSet named like the Deployment with no hash label names a ReplicaSet workload.
            (new_template("a", "5d8b89b6dc"), replica("b", owner=("ReplicaSet", "guestbook-ui"))),
            # A name that does not end with the hash label's value: the label does not name the template.
            (new_template("a", "5d8b89b6dc"),
             replica("b", owner=("ReplicaSet", "guestbook-ui-5d8b89b6dc"),
                     labels={"pod-template-hash": "zz"})),
            # An Argo Rollout's Pods: its autoscalers are found by the ReplicaSet's full name.
            (new_template("a", "5d8b89b6dc", **{"rollouts-pod-template-hash": "5d8b89b6dc"}),
             new_template("b", "7c9f4d2b8x", **{"rollouts-pod-template-hash": "7c9f4d2b8x"})),
            # Another Deployment.
            (new_template("a", "5d8b89b6dc"), new_template("b", "5d8b89b6dc", deployment="guestbook")),
        ],
        ids=["replicaset-named-like-the-deployment", "hash-not-in-the-name", "argo-rollout",
             "other-deployment"],
    )
    def test_pods_the_template_does_not_explain_keep_their_own_key(self, first: bytes, second: bytes) -> None:
        state, cache = labelled_state(), VerdictCache(8)
        answered(state, cache, first)
        answered(state, cache, second)
        assert (cache.misses, cache.hits) == (2, 0)

    def test_a_service_selecting_on_the_hash_keeps_it_in_the_key(self) -> None:
        state = labelled_state()
        service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "pinned", "namespace": "shop"},
                   "spec": {"selector": {"pod-template-hash": "5d8b89b6dc"}, "ports": [{"port": 80}]}}
        state.cluster = with_manifest_traffic(state.cluster, [service], namespace="shop")
        assert state.cluster.selects_on("shop", "pod-template-hash")
        cache = VerdictCache(8)
        answered(state, cache, new_template("a", "5d8b89b6dc"))
        answered(state, cache, new_template("b", "7c9f4d2b8x"))
        assert (cache.misses, cache.hits) == (2, 0)


class TestEviction:
    def test_the_least_recently_used_verdict_goes_first(self) -> None:
        state, cache = labelled_state(), VerdictCache(2)
        answered(state, cache, replica("a", namespace="team-a"))
        answered(state, cache, replica("b", namespace="team-b"))
        answered(state, cache, replica("a2", namespace="team-a"))  # a hit: team-a is now the newest
        answered(state, cache, replica("c", namespace="team-c"))  # evicts team-b
        answered(state, cache, replica("a3", namespace="team-a"))
        answered(state, cache, replica("b2", namespace="team-b"))
        assert (cache.hits, cache.misses) == (2, 4)


class TestCacheBytes:
    def test_the_cache_never_holds_more_bytes_than_its_bound(self) -> None:
        state, cache = labelled_state(), VerdictCache(10_000, max_bytes=40_000)
        for index in range(60):
            answered(state, cache, replica(f"ns-{index}", namespace=f"team-{index}"))
        assert 0 < cache.bytes <= 40_000
        assert len(cache) < 60

    def test_inputs_over_the_entry_limit_are_never_kept(self) -> None:
        state, cache = labelled_state(), VerdictCache(8)
        label = {"pod-tailor.io/note": "x" * (MAX_ENTRY_INPUTS + 1)}
        for uid in ("one", "two"):
            answer = answered(state, cache, replica(uid, labels=label))
            assert answer.status == 200
        assert (cache.hits, len(cache), cache.bytes) == (0, 0, 0)
        assert cache.oversized == 2


def chatty_state() -> State:
    """Namespace shop under a policy that adds liveness probes too: an existing probe is copied twice."""
    policies = load_policy_text("policies:\n  chatty:\n    probes:\n      liveness: {enabled: true}\n")
    labels = {"shop": {MODE_LABEL: "enforce", POLICY_LABEL: "chatty"}}
    return State(cluster=ClusterSnapshot(policies=policies, namespaces=labels))


class TestAnswerSize:
    @pytest.mark.parametrize("cache", [None, VerdictCache(8)], ids=["uncached", "cached"])
    def test_an_answer_over_twice_its_request_falls_back_to_allowed_unchanged(
        self, cache: VerdictCache | None
    ) -> None:
        state = chatty_state()
        review = review_for(namespace="shop")
        app = review["request"]["object"]["spec"]["containers"][0]
        app["readinessProbe"] = {"exec": {"command": ["/bin/check", "y" * 300_000]}, "periodSeconds": 10}
        body = orjson.dumps(review)
        for _ in range(2):
            answer = admit(body, cluster=state.cluster, profiles=state.profiles, engine=decide, cache=cache)
            found = response(answer)
            assert answer.outcome is Outcome.ERROR
            assert answer.error is ErrorReason.ANSWER_TOO_LARGE
            assert "patch" not in found
            assert found["allowed"] is True
            assert found["warnings"][0].startswith("pod-tailor: the answer would be")
            assert len(answer.body) <= answer_limit(len(body))

    def test_an_answer_within_the_limit_keeps_its_patch(self) -> None:
        state = chatty_state()
        review = review_for(namespace="shop")
        app = review["request"]["object"]["spec"]["containers"][0]
        app["readinessProbe"] = {"exec": {"command": ["/bin/check", "y" * 1000]}, "periodSeconds": 10}
        answer = admit(orjson.dumps(review), cluster=state.cluster, profiles=state.profiles, engine=decide)
        ops = orjson.loads(base64.b64decode(response(answer)["patch"]))
        assert sum("y" * 1000 in orjson.dumps(op).decode() for op in ops) == 2  # startup and liveness

    def test_the_limit_is_twice_the_request_with_a_floor(self) -> None:
        assert answer_limit(100) == 16 * 1024
        assert answer_limit(1_000_000) == 2_000_000
