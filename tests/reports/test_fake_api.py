"""The fake API server answers server-side apply, CRD discovery and owner garbage collection as a real one.

Shared by every controller that writes through apply (tests/kubefake.py): the reports controller first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubefake import FakeKube
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .kit import report_crd

APPLY = "application/apply-patch+yaml"
GROUP, VERSION, PLURAL = "openreports.io", "v1alpha1", "reports"


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube(token="", garbage_collection=True) as kube:
        kube.install_crd(report_crd())
        yield kube


@pytest.fixture
def custom(fake: FakeKube) -> client.CustomObjectsApi:
    configuration = client.Configuration()
    configuration.host = fake.url
    return client.CustomObjectsApi(client.ApiClient(configuration))


def report(name: str = "web", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Report",
            "metadata": {"name": name, "namespace": "shop"}, **fields}  # fmt: skip


def apply(api: client.CustomObjectsApi, body: dict[str, Any], *, manager: str = "pod-tailor",
          force: bool = False) -> dict[str, Any]:  # fmt: skip
    answer: Any = api.patch_namespaced_custom_object(
        GROUP, VERSION, "shop", PLURAL, body["metadata"]["name"], body, field_manager=manager,
        force=force or None, _content_type=APPLY, _preload_content=False,
    )  # fmt: skip
    found: dict[str, Any] = json.loads(answer.data)
    return found


class TestServerSideApply:
    def test_apply_creates_then_updates_and_records_the_manager(self, custom: Any, fake: FakeKube) -> None:
        created = apply(custom, report(source="pod-tailor", summary={"pass": 1}))
        assert created["summary"] == {"pass": 1}
        updated = apply(custom, report(source="pod-tailor", summary={"warn": 2}))
        assert updated["summary"] == {"warn": 2}, "a field left out of the next apply is removed"
        assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
        (entry,) = updated["metadata"]["managedFields"]
        assert (entry["manager"], entry["operation"]) == ("pod-tailor", "Apply")
        assert entry["fieldsV1"] == {"f:source": {}, "f:summary": {"f:warn": {}}}

    def test_another_managers_field_is_a_409_conflict_unless_forced(self, custom: Any) -> None:
        apply(custom, report(source="kyverno"), manager="kubectl")
        with pytest.raises(ApiException) as refused:
            apply(custom, report(source="pod-tailor"))
        assert refused.value.status == 409
        status = json.loads(refused.value.body or "{}")
        assert status["details"]["causes"][0]["reason"] == "FieldManagerConflict"
        assert 'conflict with "kubectl"' in status["message"]
        assert apply(custom, report(source="pod-tailor"), force=True)["source"] == "pod-tailor"

    def test_the_same_value_is_shared_not_a_conflict(self, custom: Any) -> None:
        apply(custom, report(source="pod-tailor"), manager="kubectl")
        shared = apply(custom, report(source="pod-tailor"))
        assert {e["manager"] for e in shared["metadata"]["managedFields"]} == {"pod-tailor"}

    def test_a_stale_resource_version_in_the_apply_is_a_409(self, custom: Any) -> None:
        apply(custom, report(source="pod-tailor"))
        stale = report(source="pod-tailor")
        stale["metadata"]["resourceVersion"] = "1"
        with pytest.raises(ApiException) as refused:
            apply(custom, stale)
        assert refused.value.status == 409

    def test_apply_needs_a_field_manager(self, fake: FakeKube, custom: Any) -> None:
        with pytest.raises(ApiException) as refused:
            custom.patch_namespaced_custom_object(GROUP, VERSION, "shop", PLURAL, "web", report(),
                                                  _content_type=APPLY)  # fmt: skip
        assert refused.value.status == 422
        assert "fieldManager" in json.loads(refused.value.body or "{}")["message"]

    def test_a_write_the_crd_schema_refuses_is_422(self, custom: Any) -> None:
        with pytest.raises(ApiException) as refused:
            apply(custom, report(results=[{"policy": "pod-tailor", "result": "maybe"}]))
        assert refused.value.status == 422
        assert "results[0].result" in json.loads(refused.value.body or "{}")["message"]


class TestCustomResourceDefinitions:
    def test_the_group_is_served_and_discovered_only_while_the_crd_is_installed(self) -> None:
        with FakeKube(token="") as fake:
            configuration = client.Configuration()
            configuration.host = fake.url
            api = client.ApiClient(configuration)
            custom: Any = client.CustomObjectsApi(api)

            def groups() -> set[str]:
                found: Any = client.ApisApi(api).get_api_versions()
                return {g.name for g in found.groups}

            assert GROUP not in groups()
            with pytest.raises(ApiException) as absent:
                custom.list_namespaced_custom_object(GROUP, VERSION, "shop", PLURAL)
            assert absent.value.status == 404
            fake.install_crd(report_crd())
            assert GROUP in groups()
            assert custom.list_namespaced_custom_object(GROUP, VERSION, "shop", PLURAL)["items"] == []
            fake.uninstall_crd(report_crd())
            assert GROUP not in groups()


class TestGarbageCollection:
    def test_deleting_the_owner_deletes_what_it_owns_and_nothing_else(
        self, fake: FakeKube, custom: Any
    ) -> None:
        owner = fake.put({"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": "web", "namespace": "shop"}, "spec": {}})  # fmt: skip
        uid = owner["metadata"]["uid"]
        reference = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": uid}
        owned = report("owned")
        owned["metadata"]["ownerReferences"] = [reference]
        apply(custom, owned)
        apply(custom, report("other"))
        fake.delete("deployments", "web", namespace="shop")
        assert fake.get("reports", "owned", namespace="shop") is None
        assert fake.get("reports", "other", namespace="shop") is not None
