"""The three decoders of outside state only ever fail with their own error type, whatever they are fed.

The profile store's JSON (`decode_document`), a profile ConfigMap's data or gzip+base64 binaryData
(`decode_configmap`) and policy YAML (`load_policy_text`) are read by background refreshers; an
exception of another type used to kill the refresher for good.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import zlib
from decimal import Decimal
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webhook.config.policies import bundled_policy_document, load_policy_text
from webhook.core.model.profile import Evidence, NoRecommendation, Recommendation
from webhook.core.model.workload import WorkloadKey
from webhook.core.policy.reader import PolicyError
from webhook.profiles.kubestore import MAX_DOCUMENT, decode_configmap
from webhook.profiles.store import (
    ProfileDocument,
    StoreError,
    WorkloadEntry,
    decode_document,
    encode_document,
)

FUZZ = settings(max_examples=600, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["NaN", "nan", "inf", "-1", "1e400", "100m", "1Gi", "", "a/b", "ns/Kind/name", ".nan"])
    | st.text(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=16,
)

EVIDENCE = Evidence(window="14d", samples=2000, hours=200.0, cpu_percentile=95.0, memory_margin=0.15,
                    confidence=0.9, oom_kills=1)
GOOD = encode_document(ProfileDocument(
    {
        WorkloadKey("shop", "Deployment", "cart"): WorkloadEntry(
            {"app": Recommendation(Decimal("0.25"), Decimal(2**28), EVIDENCE, Decimal(1), 30.0),
             "proxy": NoRecommendation("too little history")},
            {"app": {"cpu": Decimal("0.1"), "memory": Decimal(2**27)}},
        ),
    },
    generated_at=1_700_000_000.0, source="test",
))


def _positions(node: Any) -> list[tuple[Any, Any]]:
    found: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((node, key))
            found.extend(_positions(value))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.append((node, index))
            found.extend(_positions(value))
    return found


@st.composite
def mutated(draw: st.DrawFn, document: Any) -> Any:
    """`document` with one to three values replaced by any JSON value, or dropped."""
    copy = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        positions = _positions(copy)
        if not positions:
            break
        parent, key = positions[draw(st.integers(0, len(positions) - 1))]
        if draw(st.booleans()):
            parent[key] = draw(values)
        else:
            del parent[key]
    return copy


class TestProfileDocuments:
    @FUZZ
    @given(data=values | mutated(GOOD))
    def test_any_json_is_a_document_or_a_store_error(self, data: Any) -> None:
        with contextlib.suppress(StoreError):
            decode_document(data, where="fuzz")

    def test_workloads_as_a_list_is_a_store_error_not_an_attribute_error(self) -> None:
        with pytest.raises(StoreError, match="workloads: must be an object, got list"):
            decode_document({**GOOD, "workloads": []}, where="store")

    @pytest.mark.parametrize("value", ["NaN", "-1", "inf"])
    def test_a_cpu_that_is_not_a_positive_finite_quantity_is_refused(self, value: str) -> None:
        bad = json.loads(json.dumps(GOOD))
        bad["workloads"]["shop/Deployment/cart"]["containers"]["app"]["cpu"] = value
        with pytest.raises(StoreError):
            decode_document(bad, where="store")


def _gz(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data)).decode()


class TestConfigMaps:
    @FUZZ
    @given(
        data=st.none() | st.dictionaries(st.sampled_from(["profiles.json", "x"]), values, max_size=2)
        | st.builds(lambda text: {"profiles.json": text}, st.text(max_size=60)),
        binary=st.none()
        | st.builds(lambda raw: {"profiles.json.gz": raw}, st.text(max_size=60))
        | st.builds(lambda raw: {"profiles.json.gz": base64.b64encode(raw).decode()}, st.binary(max_size=80))
        | st.builds(lambda raw: {"profiles.json.gz": _gz(raw)}, st.binary(max_size=80))
        | st.builds(lambda doc: {"profiles.json.gz": _gz(json.dumps(doc).encode())}, values | mutated(GOOD))
        | st.builds(lambda raw: {"profiles.json.gz": _gz(raw)[: len(_gz(raw)) // 2]}, st.binary(max_size=80)),
    )
    def test_any_data_or_binary_data_is_a_document_or_a_store_error(self, data: Any, binary: Any) -> None:
        with contextlib.suppress(StoreError):
            decode_configmap("ConfigMap fuzz", data, binary)

    def test_a_gzip_bomb_is_refused_without_inflating_it(self) -> None:
        bomb = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        packed = bomb.compress(b"\0" * (MAX_DOCUMENT + 1024)) + bomb.flush()
        assert len(packed) < 200_000
        with pytest.raises(StoreError, match="unpacked"):
            decode_configmap("ConfigMap bomb", None, {"profiles.json.gz": base64.b64encode(packed).decode()})

    def test_the_good_document_round_trips_compressed(self) -> None:
        packed = {"profiles.json.gz": _gz(json.dumps(GOOD).encode())}
        document = decode_configmap("ConfigMap ok", None, packed)
        assert encode_document(document) == GOOD


POLICY = bundled_policy_document()


class TestPolicies:
    @FUZZ
    @given(document=values | mutated(POLICY))
    def test_any_yaml_document_is_a_policy_or_a_policy_error(self, document: Any) -> None:
        with contextlib.suppress(PolicyError):
            load_policy_text(yaml.safe_dump(document))

    @FUZZ
    @given(text=st.text(max_size=200) | st.binary(max_size=200).map(lambda raw: raw.decode("latin-1")))
    def test_any_text_is_a_policy_or_a_policy_error(self, text: str) -> None:
        with contextlib.suppress(PolicyError):
            load_policy_text(text)

    @pytest.mark.parametrize("value", ["NaN", ".nan", "inf", ".inf", "-1", "0", "-.inf"])
    def test_a_request_that_is_not_a_positive_finite_quantity_is_a_policy_error(self, value: str) -> None:
        text = f"policies:\n  default:\n    resources:\n      cpu: {{request: {value}}}\n"
        with pytest.raises(PolicyError, match=r"policies\.default\.resources\.cpu\.request"):
            load_policy_text(text)

    @pytest.mark.parametrize("text", ["a: 2001-02-30\n", "[" * 5000, "a: !!python/object:os.system x\n"])
    def test_unreadable_yaml_is_a_policy_error(self, text: str) -> None:
        with pytest.raises(PolicyError):
            load_policy_text(text)
