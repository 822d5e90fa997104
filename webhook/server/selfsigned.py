"""The self-signed overlay's files: a CA, a serving certificate for the in-cluster Service, and manifests.

For clusters without cert-manager. The API server reaches the webhook as `<service>.<namespace>.svc`
and checks the certificate against the webhook configuration's caBundle, so this writes the Secret
the Deployment mounts and a kustomize patch that puts the CA into caBundle.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from webhook.server.certs import make_ca, make_serving_cert, service_dns_names, write_pem

__all__ = ["SECRET_FILE", "WEBHOOK_PATCH_FILE", "write_certificates"]

SECRET_FILE = "tls-secret.yaml"
WEBHOOK_PATCH_FILE = "cabundle.yaml"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def write_certificates(
    out: Path,
    *,
    service: str = "pod-tailor",
    namespace: str = "pod-tailor",
    secret: str = "pod-tailor-tls",
    webhook_configuration: str = "pod-tailor",
    webhooks: tuple[str, ...] = ("pods.pod-tailor.io",),
    days: int = 365,
) -> dict[str, Path]:
    """Write ca.crt, tls.crt, tls.key, the Secret manifest and the caBundle patch into `out`."""
    ca = make_ca(f"pod-tailor CA ({namespace})", days=max(days * 2, 730))
    # Only names inside the cluster: the API server always calls `<service>.<namespace>.svc`.
    serving = make_serving_cert(
        ca, dns_names=service_dns_names(service, namespace), ip_addresses=(), days=days
    )
    secret_manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {
            "name": secret,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "pod-tailor"},
        },
        "data": {
            "tls.crt": _b64(serving.cert_pem),
            "tls.key": _b64(serving.key_pem),
            "ca.crt": _b64(ca.cert_pem),
        },
    }
    patch: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": webhook_configuration},
        "webhooks": [{"name": name, "clientConfig": {"caBundle": _b64(ca.cert_pem)}} for name in webhooks],
    }
    return {
        "ca.crt": write_pem(out / "ca.crt", ca.cert_pem),
        "tls.crt": write_pem(out / "tls.crt", serving.cert_pem),
        "tls.key": write_pem(out / "tls.key", serving.key_pem, private=True),
        SECRET_FILE: write_pem(out / SECRET_FILE, yaml.safe_dump(secret_manifest).encode(), private=True),
        WEBHOOK_PATCH_FILE: write_pem(
            out / WEBHOOK_PATCH_FILE, yaml.safe_dump(patch, sort_keys=False).encode()
        ),
    }
