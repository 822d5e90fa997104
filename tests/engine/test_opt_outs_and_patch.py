"""Opt-outs, the explanation annotation and the shape of the patch itself."""

from __future__ import annotations

from typing import Any

import pytest

from tests.engine.podkit import container, first, pod, policy, run
from webhook.core.model.patch import PatchBuilder, pointer
from webhook.core.model.pod import (
    EXCLUDE_ANNOTATION,
    EXCLUDE_CONTAINERS_ANNOTATION,
    INJECTED_ANNOTATION,
    SKIP_LABEL,
)


class TestOptOuts:
    def test_the_skip_label_leaves_the_pod_alone_and_says_so(self) -> None:
        decision, _ = run(pod(container(), labels={SKIP_LABEL: "true"}))
        assert decision.ops == ()
        assert decision.skipped == "pod label pod-tailor.io/skip=true"

    @pytest.mark.parametrize(
        ("excluded", "present", "absent"),
        [
            ("probes", {"resources", "lifecycle"}, {"readinessProbe", "startupProbe"}),
            ("preStop", {"readinessProbe"}, {"lifecycle"}),
            ("resources, probes", {"lifecycle"}, {"readinessProbe"}),
        ],
    )
    def test_a_pod_annotation_turns_single_features_off(
        self, excluded: str, present: set[str], absent: set[str]
    ) -> None:
        _, result = run(pod(container(), annotations={EXCLUDE_ANNOTATION: excluded}))
        body = first(result)
        assert present <= set(body)
        assert not absent & set(body)

    def test_excluding_resources_leaves_them_empty(self) -> None:
        _, result = run(pod(container(), annotations={EXCLUDE_ANNOTATION: "resources"}))
        assert first(result)["resources"] == {}

    def test_named_containers_can_be_excluded(self) -> None:
        subject = pod(
            container(),
            container("istio-proxy", ports=(15090,)),
            annotations={EXCLUDE_CONTAINERS_ANNOTATION: "istio-proxy"},
        )
        _, result = run(subject)
        assert result["spec"]["containers"][1] == subject["spec"]["containers"][1]
        assert "readinessProbe" in first(result)

    def test_an_unknown_feature_name_is_reported(self) -> None:
        decision, _ = run(pod(container(), annotations={EXCLUDE_ANNOTATION: "probez"}))
        assert any("probez" in warning for warning in decision.warnings)

    def test_a_policy_can_turn_features_off(self) -> None:
        decision, _ = run(
            pod(container()), using=policy("features: {resources: false, probes: false, preStop: false}")
        )
        assert decision.ops == ()


class TestExplanation:
    def test_every_injected_value_is_named_in_the_annotation(self) -> None:
        decision, result = run(pod(container()))
        text = result["metadata"]["annotations"][INJECTED_ANNOTATION]
        assert text.startswith("policy=default")
        for injection in decision.injections:
            assert f"{injection.field}={injection.value}" in text
        assert 'requests.cpu=100m (from policy "default")' in text
        assert "terminationGracePeriodSeconds=35 (was 30; preStop 5s + drain 30s" in text

    def test_nothing_to_add_means_no_patch_and_no_annotation(self) -> None:
        decision, _ = run(
            pod(container(ports=(), requests={"cpu": "1", "memory": "1Gi"}, limits={"memory": "1Gi"}))
        )
        assert decision.ops == ()


class TestPatchShape:
    @pytest.mark.parametrize(
        ("path", "expected"),
        [
            (
                ("metadata", "annotations", "pod-tailor.io/injected"),
                "/metadata/annotations/pod-tailor.io~1injected",
            ),
            (("metadata", "annotations", "a~b/c"), "/metadata/annotations/a~0b~1c"),
            (("spec", "containers", 0, "resources"), "/spec/containers/0/resources"),
        ],
    )
    def test_pointer_keys_are_escaped(self, path: tuple[Any, ...], expected: str) -> None:
        assert pointer(path) == expected

    def test_an_existing_annotations_map_gets_one_escaped_key(self) -> None:
        decision, _ = run(pod(container(), annotations={"team": "shop"}))
        annotation_ops = [op for op in decision.ops if op["path"].startswith("/metadata/annotations")]
        assert annotation_ops == [
            {
                "op": "add",
                "path": "/metadata/annotations/pod-tailor.io~1injected",
                "value": annotation_ops[0]["value"],
            }
        ]

    def test_missing_annotations_are_added_as_one_whole_object(self) -> None:
        decision, _ = run(pod(container()))
        op = next(op for op in decision.ops if op["path"].startswith("/metadata"))
        assert op["path"] == "/metadata/annotations"
        assert set(op["value"]) == {INJECTED_ANNOTATION}

    def test_values_under_one_missing_parent_share_a_single_add(self) -> None:
        builder = PatchBuilder({"spec": {"containers": [{"name": "a"}]}})
        builder.set(("spec", "containers", 0, "resources", "requests", "cpu"), "1")
        builder.set(("spec", "containers", 0, "resources", "limits", "memory"), "1Gi")
        assert builder.ops == (
            {
                "op": "add",
                "path": "/spec/containers/0/resources",
                "value": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
            },
        )

    def test_an_existing_member_is_replaced_not_added(self) -> None:
        builder = PatchBuilder({"spec": {"terminationGracePeriodSeconds": 30}})
        builder.set(("spec", "terminationGracePeriodSeconds"), 35)
        assert builder.ops == ({"op": "replace", "path": "/spec/terminationGracePeriodSeconds", "value": 35},)

    @pytest.mark.parametrize(
        ("spec", "op"),
        [({"terminationGracePeriodSeconds": 30}, "replace"), ({"terminationGracePeriodSeconds": None}, "add"),
         ({}, "add")],
        ids=["a-value", "null", "absent"],
    )
    def test_a_member_held_as_null_is_added_like_an_absent_one(self, spec: dict[str, Any], op: str) -> None:
        builder = PatchBuilder({"spec": spec})
        builder.set(("spec", "terminationGracePeriodSeconds"), 35)
        assert builder.ops == ({"op": op, "path": "/spec/terminationGracePeriodSeconds", "value": 35},)
