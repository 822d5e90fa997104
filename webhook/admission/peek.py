"""A Pod CREATE's uid, namespace, dryRun and decision inputs, decoded without the rest of the review.

Most admissions are replicas whose verdict is already cached (`VerdictCache`), and answering one
needs only these few values. msgspec decodes the body against TypedDicts of just them (the decision
inputs' types come from `webhook.core.model.inputs`): everything else (env, volumes, userInfo, managed
fields...) is checked as JSON and skipped without becoming Python objects, which costs a third of
a full `orjson.loads` of a typical review. The cache is keyed on what this decodes.

Anything but the usual shape of a v1 Pod CREATE (another kind or operation, a field of an odd type,
a body that is not JSON) gives None, and the request takes the full path (`parse_review`), which
explains what is wrong. So a body this accepts is one `parse_review` accepts as a Pod CREATE with
the same uid, namespace and dryRun, and `inputs` equals `decision_inputs` of its object (a test
holds both to that over the corpus and mutated reviews). One difference is left: a number beyond
the range of a float (`1e400`, or an integer of over 309 digits) in a field pod-tailor does not
read is skipped here and refused by `orjson`. The API server cannot send one: it decodes the object
itself before admission.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, TypedDict, cast

import msgspec
import orjson

from webhook.admission.review import API_VERSION, KIND, is_v1_pod
from webhook.core.model.inputs import (
    BASE_LABEL_KEYS,
    MetadataInputs,
    SpecInputs,
    metadata_inputs,
    template_free,
)
from webhook.core.model.workload import CLAIM_TEMPLATES, TEMPLATE_HASH_LABEL, claim_templates
from webhook.core.snapshot import ClusterSnapshot

__all__ = ["Peek", "peek_review", "peek_uid"]


class Peek(NamedTuple):
    uid: str
    namespace: str
    dry_run: bool
    inputs: dict[str, Any]  # equal to `decision_inputs(request.object, label_keys=...)`
    key: bytes  # what the verdict cache is keyed on: `inputs` as JSON (see `_key`)


class _Claim(TypedDict, total=False):
    claimName: Any


class _Volume(TypedDict, total=False):
    name: Any
    persistentVolumeClaim: _Claim


class _Spec(SpecInputs, total=False):
    volumes: list[_Volume]  # only to find a StatefulSet's claims (`claim_templates`); not an input


# A StatefulSet's claim templates are an input derived from the Pod's name and volumes; their key
# (`CLAIM_TEMPLATES`) is decoded too, so that an object carrying it is read as `decision_inputs` reads it.
_Pod = TypedDict(
    "_Pod",
    {"apiVersion": Any, "kind": Any, "metadata": MetadataInputs, "spec": _Spec,
     "pod-tailor.io/volumeClaimTemplates": Any},
    total=False,
)  # fmt: skip


class _Kind(TypedDict, total=False):
    group: Any
    kind: Any


class _Request(TypedDict, total=False):
    uid: Any
    kind: _Kind
    operation: Any
    subResource: Any
    namespace: Any
    name: Any
    dryRun: Any
    object: _Pod


class _Review(TypedDict, total=False):
    apiVersion: Any
    kind: Any
    request: _Request


_decode = msgspec.json.Decoder(_Review).decode


class _UidRequest(TypedDict, total=False):
    uid: Any


class _UidReview(TypedDict, total=False):
    request: _UidRequest


_decode_uid = msgspec.json.Decoder(_UidReview).decode
# How the API server writes a review (Go's field order: TypeMeta, then request.uid first): the uid
# is in the first few hundred bytes, so a shed answer need not wait for the rest of the body.
_UID_AT_START = re.compile(rb'^\{"kind":"AdmissionReview","apiVersion":"admission\.k8s\.io/v1",'
                           rb'"request":\{"uid":"([0-9A-Za-z._-]{1,128})"')


def peek_uid(body: bytes, *, prefix_only: bool = False) -> str | None:
    """`request.uid` of a review, decoding nothing else (for answers that skip the decision).

    With `prefix_only`, `body` may be just the start of a review as the API server writes it.
    """
    found = _UID_AT_START.match(body)
    if found is not None:
        return found[1].decode()
    if prefix_only:
        return None
    try:
        uid = _decode_uid(body).get("request", {}).get("uid")
    except Exception:  # not JSON or odd types: the caller takes the full path, which says what is wrong
        return None
    return uid if type(uid) is str and uid else None


_TEMPLATE_FREE = b"~"  # starts the key of a template-free view; a plain one starts with `{`


def _key(inputs: dict[str, Any], namespace: str, cluster: ClusterSnapshot | None) -> bytes:
    """`inputs` as JSON; a Deployment's Pod as its template-free view (`template_free`), marked.

    The mark keeps a view apart from a Pod whose inputs happen to look like it (a ReplicaSet named
    like the Deployment, without a hash label), which names another workload.
    """
    if cluster is None or not cluster.selects_on(namespace, TEMPLATE_HASH_LABEL):
        view = template_free(inputs)
        if view is not None:
            return _TEMPLATE_FREE + orjson.dumps(view)
    return orjson.dumps(inputs)


def peek_review(body: bytes, *, cluster: ClusterSnapshot | None = None) -> Peek | None:
    """The values a cached verdict needs, or None when the body is anything but a plain v1 Pod CREATE.

    `cluster`: what says which labels are read in the Pod's namespace (none but the base ones
    without it).
    """
    try:
        if not body.isascii():
            body.decode()  # msgspec skips what it does not decode without checking its UTF-8
        review = _decode(body)
    except Exception:  # not JSON, odd types, invalid UTF-8 (UnicodeDecodeError), too deep: the full path says
        return None
    request = review.get("request")
    if request is None or review.get("kind") != KIND or review.get("apiVersion") != API_VERSION:
        return None
    kind, pod = request.get("kind"), request.get("object")
    uid, namespace, name = request.get("uid"), request.get("namespace"), request.get("name")
    dry_run = request.get("dryRun")
    # The rules of `parse_review` and `Review.is_pod_create` for the one shape taken here.
    if (
        kind is None
        or kind.get("kind") != "Pod"
        or kind.get("group", "") != ""
        or request.get("operation") != "CREATE"
        or request.get("subResource") not in (None, "")
        or type(uid) is not str
        or not uid
        or type(namespace) is not str
        or not namespace
        or not (name is None or type(name) is str)
        or not (dry_run is None or type(dry_run) is bool)
        or pod is None
        or not is_v1_pod(pod)
        or "spec" not in pod  # `decision_inputs` passes such a Pod through whole
    ):
        return None
    label_keys = BASE_LABEL_KEYS if cluster is None else cluster.label_keys_read(namespace)
    inputs: dict[str, Any] = (
        {"metadata": metadata_inputs(pod["metadata"], label_keys)} if "metadata" in pod else {}
    )
    spec = pod["spec"]
    volumes = spec.pop("volumes", None)  # not an input: what it says is in `claims`
    inputs["spec"] = spec
    derived: dict[str, Any] = {"metadata": pod.get("metadata"), "spec": {"volumes": volumes}}
    if CLAIM_TEMPLATES in pod:
        derived[CLAIM_TEMPLATES] = cast(dict[str, Any], pod)[CLAIM_TEMPLATES]
    claims = claim_templates(derived)
    if claims:
        inputs[CLAIM_TEMPLATES] = list(claims)
    try:
        # msgspec reads integers beyond 64 bits exactly, orjson as floats: only the range both agree on.
        key = _key(inputs, namespace, cluster)
    except orjson.JSONEncodeError:
        return None
    return Peek(uid, namespace, bool(dry_run), inputs, key)
