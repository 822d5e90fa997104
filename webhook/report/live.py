"""The live cluster for a report: the cluster facts the webhook watches, and every workload in scope.

The facts are the webhook's own: every collection of `webhook.cluster.resources.watch_specs()` listed
once and turned into a `ClusterSnapshot` by `build_snapshot`, so whatever another feature adds there
(autoscalers, the traffic path) reaches the report's decisions too. Workloads are listed per kind
(one cluster-wide list each, or one per namespace with -n). A kind the cluster refuses to list (RBAC)
or does not serve is a problem named in the report, not the end of it.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from webhook.cluster.config import discover
from webhook.cluster.listing import list_all, one_line_error
from webhook.cluster.policy_source import PolicySource
from webhook.cluster.resources import NAMESPACES, watch_specs
from webhook.cluster.snapshot import build_snapshot
from webhook.config.policies import bundled_policies
from webhook.config.settings import Settings
from webhook.core.facts import parse_server_version
from webhook.core.model.namespace import MODE_LABEL, Mode, label_problems
from webhook.core.model.workload import pod_workload
from webhook.core.policy.policies import PolicySet
from webhook.core.resize.history import resized_in_place
from webhook.core.snapshot import ClusterSnapshot
from webhook.offline.sources import SourceError, pod_sources
from webhook.report.collect import Collected, collected
from webhook.report.progress import Progress

__all__ = ["KINDS", "ClusterError", "ClusterView", "WorkloadKind", "connect", "read_cluster"]

Obj = dict[str, Any]
# Never opted in: the webhook configuration's namespaceSelector leaves them out.
EXCLUDED = ("kube-system",)
# Pods of these controllers are reported through the controller's own object.
_LISTED_OWNERS = frozenset({"ReplicaSet", "Job", "StatefulSet", "DaemonSet"})


class ClusterError(RuntimeError):
    """No cluster to read (no configuration, unreachable): nothing can be shown."""


@dataclass(frozen=True, slots=True)
class WorkloadKind:
    plural: str
    group: str  # "" for the core group
    version: str
    kind: str
    api: str = ""  # client class, e.g. "AppsV1Api"; empty: a custom resource
    method: str = ""  # list method stem, e.g. "deployment" for list_namespaced_deployment
    optional: bool = False  # a custom resource that may not be installed (404: not served)

    @property
    def label(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def list_call(self, api_client: Any, namespace: str | None) -> Callable[..., Any]:
        if not self.api:
            custom = client.CustomObjectsApi(api_client)
            where = (self.group, self.version)
            if namespace is None:
                return functools.partial(custom.list_cluster_custom_object, *where, self.plural)
            return functools.partial(custom.list_namespaced_custom_object, *where, namespace, self.plural)
        typed = getattr(client, self.api)(api_client)
        if namespace is None:
            return getattr(typed, f"list_{self.method}_for_all_namespaces")  # type: ignore[no-any-return]
        return functools.partial(getattr(typed, f"list_namespaced_{self.method}"), namespace)


KINDS = (
    WorkloadKind("deployments", "apps", "v1", "Deployment", "AppsV1Api", "deployment"),
    WorkloadKind("statefulsets", "apps", "v1", "StatefulSet", "AppsV1Api", "stateful_set"),
    WorkloadKind("daemonsets", "apps", "v1", "DaemonSet", "AppsV1Api", "daemon_set"),
    WorkloadKind("replicasets", "apps", "v1", "ReplicaSet", "AppsV1Api", "replica_set"),
    WorkloadKind("jobs", "batch", "v1", "Job", "BatchV1Api", "job"),
    WorkloadKind("cronjobs", "batch", "v1", "CronJob", "BatchV1Api", "cron_job"),
    WorkloadKind("pods", "", "v1", "Pod", "CoreV1Api", "pod"),
    WorkloadKind("rollouts", "argoproj.io", "v1alpha1", "Rollout", optional=True),
)


@dataclass(frozen=True, slots=True)
class ClusterView:
    cluster: ClusterSnapshot
    workloads: list[Collected]
    problems: list[str]
    source: str
    scope: tuple[str, ...] | None  # the namespaces reported on; None: every namespace
    in_place: Mapping[str, str] = dataclasses.field(default_factory=dict)  # workload -> Pods resized in place


def connect(kubeconfig: str | None) -> tuple[Any, str]:
    """(ApiClient, host) of the first usable configuration; ClusterError says why there is none."""
    found = discover(kubeconfig=kubeconfig)
    if found.config is None:
        raise ClusterError(f"no cluster to read ({found.reason}): pass -f FILE, or --kubeconfig")
    return found.config.api_client, found.config.host


def _controller(obj: Obj) -> Obj | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return next((ref for ref in refs if isinstance(ref, dict) and ref.get("controller")), None)


def _finished(job: Obj) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or ()
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions)


def _wanted(kind: WorkloadKind, obj: Obj) -> bool:
    """Objects whose Pods no listed controller accounts for: ReplicaSets of no Deployment (or
    Rollout), Jobs of no CronJob and not finished, Pods of no controller, all of the rest."""
    owner = _controller(obj)
    if kind.kind == "ReplicaSet":
        return owner is None
    if kind.kind == "Job":
        return not _finished(obj) and (owner is None or owner.get("kind") != "CronJob")
    if kind.kind == "Pod":
        phase = (obj.get("status") or {}).get("phase")
        running = phase not in ("Succeeded", "Failed")
        return running and (owner is None or owner.get("kind") not in _LISTED_OWNERS)
    return True


def _pods_by_owner(pods: Iterable[Obj]) -> list[Collected]:
    """Bare Pods one by one; Pods of other controllers (a ReplicationController, an operator's
    custom resource) once per workload, the first Pod standing for the others."""
    groups: dict[Any, list[Obj]] = {}
    out: list[Collected] = []
    for pod in pods:
        namespace = str(pod["metadata"].get("namespace") or "default")
        if _controller(pod) is None:
            out += [collected(source, origin="cluster") for source in pod_sources([pod], namespace=namespace)]
        else:
            groups.setdefault(pod_workload(pod, namespace), []).append(pod)
    for key, members in groups.items():
        first = sorted(members, key=lambda p: str(p["metadata"].get("name")))[0]
        (source,) = pod_sources([first], namespace=key.namespace)
        out.append(
            dataclasses.replace(
                collected(source, origin="cluster"), kind=key.kind, name=key.name, replicas=len(members)
            )
        )
    return out


def _collect(kind: WorkloadKind, objects: Sequence[Obj], problems: list[str]) -> list[Collected]:
    for obj in objects:
        obj["apiVersion"] = f"{kind.group}/{kind.version}" if kind.group else kind.version
        obj["kind"] = kind.kind
    if kind.kind == "Pod":
        return _pods_by_owner(objects)
    out: list[Collected] = []
    for obj in objects:
        namespace = str(obj["metadata"].get("namespace") or "default")
        try:
            sources = pod_sources([obj], namespace=namespace)
        except SourceError as exc:
            problems.append(f"{kind.label} {namespace}/{obj['metadata'].get('name')}: {exc}")
            continue
        out += [collected(source, origin="cluster") for source in sources]
    return out


def _opted_in(cluster: ClusterSnapshot) -> tuple[str, ...]:
    modes = (Mode.ENFORCE.value, Mode.DRY_RUN.value)
    labelled = (cluster.namespaces or {}).items()
    return tuple(sorted(ns for ns, labels in labelled if labels.get(MODE_LABEL) in modes))


def _facts(
    api: Any,
    settings: Settings,
    *,
    policies: PolicySet | None,
    host: str,
    problems: list[str],
    progress: Progress,
) -> ClusterSnapshot:
    objects: dict[str, list[Obj]] = {}
    for spec in watch_specs(settings):
        progress.step(f"listing {spec.resource}")
        selector = spec.field_selector(settings) if spec.field_selector else None
        try:
            call = spec.list_call(api, settings)
            objects[spec.resource] = list_all(call, field_selector=selector) if selector else list_all(call)
        except ApiException as exc:
            if not spec.forbidden_ok:  # nodes, quotas: left out is "not known", not "none"
                objects[spec.resource] = []
            if not (spec.optional and exc.status == 404):
                problems.append(f"cannot list {spec.resource} ({one_line_error(exc)}): decided without them")
        except Exception as exc:  # connection refused, TLS, DNS: there is no cluster to report on
            raise ClusterError(f"cannot reach the API server at {host}: {one_line_error(exc)}") from None
    if policies is None:
        where = {"namespace": settings.namespace, "name": settings.policy_configmap}
        chosen = PolicySource(bundled_policies(), **where).update(objects.get("configmaps", []))
        policies, origin = chosen.policies, chosen.origin
        if chosen.error:
            problems.append(chosen.error)
    else:
        origin = "--policy-file"
    try:
        info = client.VersionApi(api).get_code(_request_timeout=(5, 10))
        version = parse_server_version(str(info.major), str(info.minor))
    except Exception as exc:
        problems.append(f"cannot read the server version ({one_line_error(exc)}): preStop decided as unknown")
        version = None
    snapshot = build_snapshot(
        policies=policies,
        settings=settings,
        objects=objects,
        server_version=version,
        taken_at=time.time(),
        source=f"cluster {host}; policy from {origin}",
    )
    if any(p.startswith(f"cannot list {NAMESPACES} ") for p in problems):
        snapshot = dataclasses.replace(snapshot, namespaces=None)  # unknown, not "none labelled"
    return snapshot


def _scope(
    cluster: ClusterSnapshot,
    *,
    namespaces: Sequence[str],
    all_namespaces: bool,
    own: str,
    problems: list[str],
) -> tuple[str, ...] | None:
    if namespaces:
        if cluster.namespaces is None:
            problems.append("namespace labels unknown: every namespace named with -n is evaluated as enforce")
        return tuple(namespaces)
    if all_namespaces:
        return None
    if cluster.namespaces is None:
        problems.append("cannot tell which namespaces are opted in: pass -n NAMESPACE or --all-namespaces")
        return ()
    for namespace, labels in sorted(cluster.namespaces.items()):
        problems.extend(
            f"namespace {namespace}: {problem}"
            for problem in label_problems(labels, policies=cluster.policies.policies)
        )
    found = tuple(ns for ns in _opted_in(cluster) if ns not in (*EXCLUDED, own))
    if not found:
        problems.append(f"no namespace is labelled {MODE_LABEL}=enforce or dry-run: try --all-namespaces")
    return found


def read_cluster(
    *,
    kubeconfig: str | None = None,
    api_client: Any = None,
    host: str = "",
    namespaces: Sequence[str] = (),
    all_namespaces: bool = False,
    own_namespace: str = "pod-tailor",
    policy_configmap: str = "pod-tailor-policy",
    policies: PolicySet | None = None,
    progress: Progress | None = None,
) -> ClusterView:
    """The cluster facts and the workloads in scope; raises ClusterError when the cluster cannot be read."""
    if api_client is None:
        api_client, host = connect(kubeconfig)
    progress = progress or Progress(enabled=False)
    settings = Settings(namespace=own_namespace, policy_configmap=policy_configmap, kubeconfig=kubeconfig)
    problems: list[str] = []
    cluster = _facts(api_client, settings, policies=policies, host=host, problems=problems, progress=progress)
    scope = _scope(
        cluster, namespaces=namespaces, all_namespaces=all_namespaces, own=own_namespace, problems=problems
    )
    workloads: list[Collected] = []
    in_place: dict[str, str] = {}
    for kind in KINDS if scope != () else ():
        progress.step(f"listing {kind.label}")
        objects = _list_kind(kind, api_client, scope=scope, per_namespace=bool(namespaces), problems=problems)
        if kind.kind == "Pod":  # every running Pod, for what in-place right-sizing did to them
            in_place = resized_in_place(o for o in objects if _in_scope(o, scope, own_namespace))
        keep = [o for o in objects if _in_scope(o, scope, own_namespace) and _wanted(kind, o)]
        workloads += _collect(kind, keep, problems)
    return ClusterView(cluster, workloads, problems, f"cluster {host}", scope, in_place)


def _in_scope(obj: Obj, scope: tuple[str, ...] | None, own: str) -> bool:
    namespace = obj["metadata"].get("namespace")
    return namespace not in (*EXCLUDED, own) if scope is None else namespace in scope


def _list_kind(
    kind: WorkloadKind, api: Any, *, scope: tuple[str, ...] | None, per_namespace: bool, problems: list[str]
) -> list[Obj]:
    """One cluster-wide list, or one per namespace named with -n (enough with namespaced rights)."""
    where: Sequence[str | None] = list(scope) if per_namespace and scope is not None else [None]
    found: list[Obj] = []
    for namespace in where:
        try:
            found += list_all(kind.list_call(api, namespace))
        except ApiException as exc:
            if kind.optional and exc.status == 404:
                return []  # not installed in this cluster: nothing to report
            at = "at the cluster scope" if namespace is None else f"in namespace {namespace}"
            hint = " (with namespaced rights only, name the namespaces: -n NS)" if namespace is None else ""
            error = one_line_error(exc)
            problems.append(f"cannot list {kind.label} {at} ({error}): left out of the report{hint}")
    return found
