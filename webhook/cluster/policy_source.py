"""The policy ConfigMap: its `policy.yaml` key overrides the base policy; a broken edit never takes effect.

Why keep the last valid policy: a typo in a ConfigMap must not change how Pods are admitted. The error is
logged, counted and shown in /readyz details, while readiness stays true because the old policy still
serves. Deleting the ConfigMap returns to the base policy (the policy file, else the bundled one).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webhook.cluster import metrics
from webhook.config.policies import load_policy_text
from webhook.core.policy.policies import PolicySet
from webhook.core.policy.reader import PolicyError

__all__ = ["POLICY_KEY", "PolicyOutcome", "PolicySource"]

log = logging.getLogger(__name__)

POLICY_KEY = "policy.yaml"


@dataclass(frozen=True, slots=True)
class PolicyOutcome:
    policies: PolicySet
    origin: str  # e.g. "ConfigMap pod-tailor/pod-tailor-policy@1234" or "base policy"
    error: str | None = None  # set while an invalid version is being ignored


class PolicySource:
    """Turns the watched ConfigMap (zero or one object) into the policy in force."""

    def __init__(self, base: PolicySet, *, namespace: str, name: str) -> None:
        self._base = base
        self._where = f"{namespace}/{name}"
        self._seen: str | None = None  # resourceVersion last evaluated, so each version is judged once
        self.current = PolicyOutcome(base, "base policy")
        metrics.POLICY_CONFIGMAP_VALID.set(1)

    def update(self, configmaps: Sequence[dict[str, Any]]) -> PolicyOutcome:
        if not configmaps:
            if self._seen is not None:
                log.info("policy ConfigMap %s removed: back to the base policy", self._where)
            self._seen = None
            self.current = PolicyOutcome(self._base, "base policy")
            metrics.POLICY_CONFIGMAP_VALID.set(1)
            return self.current
        configmap = configmaps[0]
        version = str((configmap.get("metadata") or {}).get("resourceVersion", ""))
        if version == self._seen:
            # Judged already; the gauge is set again so it always tells the truth about this version.
            metrics.POLICY_CONFIGMAP_VALID.set(0 if self.current.error else 1)
            return self.current
        origin = f"ConfigMap {self._where}@{version}"
        data = configmap.get("data")
        text = data.get(POLICY_KEY) if isinstance(data, dict) else None
        try:
            if not isinstance(text, str):
                raise PolicyError(f"no key {POLICY_KEY!r} in data")
            policies = load_policy_text(text)
        except Exception as exc:  # a PolicyError, or any fault of the parser: never half-applied
            message = str(exc) if isinstance(exc, PolicyError) else f"{type(exc).__name__}: {str(exc)[:200]}"
            metrics.POLICY_CONFIGMAP_VALID.set(0)
            metrics.POLICY_CONFIGMAP_ERRORS.inc()
            error = f"{origin} invalid ({message}); still using {self.current.origin}"
            log.error("%s", error)
            self._seen = version
            self.current = PolicyOutcome(self.current.policies, self.current.origin, error)
            return self.current
        self._seen = version
        metrics.POLICY_CONFIGMAP_VALID.set(1)
        log.info("policy from %s (%d policies)", origin, len(policies.policies))
        self.current = PolicyOutcome(policies, origin)
        return self.current
