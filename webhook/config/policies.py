"""Policy files: the bundled one shipped in the package (webhook/data/policy.yaml) and users' own."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from webhook.config.yamltext import DocumentError, ReadError, decode, parse_yaml, position
from webhook.core.policy.policies import PolicySet, parse_policies
from webhook.core.policy.reader import PolicyError

__all__ = ["bundled_policies", "bundled_policy_document", "load_policy_file", "load_policy_text"]


@cache
def bundled_policy_document() -> dict[str, Any]:
    text = resources.files("webhook").joinpath("data/policy.yaml").read_text(encoding="utf-8")
    document: dict[str, Any] = yaml.safe_load(text)
    return document


@cache
def bundled_policies() -> PolicySet:
    return parse_policies(bundled_policy_document(), base=bundled_policy_document()["policies"]["default"])


def load_policy_text(text: str, *, origin: str = "policy file") -> PolicySet:
    """Parse a user policy's text (YAML or JSON) over the bundled default. An error is one line that
    starts with `origin` (a file's path) and the line and column of what is wrong."""
    try:
        document = parse_yaml(text, origin=origin)
    except DocumentError as exc:
        raise PolicyError(str(exc)) from None
    try:
        return parse_policies(document, base=bundled_policy_document()["policies"]["default"])
    except RecursionError:  # a document nested past Python's stack
        raise PolicyError(f"{origin}: nested too deeply") from None
    except PolicyError as exc:
        raise PolicyError(_placed(str(exc), text, origin=origin)) from None


def _placed(message: str, text: str, *, origin: str) -> str:
    """`policies.x.drainSeconds: must be ...` -> `policy.yaml:7:19: policies.x.drainSeconds: must be ...`."""
    field, sep, rest = message.partition(": ")
    if field == "policy file":  # the document itself
        return f"{origin}: {rest}"
    found = position(text, field.split(".")) if sep else None
    return f"{origin}:{found[0]}:{found[1]}: {message}" if found else f"{origin}: {message}"


def load_policy_file(path: str) -> PolicySet:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise PolicyError(f"policy file {path}: {exc.strerror}") from None
    try:
        text = decode(data, origin=path)
    except ReadError as exc:
        raise PolicyError(str(exc)) from None
    return load_policy_text(text, origin=path)
