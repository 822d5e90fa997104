"""Policy files: the bundled one shipped in the package (webhook/data/policy.yaml) and users' own."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml

from webhook.core.policy import PolicyError, PolicySet, parse_policies

__all__ = ["bundled_policies", "bundled_policy_document", "load_policy_file", "load_policy_text"]


@cache
def bundled_policy_document() -> dict[str, Any]:
    text = resources.files("webhook").joinpath("data/policy.yaml").read_text(encoding="utf-8")
    document: dict[str, Any] = yaml.safe_load(text)
    return document


@cache
def bundled_policies() -> PolicySet:
    return parse_policies(bundled_policy_document(), base=bundled_policy_document()["policies"]["default"])


def load_policy_text(text: str) -> PolicySet:
    """Parse a user policy file's text (YAML or JSON) over the bundled default."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy file: not valid YAML: {exc}".splitlines()[0][:300]) from None
    except (ValueError, RecursionError) as exc:  # e.g. a timestamp with day 30 of February
        raise PolicyError(f"policy file: unreadable YAML: {type(exc).__name__}: {str(exc)[:200]}") from None
    try:
        return parse_policies(document, base=bundled_policy_document()["policies"]["default"])
    except RecursionError:  # a document nested past Python's stack
        raise PolicyError("policy file: nested too deeply") from None


def load_policy_file(path: str) -> PolicySet:
    try:
        with open(path, encoding="utf-8") as handle:
            return load_policy_text(handle.read())
    except OSError as exc:
        raise PolicyError(f"policy file {path}: {exc.strerror}") from None
