"""Profiles in Kubernetes: one ConfigMap per profiled namespace, all in pod-tailor's own namespace.

Why ConfigMaps and not a CRD: nothing to install cluster-wide (a CRD needs cluster-admin and a
schema to version), RBAC stays inside one namespace (get/list/create/update/delete configmaps in
`pod-tailor`), `kubectl get cm -l pod-tailor.io/profiles` shows them, and every webhook replica reads
the same few objects with one list call. One object per namespace keeps each far below the 1 MiB
object limit; a namespace whose document is larger is stored gzip-compressed in `binaryData`.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Iterable
from typing import Any

import orjson
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from webhook.profiles.store import (
    ProfileDocument,
    StoreError,
    decode_document,
    encode_document,
    merge_documents,
)

__all__ = ["LABEL", "KubeStore", "configmap_name", "decode_configmap"]

LABEL = "pod-tailor.io/profiles"
_KEY = "profiles.json"
_PLAIN_LIMIT = 900 * 1024  # leave room for metadata under the API server's 1 MiB object limit


def configmap_name(namespace: str) -> str:
    """`profiles-<namespace>`; namespace names are DNS labels, so the result is a valid object name."""
    return f"profiles-{namespace}"


def _encode(document: ProfileDocument) -> dict[str, Any]:
    payload = json.dumps(encode_document(document), separators=(",", ":"), sort_keys=False)
    if len(payload) <= _PLAIN_LIMIT:
        return {"data": {_KEY: payload}}
    packed = base64.b64encode(gzip.compress(payload.encode(), compresslevel=6)).decode()
    if len(packed) > _PLAIN_LIMIT:
        raise StoreError(f"profiles for one namespace exceed 1 MiB even compressed ({len(packed)} bytes)")
    return {"binaryData": {_KEY + ".gz": packed}}


MAX_DOCUMENT = 64 * 1024 * 1024  # a namespace's profiles unpacked; a larger one is a gzip bomb


def _gunzip(packed: str) -> bytes:
    """base64 then gzip, refusing more than MAX_DOCUMENT bytes of output (never inflating a bomb whole)."""
    raw = base64.b64decode(packed, validate=True)
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing
    out = inflate.decompress(raw, MAX_DOCUMENT + 1)
    if len(out) > MAX_DOCUMENT:
        raise ValueError(f"more than {MAX_DOCUMENT} bytes unpacked")
    if not inflate.eof:
        raise ValueError("truncated gzip data")
    return out


def decode_configmap(where: str, data: Any, binary: Any) -> ProfileDocument:
    """One ConfigMap's document from its `data` or gzip+base64 `binaryData`; only StoreError comes out."""
    try:
        if isinstance(data, dict) and isinstance(data.get(_KEY), str):
            text: str | bytes = data[_KEY]
        elif isinstance(binary, dict) and isinstance(binary.get(_KEY + ".gz"), str):
            text = _gunzip(binary[_KEY + ".gz"])
        else:
            raise StoreError(f"{where}: no {_KEY}")
        document = orjson.loads(text)
    except StoreError:
        raise
    except (ValueError, zlib.error, EOFError) as exc:  # base64, gzip, UTF-8 and JSON errors are ValueErrors
        raise StoreError(f"{where}: unreadable {_KEY}: {type(exc).__name__}: {str(exc)[:200]}") from None
    return decode_document(document, where=where)


def _decode(item: Any) -> ProfileDocument:
    where = f"ConfigMap {item.metadata.namespace}/{item.metadata.name}"
    return decode_configmap(where, item.data, item.binary_data)


class KubeStore:
    """`ProfileStore` over ConfigMaps labelled `pod-tailor.io/profiles=true` in `namespace`."""

    def __init__(self, api_client: Any, *, namespace: str) -> None:
        self.api = client.CoreV1Api(api_client)
        self.namespace = namespace

    def describe(self) -> str:
        return f"configmaps -l {LABEL} in namespace {self.namespace}"

    def _list(self) -> list[Any]:
        try:
            answer = self.api.list_namespaced_config_map(self.namespace, label_selector=f"{LABEL}=true")
        except ApiException as exc:
            raise StoreError(f"{self.describe()}: HTTP {exc.status} {exc.reason}") from None
        except Exception as exc:  # urllib3 connection errors and friends
            raise StoreError(f"{self.describe()}: {type(exc).__name__}: {exc}") from None
        return list(answer.items)

    def fingerprint(self) -> tuple[str, ...]:
        """resourceVersions of the ConfigMaps: unchanged means no need to decode again."""
        return tuple(sorted(f"{i.metadata.name}@{i.metadata.resource_version}" for i in self._list()))

    def read(self) -> ProfileDocument:
        return merge_documents((_decode(item) for item in self._list()), source=self.describe())

    def write(self, document: ProfileDocument, *, scope: Iterable[str] | None = None) -> None:
        """Create or replace one ConfigMap per namespace; with `scope=None` delete namespaces now absent."""
        existing = {item.metadata.name: item for item in self._list()}
        wanted = document.namespaces()
        try:
            for ns in sorted(wanted):
                name = configmap_name(ns)
                body: Any = {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": self.namespace,
                        "labels": {LABEL: "true", "pod-tailor.io/profiled-namespace": ns},
                    },
                    **_encode(document.only(ns)),
                }
                if name in existing:
                    body["metadata"]["resourceVersion"] = existing[name].metadata.resource_version
                    self.api.replace_namespaced_config_map(name, self.namespace, body)
                else:
                    self.api.create_namespaced_config_map(self.namespace, body)
            covered = set(scope) if scope is not None else None
            for name, item in existing.items():
                ns = (item.metadata.labels or {}).get("pod-tailor.io/profiled-namespace", "")
                if ns not in wanted and (covered is None or ns in covered):
                    self.api.delete_namespaced_config_map(name, self.namespace)
        except ApiException as exc:
            raise StoreError(f"{self.describe()}: HTTP {exc.status} {exc.reason}: {exc.body}") from None
        except Exception as exc:
            raise StoreError(f"{self.describe()}: {type(exc).__name__}: {exc}") from None
