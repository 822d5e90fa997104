"""Where the Kubernetes API is: an explicit kubeconfig, the in-cluster service account, the user's kubeconfig.

Finding none is a normal outcome (a laptop, CI, `pod-tailor serve` for a demo): the caller then runs on
embedded defaults. A configuration that exists but cannot be loaded is reported, not raised, for the same
reason: the webhook must never fail to start for lack of a cluster.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.config.incluster_config import InClusterConfigLoader

__all__ = ["SERVICE_ACCOUNT_DIR", "ClusterConfig", "Discovery", "discover"]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    api_client: Any  # kubernetes.client.ApiClient (untyped library)
    source: str  # for logs and /readyz: "in-cluster service account", "kubeconfig /path"
    host: str


@dataclass(frozen=True, slots=True)
class Discovery:
    config: ClusterConfig | None
    reason: str  # why this configuration (or none) was chosen


def _from_kubeconfig(path: str, *, context: str | None = None) -> ClusterConfig:
    configuration = client.Configuration()
    config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=path, context=context, client_configuration=configuration
    )
    return ClusterConfig(client.ApiClient(configuration), f"kubeconfig {path}", configuration.host)


def _in_cluster(service_account_dir: Path, environment: Mapping[str, str]) -> ClusterConfig:
    configuration = client.Configuration()
    loader = InClusterConfigLoader(
        token_filename=str(service_account_dir / "token"),
        cert_filename=str(service_account_dir / "ca.crt"),
        environ=environment,
    )  # type: ignore[no-untyped-call]
    loader.load_and_set(configuration)  # type: ignore[no-untyped-call]
    return ClusterConfig(client.ApiClient(configuration), "in-cluster service account", configuration.host)


def discover(
    *,
    kubeconfig: str | None = None,
    env: Mapping[str, str] | None = None,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> Discovery:
    """The first usable configuration: explicit `kubeconfig`, in-cluster, $KUBECONFIG or ~/.kube/config."""
    environment = os.environ if env is None else env
    if kubeconfig:
        try:
            return Discovery(_from_kubeconfig(kubeconfig), "explicit kubeconfig")
        except Exception as exc:  # the kubernetes loader raises many types; none may stop start-up
            return Discovery(None, f"kubeconfig {kubeconfig} unusable: {_one_line(exc)}")
    token = service_account_dir / "token"
    if environment.get("KUBERNETES_SERVICE_HOST") and token.is_file():
        try:
            return Discovery(
                _in_cluster(service_account_dir, environment),
                "KUBERNETES_SERVICE_HOST and a service account token",
            )
        except Exception as exc:
            return Discovery(None, f"in-cluster configuration unusable: {_one_line(exc)}")
    candidates = environment.get("KUBECONFIG") or str(Path(environment.get("HOME", "~")) / ".kube" / "config")
    existing = [p for p in candidates.split(os.pathsep) if p and Path(p).expanduser().is_file()]
    if existing:
        path = os.pathsep.join(str(Path(p).expanduser()) for p in existing)
        try:
            return Discovery(_from_kubeconfig(path), "kubeconfig found")
        except Exception as exc:
            return Discovery(None, f"kubeconfig {path} unusable: {_one_line(exc)}")
    return Discovery(None, "no in-cluster service account and no kubeconfig")


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
