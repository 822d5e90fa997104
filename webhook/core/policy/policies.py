"""Named policies: what to inject when history says nothing, and which injections are on.

A policy file maps names to partial policies; each is merged over the bundled `default` and then
validated, so an error names the exact field (`policies.batch.resources.cpu.limit: ...`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

from webhook.core.model.routes import PathKind
from webhook.core.policy.inplace import InPlacePolicy, in_place_policy
from webhook.core.policy.reader import PolicyError, Reader
from webhook.core.policy.sections import (
    AutoscalerPolicy,
    BoostPolicy,
    FitPolicy,
    QuotaPolicy,
    autoscaler_policy,
    boost_policy,
    fit_policy,
    quota_policy,
)
from webhook.core.policy.statistic import UsageStatistic, usage_statistic

__all__ = [
    "FEATURES",
    "MANAGED_RESOURCES",
    "ClassMatch",
    "LimitMode",
    "LimitRangerMode",
    "PathSleeps",
    "Policy",
    "PolicySet",
    "ProbeShape",
    "ResourcePolicy",
    "Scope",
    "VersionUnknown",
    "WorkloadClass",
    "merge",
    "parse_policies",
]

FEATURES = ("resources", "probes", "preStop", "gracePeriod")
MANAGED_RESOURCES = ("cpu", "memory", "ephemeral-storage")


class LimitMode(StrEnum):
    NONE = "none"
    RATIO = "ratio"
    EQUAL = "equal"


class LimitRangerMode(StrEnum):
    KEEP = "keep"  # values LimitRanger filled in count as set by a person
    REPLACE_WITH_PROFILE = "replace-with-profile"  # replaced only by a confident history profile
    REPLACE = "replace"  # replaced by profile or policy default


class VersionUnknown(StrEnum):
    NATIVE = "native"
    EXEC = "exec"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class ResourcePolicy:
    request: Decimal
    min: Decimal
    max: Decimal
    limit: LimitMode
    limit_ratio: Decimal
    # Limits derived from a request pod-tailor guessed (the policy's default, no usage history) only
    # when asked: a guessed memory request with a 2x limit is an OOM kill waiting to happen.
    limit_without_history: bool = False


@dataclass(frozen=True, slots=True)
class ProbeShape:
    enabled: bool
    initial_delay_seconds: int
    period_seconds: int
    timeout_seconds: int
    failure_threshold: int
    success_threshold: int = 1


@dataclass(frozen=True, slots=True)
class PathSleeps:
    """`preStop.sleepSecondsByPath`: the pause for each kind of traffic path
    (webhook.core.serving.traffic)."""

    in_cluster: int = 5
    ingress: int = 15
    load_balancer: int = 20

    def for_kind(self, kind: PathKind) -> int:
        return {
            PathKind.IN_CLUSTER: self.in_cluster, PathKind.INGRESS: self.ingress,
            PathKind.LOAD_BALANCER: self.load_balancer,
        }[kind]


class Scope(StrEnum):
    """Whether a workload class decides for the whole Pod or for each container it matches."""

    POD = "pod"
    CONTAINER = "container"


@dataclass(frozen=True, slots=True)
class ClassMatch:
    """All the given conditions must hold; within one list, any entry does."""

    kinds: frozenset[str] = frozenset()  # the workload's kind: Deployment, StatefulSet, DaemonSet, Job, ...
    images: frozenset[str] = frozenset()  # registry-independent names (`webhook.core.policy.classes`)
    container_names: frozenset[str] = frozenset()
    priority_class_names: frozenset[str] = frozenset()
    labels: tuple[tuple[str, str], ...] = ()  # the Pod's labels, all equal
    claim_templates: bool = False  # a StatefulSet's Pod with a claim per Pod (volumeClaimTemplates)


@dataclass(frozen=True, slots=True)
class WorkloadClass:
    name: str
    match: tuple[ClassMatch, ...]  # any one holds; () matches everything (`web`)
    scope: Scope = Scope.POD
    hands_off: bool = False  # left alone: the whole Pod, or the container
    needs_service: bool = False  # probes and preStop only when a Service selects the Pod
    minimum_requests: bool = False  # without history, the policy's minimum requests (pause)
    policy: Policy | None = None  # the policy with the class's `overrides`; None: unchanged
    reason: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    features: frozenset[str]
    resources: Mapping[str, ResourcePolicy]  # only the resources this policy manages
    limit_ranger: LimitRangerMode
    use_profiles: bool
    min_confidence: float
    startup_cpu_in_limit: bool
    http_path: str | None
    readiness: ProbeShape
    startup: ProbeShape
    liveness: ProbeShape
    pre_stop_seconds: int  # the pause when the Pod's traffic path is not known (or no Service selects it)
    when_version_unknown: VersionUnknown
    allow_exec: bool
    drain_seconds: int
    autoscalers: AutoscalerPolicy  # the HPA/VPA rule and the step limit (webhook.core.sizing.holds)
    sleeps_by_path: PathSleeps = PathSleeps()
    startup_boost: BoostPolicy = field(default_factory=BoostPolicy)  # webhook.core.boost.container
    in_place: InPlacePolicy = field(default_factory=InPlacePolicy)  # webhook.core.policy.inplace
    # profiles.cpu / profiles.memory: which statistic sizes the requests (webhook.core.policy.statistic)
    usage: UsageStatistic = field(default_factory=UsageStatistic)
    # `classes`, in the order they are tried (webhook.core.policy.classes)
    classes: tuple[WorkloadClass, ...] = ()
    fit: FitPolicy = field(default_factory=FitPolicy)  # webhook.core.fit.nodes
    quota: QuotaPolicy = field(default_factory=QuotaPolicy)  # webhook.core.fit.quota


@dataclass(frozen=True, slots=True)
class PolicySet:
    policies: Mapping[str, Policy]
    # Pod label keys some class matches on: decisions read them (`ClusterSnapshot.label_keys_read`)
    class_label_keys: frozenset[str] = frozenset()

    def get(self, name: str) -> Policy | None:
        return self.policies.get(name)


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge of plain mappings; `override` wins, nested mappings merge key by key."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def _resource(reader: Reader) -> ResourcePolicy:
    reader.only("request", "min", "max", "limit", "limitRatio", "limitWithoutHistory")
    policy = ResourcePolicy(
        request=reader.quantity("request"),
        min=reader.quantity("min"),
        max=reader.quantity("max"),
        limit=reader.choice("limit", LimitMode),
        limit_ratio=reader.number("limitRatio", low=1, high=1000),
        limit_without_history=reader.boolean("limitWithoutHistory", default=False),
    )
    if not policy.min <= policy.request <= policy.max:
        raise PolicyError(f"{reader.path}: need min <= request <= max")
    return policy


def _probe(reader: Reader, *, readiness: bool) -> ProbeShape:
    shape = ("enabled", "initialDelaySeconds", "periodSeconds", "timeoutSeconds", "failureThreshold")
    reader.only(*shape, *(("successThreshold",) if readiness else ()))
    return ProbeShape(
        enabled=reader.boolean("enabled"),
        initial_delay_seconds=reader.integer("initialDelaySeconds", high=3600),
        period_seconds=reader.integer("periodSeconds", low=1, high=3600),
        timeout_seconds=reader.integer("timeoutSeconds", low=1, high=3600),
        failure_threshold=reader.integer("failureThreshold", low=1, high=10_000),
        # Liveness and startup probes must keep successThreshold 1 (API validation).
        success_threshold=reader.integer("successThreshold", low=1, high=100) if readiness else 1,
    )


def _names(reader: Reader, key: str) -> frozenset[str]:
    value = reader.data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise PolicyError(f"{reader.path}.{key}: must be a list of non-empty strings, got {value!r}")
    return frozenset(value)


def _match(reader: Reader) -> ClassMatch:
    reader.only("kinds", "images", "containerNames", "priorityClassNames", "labels", "volumeClaimTemplates")
    labels = reader.data.get("labels") or {}
    if not isinstance(labels, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise PolicyError(f"{reader.path}.labels: must be a map of strings, got {labels!r}")
    return ClassMatch(
        kinds=_names(reader, "kinds"),
        images=frozenset(image.lower() for image in _names(reader, "images")),
        container_names=_names(reader, "containerNames"),
        priority_class_names=_names(reader, "priorityClassNames"),
        labels=tuple(sorted(labels.items())),
        claim_templates=reader.boolean("volumeClaimTemplates", default=False),
    )


def _matches(reader: Reader, key: str) -> tuple[ClassMatch, ...]:
    """A class's `match`: one map, or a list of maps of which any one holds; absent, everything."""
    value = reader.data.get(key)
    if value is None:
        return ()
    if isinstance(value, list) and value:
        return tuple(_match(Reader(one, f"{reader.path}.{key}.{index}")) for index, one in enumerate(value))
    if isinstance(value, list):
        raise PolicyError(f"{reader.path}.{key}: must be a mapping or a non-empty list of them, got []")
    return (_match(reader.child(key)),)


def _classes(reader: Reader, *, first: frozenset[str]) -> tuple[WorkloadClass, ...]:
    """The policy's `classes`, the ones its own document names first; each `overrides` is a partial
    policy merged over this one (and validated as one); a class set to null is left out."""
    raw = reader.data.get("classes")
    if raw is None:
        return ()
    classes = Reader(raw, f"{reader.path}.classes")
    base = {key: value for key, value in reader.data.items() if key != "classes"}
    read: list[WorkloadClass] = []
    names = [n for n in classes.data if n in first] + [n for n in classes.data if n not in first]
    for name in names:
        if classes.data[name] is None:
            continue
        if not isinstance(name, str) or not name:
            raise PolicyError(f"{classes.path}: class names must be non-empty strings, got {name!r}")
        one = classes.child(name).only(
            "scope", "match", "overrides", "handsOff", "needsService", "minimumRequests"
        )
        scope = one.choice("scope", Scope) if "scope" in one.data else Scope.POD
        overrides = one.data.get("overrides")
        policy = None
        if overrides is not None:
            if scope is Scope.CONTAINER:
                raise PolicyError(f"{one.path}.overrides: a container class has handsOff or minimumRequests")
            partial = Reader(overrides, f"{one.path}.overrides")
            if "classes" in partial.data:
                raise PolicyError(f"{partial.path}.classes: classes do not nest")
            policy = _policy(reader.path.rsplit(".", 1)[-1], Reader(merge(base, partial.data), partial.path))
        read.append(WorkloadClass(
            name=name,
            match=_matches(one, "match"),
            scope=scope,
            hands_off=one.boolean("handsOff", default=False),
            needs_service=one.boolean("needsService", default=False),
            minimum_requests=one.boolean("minimumRequests", default=False),
            policy=policy,
        ))  # fmt: skip
    # A class that matches everything (`web`) comes last, wherever it was named.
    return tuple(sorted(read, key=lambda c: not c.match or ClassMatch() in c.match))


def _policy(name: str, reader: Reader, *, first: frozenset[str] = frozenset()) -> Policy:
    reader.only(
        "features", "resources", "limitRanger", "profiles", "probes", "preStop", "drainSeconds",
        "autoscalers", "startupBoost", "inPlace", "fit", "quota", "classes",
    )
    features = reader.child("features").only(*FEATURES)
    resources = reader.child("resources")
    unknown = set(resources.data) - set(MANAGED_RESOURCES)
    if unknown:
        raise PolicyError(f"{resources.path}: unknown resource {sorted(unknown)[0]!r}")
    profiles = reader.child("profiles").only("use", "minConfidence", "startupCpuInLimit", "cpu", "memory")
    probes = reader.child("probes").only("httpPath", "readiness", "startup", "liveness")
    pre_stop = reader.child("preStop").only(
        "sleepSeconds", "sleepSecondsByPath", "whenVersionUnknown", "allowExec"
    )
    by_path = pre_stop.child("sleepSecondsByPath").only("inCluster", "ingress", "loadBalancer")
    return Policy(
        name=name,
        features=frozenset(feature for feature in FEATURES if features.boolean(feature)),
        resources={
            resource: _resource(resources.child(resource))
            for resource in MANAGED_RESOURCES
            if resources.data.get(resource) is not None
        },
        limit_ranger=reader.choice("limitRanger", LimitRangerMode),
        use_profiles=profiles.boolean("use"),
        min_confidence=float(profiles.number("minConfidence", low=0, high=1)),
        startup_cpu_in_limit=profiles.boolean("startupCpuInLimit"),
        http_path=probes.optional_path("httpPath"),
        readiness=_probe(probes.child("readiness"), readiness=True),
        startup=_probe(probes.child("startup"), readiness=False),
        liveness=_probe(probes.child("liveness"), readiness=False),
        pre_stop_seconds=pre_stop.integer("sleepSeconds", low=1, high=3600),
        when_version_unknown=pre_stop.choice("whenVersionUnknown", VersionUnknown),
        allow_exec=pre_stop.boolean("allowExec"),
        drain_seconds=reader.integer("drainSeconds", high=86_400),
        autoscalers=autoscaler_policy(reader.child("autoscalers")),
        sleeps_by_path=PathSleeps(
            in_cluster=by_path.integer("inCluster", low=1, high=3600),
            ingress=by_path.integer("ingress", low=1, high=3600),
            load_balancer=by_path.integer("loadBalancer", low=1, high=3600),
        ),
        startup_boost=boost_policy(reader.child("startupBoost")),
        in_place=in_place_policy(reader.child("inPlace")),
        usage=usage_statistic(profiles),
        classes=_classes(reader, first=first),
        fit=fit_policy(reader.child("fit")),
        quota=quota_policy(reader.child("quota")),
    )


def parse_policies(document: object, *, base: Mapping[str, Any] | None = None) -> PolicySet:
    """Validate a policy document (`{"policies": {name: partial policy}}`).

    Each named policy is merged over `base` (the bundled default policy's mapping); the document's own
    `default`, if any, replaces the bundled one as the base for the others.
    """
    root = Reader(document, "policy file")
    named = root.child("policies")
    if not named.data:
        raise PolicyError("policies: at least one policy is required")
    base_map: Mapping[str, Any] = base or {}
    own_default = named.data.get("default")
    own_classes: frozenset[str] = frozenset()
    if own_default is not None:
        Reader(own_default, "policies.default")
        base_map = merge(base_map, own_default)
        own_classes = _own_classes(own_default)
    policies: dict[str, Policy] = {
        "default": _policy("default", Reader(base_map, "policies.default"), first=own_classes)
    }
    for name, raw in named.data.items():
        if not isinstance(name, str) or not name:
            raise PolicyError(f"policies: policy names must be non-empty strings, got {name!r}")
        if name == "default":
            continue
        partial = Reader(raw, f"policies.{name}")
        policies[name] = _policy(
            name, Reader(merge(base_map, partial.data), f"policies.{name}"),
            first=own_classes | _own_classes(partial.data),
        )
    keys = {
        key
        for policy in policies.values()
        for workload_class in policy.classes
        for match in workload_class.match
        for key, _ in match.labels
    }
    return PolicySet(policies, class_label_keys=frozenset(keys))


def _own_classes(partial: Mapping[str, Any]) -> frozenset[str]:
    """The classes a policy document names itself: tried before the bundled ones."""
    named = partial.get("classes")
    return frozenset(str(key) for key in named) if isinstance(named, Mapping) else frozenset()
