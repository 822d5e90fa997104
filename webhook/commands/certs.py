"""`pod-tailor certs`: a CA and serving certificate for the in-cluster Service, as manifests.

For clusters without cert-manager (the `self-signed` overlay). The API server reaches the webhook as
`<service>.<namespace>.svc` and checks the certificate against the webhook configuration's caBundle, so
this writes the Secret the Deployment mounts and a kustomize patch that puts the CA into caBundle.
Rotation is re-running the command and re-applying; the webhook reloads the mounted files by itself.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from webhook.commands.failures import InputError
from webhook.commands.parser import exits, take
from webhook.server.certs import service_dns_names
from webhook.server.selfsigned import write_certificates

__all__ = ["register"]


def _configure(args: argparse.Namespace) -> Path:
    """The output directory: where it exists, it must be a directory this user may write."""
    out = Path(args.out)
    existing = next((path for path in (out, *out.parents) if path.exists()), Path("."))
    if not existing.is_dir() or not os.access(existing, os.W_OK):
        raise InputError(f"--out {out}: {existing} is not a directory this user may write")
    return out


def _how_to_apply(out: Path) -> str:
    """The overlay that reads `out` (the self-signed one, or any whose kustomization names the files
    there), else what to put in one."""
    overlay = out.parent
    kustomization = overlay / "kustomization.yaml"
    if kustomization.is_file() and f"{out.name}/tls-secret.yaml" in kustomization.read_text(encoding="utf-8"):
        shown = os.path.relpath(overlay) if not os.path.relpath(overlay).startswith("..") else str(overlay)
        return f"apply with: kubectl apply -k {shown}"
    return (
        f"apply with an overlay of your own: {out}/tls-secret.yaml in its resources and {out}/cabundle.yaml "
        "in its patches, as manifests/overlays/self-signed has them; then kubectl apply -k YOUR_OVERLAY"
    )


def _main(args: argparse.Namespace, out: Path) -> int:
    try:
        written = write_certificates(
            out,
            service=args.service,
            namespace=args.pod_tailor_namespace,
            secret=args.secret,
            webhook_configuration=args.webhook_configuration,
            webhooks=tuple(args.webhook),
            days=args.days,
        )
    except OSError as exc:
        raise InputError(f"--out {out}: {exc.strerror}") from None
    names = ", ".join(service_dns_names(args.service, args.pod_tailor_namespace)[2:])
    print(f"pod-tailor certs: serving certificate for {names}, valid {args.days} days")
    for label, path in written.items():
        print(f"  {label:<14} {path}")
    print(_how_to_apply(out))
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "certs",
        help="create a CA and serving certificate, a Secret manifest and the caBundle patch",
        description=__doc__,
    )
    take(parser, "days", "out", "pod_tailor_namespace", "service", "secret", "webhook_configuration",
         "webhook")
    exits(parser, {})
    parser.set_defaults(func=_main, configure=_configure)
