"""The profile store: versioned JSON, atomic file writes at a shared default place, and ConfigMaps."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubefake import FakeKube

from webhook.cluster.config import discover
from webhook.core.model.profile import ContainerProfile, Evidence, NoRecommendation, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.profiles.kubestore import KubeStore, configmap_name
from webhook.profiles.store import (
    FileStore,
    ProfileDocument,
    StoreError,
    WorkloadEntry,
    decode_document,
    default_store_path,
    encode_document,
    load_snapshot,
)

MIB = 2**20


def _rec(cpu: str = "0.25", memory: int = 512 * MIB, **extra: object) -> Recommendation:
    evidence = Evidence("14d", 4032, 335.9, 95.0, 0.15, 0.93, 0)
    return Recommendation(Decimal(cpu), Decimal(memory), evidence, **extra)  # type: ignore[arg-type]


def _doc(*namespaces: str, generated_at: float = 1_700_000_000.0) -> ProfileDocument:
    workloads = {
        WorkloadKey(ns, "Deployment", "web"): WorkloadEntry(
            {"app": _rec(), "envoy": NoRecommendation("only 2.0h and 24 samples of history")},
            {"app": {"cpu": Decimal("0.5"), "memory": Decimal(MIB * 256)}},
        )
        for ns in namespaces
    }
    return ProfileDocument(workloads, generated_at, "test build", "14d")


class TestDefaultLocation:
    @pytest.mark.parametrize(
        ("env", "expected"),
        [
            ({"POD_TAILOR_PROFILES": "/srv/p.json", "XDG_DATA_HOME": "/x"}, "/srv/p.json"),
            ({"XDG_DATA_HOME": "/x"}, "/x/pod-tailor/profiles.json"),
            ({"HOME": "/home/ana"}, "/home/ana/.local/share/pod-tailor/profiles.json"),
        ],
    )
    def test_the_default_path_honours_the_variable_then_xdg_then_home(
        self, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str
    ) -> None:
        for name in ("POD_TAILOR_PROFILES", "XDG_DATA_HOME"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        assert default_store_path() == Path(expected)

    def test_a_missing_store_loads_as_an_empty_snapshot(self, tmp_path: Path) -> None:
        snapshot = load_snapshot(tmp_path / "none.json")
        assert dict(snapshot.profiles) == {}
        assert snapshot.taken_at == 0.0
        assert "no profiles" in snapshot.source

    def test_build_preview_and_serve_meet_at_the_default_path_without_flags(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
        monkeypatch.delenv("POD_TAILOR_PROFILES", raising=False)
        FileStore().write(_doc("shop"))
        snapshot = load_snapshot()
        assert snapshot.for_workload(WorkloadKey("shop", "Deployment", "web"))["app"] == _rec()
        assert (tmp_path / "pod-tailor" / "profiles.json").is_file()


class TestFileStore:
    def test_a_document_survives_the_round_trip(self, tmp_path: Path) -> None:
        store = FileStore(tmp_path / "p.json")
        store.write(_doc("shop", "web"))
        assert store.read() == _doc("shop", "web")

    def test_quantities_are_stored_as_the_strings_kubectl_prints(self, tmp_path: Path) -> None:
        store = FileStore(tmp_path / "p.json")
        store.write(_doc("shop"))
        data = json.loads((tmp_path / "p.json").read_text())
        app = data["workloads"]["shop/Deployment/web"]["containers"]["app"]
        assert data["apiVersion"] == "pod-tailor.io/profiles/v1"
        assert (app["cpu"], app["memory"]) == ("250m", "512Mi")

    def test_a_write_leaves_no_temporary_files_and_replaces_the_old_file_whole(self, tmp_path: Path) -> None:
        store = FileStore(tmp_path / "deep" / "p.json")
        store.write(_doc("shop"))
        store.write(_doc("other"))
        assert os.listdir(tmp_path / "deep") == ["p.json"]
        assert store.read().namespaces() == {"other"}

    def test_a_scoped_write_keeps_the_other_namespaces(self, tmp_path: Path) -> None:
        store = FileStore(tmp_path / "p.json")
        store.write(_doc("shop", "web"))
        store.write(_doc(), scope=["shop"])
        assert store.read().namespaces() == {"web"}

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("{not json", "not valid JSON"),
            ('{"apiVersion": "pod-tailor.io/profiles/v9"}', "unsupported apiVersion"),
            ('{"apiVersion": "pod-tailor.io/profiles/v1", "workloads": {"bad": {}}}', "bad workload key"),
            (
                '{"apiVersion": "pod-tailor.io/profiles/v1", "workloads": {"a/Pod/b": {"containers": '
                '{"c": {"cpu": "lots"}}}}}',
                "a/Pod/b/c",
            ),
        ],
    )
    def test_a_damaged_store_is_refused_with_its_location_and_the_cause(
        self, tmp_path: Path, text: str, message: str
    ) -> None:
        (tmp_path / "p.json").write_text(text)
        with pytest.raises(StoreError, match=r"profile store .*p\.json") as caught:
            FileStore(tmp_path / "p.json").read()
        assert message in str(caught.value)

    def test_the_fingerprint_changes_when_the_file_is_replaced(self, tmp_path: Path) -> None:
        store = FileStore(tmp_path / "p.json")
        assert store.fingerprint() is None
        store.write(_doc("shop"))
        first = store.fingerprint()
        store.write(_doc("shop", "web"))
        assert store.fingerprint() != first


profiles = st.one_of(
    st.builds(NoRecommendation, st.text(min_size=1, max_size=40)),
    st.builds(
        lambda milli, mib, startup, seconds, ev: Recommendation(
            Decimal(milli) / 1000, Decimal(mib * MIB), ev,
            None if startup is None else Decimal(startup) / 1000, seconds,
        ),
        st.integers(min_value=1, max_value=64_000),
        st.integers(min_value=1, max_value=1 << 20),
        st.none() | st.integers(min_value=1, max_value=64_000),
        st.none() | st.integers(min_value=0, max_value=3600).map(float),
        st.builds(
            Evidence,
            st.sampled_from(["14d", "7d", "2w"]),
            st.integers(min_value=0, max_value=10**7),
            st.integers(min_value=0, max_value=10**5).map(lambda h: h / 100),
            st.sampled_from([90.0, 95.0, 99.0]),
            st.sampled_from([0.0, 0.15, 0.3]),
            st.integers(min_value=0, max_value=10_000).map(lambda c: c / 10_000),
            st.integers(min_value=0, max_value=50),
        ),
    ),
)


@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True), profiles, max_size=4))
def test_every_profile_survives_encoding(containers: dict[str, ContainerProfile]) -> None:
    document = ProfileDocument({WorkloadKey("ns", "Deployment", "w"): WorkloadEntry(containers)}, 1.0, "s")
    assert decode_document(json.loads(json.dumps(encode_document(document))), where="x") == document


@pytest.fixture
def kube_store(kube: FakeKube, tmp_path: Path) -> KubeStore:
    found = discover(kubeconfig=str(kube.write_kubeconfig(tmp_path / "kubeconfig")))
    assert found.config is not None, found.reason
    return KubeStore(found.config.api_client, namespace="pod-tailor")


class TestConfigMapStore:
    def test_one_configmap_per_namespace_in_pod_tailors_namespace(
        self, kube: FakeKube, kube_store: KubeStore
    ) -> None:
        kube_store.write(_doc("shop", "web"))
        for ns in ("shop", "web"):
            item = kube.get("configmaps", configmap_name(ns), namespace="pod-tailor")
            assert item is not None
            assert item["metadata"]["labels"]["pod-tailor.io/profiles"] == "true"
            assert json.loads(item["data"]["profiles.json"])["workloads"].keys() == {f"{ns}/Deployment/web"}
        assert kube_store.read().workloads == _doc("shop", "web").workloads

    def test_a_rebuild_replaces_and_removes_namespaces_no_longer_profiled(
        self, kube: FakeKube, kube_store: KubeStore
    ) -> None:
        kube_store.write(_doc("shop", "web"))
        kube_store.write(_doc("shop", "api"))
        assert kube.get("configmaps", configmap_name("web"), namespace="pod-tailor") is None
        assert kube_store.read().namespaces() == {"shop", "api"}

    def test_a_scoped_rebuild_leaves_other_namespaces_alone(self, kube_store: KubeStore) -> None:
        kube_store.write(_doc("shop", "web"))
        kube_store.write(_doc("shop"), scope=["shop"])
        assert kube_store.read().namespaces() == {"shop", "web"}

    def test_a_namespace_too_large_for_plain_json_is_stored_compressed(
        self, kube: FakeKube, kube_store: KubeStore
    ) -> None:
        workloads = {
            WorkloadKey("big", "Deployment", f"service-{i:05d}"): WorkloadEntry(
                {"app": _rec(), "sidecar": _rec()}
            )
            for i in range(3000)
        }
        kube_store.write(ProfileDocument(workloads, 1.0, "big build"))
        item = kube.get("configmaps", configmap_name("big"), namespace="pod-tailor")
        assert item is not None
        assert "profiles.json.gz" in item["binaryData"]
        assert len(kube_store.read().workloads) == 3000

    def test_the_fingerprint_follows_resource_versions(self, kube_store: KubeStore) -> None:
        kube_store.write(_doc("shop"))
        first = kube_store.fingerprint()
        assert kube_store.fingerprint() == first
        kube_store.write(_doc("shop", "web"))
        assert kube_store.fingerprint() != first

    def test_an_api_error_is_a_store_error_naming_the_status(
        self, kube: FakeKube, kube_store: KubeStore
    ) -> None:
        kube.fail_next("/api/v1/namespaces/pod-tailor/configmaps", 503)
        with pytest.raises(StoreError, match="HTTP 503"):
            kube_store.read()
