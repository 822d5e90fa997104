"""The HTTPS admission server: FastAPI app, TLS with rotation, metrics, logs and the `serve` command."""

from webhook.server.app import create_app

__all__ = ["create_app"]
