"""`pod-tailor certs`: a CA and serving certificate for the in-cluster Service, as manifests.

For clusters without cert-manager (the `self-signed` overlay). The API server reaches the webhook as
`<service>.<namespace>.svc` and checks the certificate against the webhook configuration's caBundle, so
this writes the Secret the Deployment mounts and a kustomize patch that puts the CA into caBundle.
Rotation is re-running the command and re-applying; the webhook reloads the mounted files by itself.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from webhook.commands.parser import old_name, typed
from webhook.config import values
from webhook.server.certs import service_dns_names
from webhook.server.selfsigned import write_certificates

__all__ = ["register"]


def _main(args: argparse.Namespace) -> int:
    written = write_certificates(
        args.out,
        service=args.service,
        namespace=args.pod_tailor_namespace,
        secret=args.secret,
        webhook_configuration=args.webhook_configuration,
        webhooks=tuple(args.webhook or ("pods.pod-tailor.io",)),
        days=args.days,
    )
    names = ", ".join(service_dns_names(args.service, args.pod_tailor_namespace)[2:])
    print(f"pod-tailor certs: serving certificate for {names}, valid {args.days} days")
    for label, path in written.items():
        print(f"  {label:<14} {path}")
    print("apply with: kubectl apply -k manifests/overlays/self-signed")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "certs",
        help="create a CA and serving certificate, a Secret manifest and the caBundle patch",
        description=__doc__,
    )
    parser.add_argument(
        "--out", type=Path, default=Path("manifests/overlays/self-signed/generated"), help="output directory"
    )
    parser.add_argument("--service", default="pod-tailor", help="webhook Service name [pod-tailor]")
    parser.add_argument(
        "--pod-tailor-namespace", default="pod-tailor", metavar="NAMESPACE",
        help="pod-tailor's namespace [pod-tailor]",
    )
    old_name(parser, "--namespace", new="--pod-tailor-namespace", dest="pod_tailor_namespace")
    parser.add_argument("--secret", default="pod-tailor-tls", help="Secret name [pod-tailor-tls]")
    parser.add_argument(
        "--webhook-configuration", default="pod-tailor", help="MutatingWebhookConfiguration name [pod-tailor]"
    )
    parser.add_argument(
        "--webhook", action="append", help="webhook entry name to fill (repeatable) [pods.pod-tailor.io]"
    )
    parser.add_argument(
        "--days", type=typed(values.positive_count), default=365, help="serving certificate lifetime [365]"
    )
    parser.set_defaults(func=_main)
