"""The rules tests share one real HTTPS server per module (tests/server/conftest.py)."""

from tests.server.conftest import server

__all__ = ["server"]
