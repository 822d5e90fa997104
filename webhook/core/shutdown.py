"""A clean shutdown: a preStop sleep so endpoints drain first, and a grace period that covers it.

Endpoint removal and SIGTERM start at the same moment; the pause keeps the container serving while
load balancers stop sending it traffic (the 502s on scale-in).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.core.decision import Injection
from webhook.core.facts import ClusterFacts
from webhook.core.patch import PatchBuilder
from webhook.core.pod import ContainerRef
from webhook.core.policy import Policy, VersionUnknown

__all__ = ["existing_sleep", "grace_period", "is_windows", "pre_stop"]


def is_windows(pod: Mapping[str, Any]) -> bool:
    spec = pod["spec"]
    os_name = (spec.get("os") or {}).get("name") if isinstance(spec.get("os"), Mapping) else None
    selector = spec.get("nodeSelector") or {}
    return os_name == "windows" or (
        isinstance(selector, Mapping) and selector.get("kubernetes.io/os") == "windows"
    )


def existing_sleep(container: Mapping[str, Any]) -> int | None:
    """Seconds of an existing preStop pause: native sleep, or an exec of `sleep N` we can read."""
    pre_stop = (container.get("lifecycle") or {}).get("preStop")
    if not isinstance(pre_stop, Mapping):
        return None
    sleep = pre_stop.get("sleep")
    if isinstance(sleep, Mapping) and isinstance(sleep.get("seconds"), int):
        return int(sleep["seconds"])
    command = (
        (pre_stop.get("exec") or {}).get("command") if isinstance(pre_stop.get("exec"), Mapping) else None
    )
    if isinstance(command, list) and command:
        words = " ".join(str(word) for word in command).split()
        for index, word in enumerate(words[:-1]):
            if word.endswith("sleep") and words[index + 1].isdigit():
                return int(words[index + 1])
    return None


def pre_stop(
    ref: ContainerRef, *, policy: Policy, facts: ClusterFacts, windows: bool, patch: PatchBuilder
) -> tuple[Injection | None, str | None]:
    """Add a preStop sleep to a serving container without a preStop hook; returns (injection, warning)."""
    lifecycle = ref.body.get("lifecycle") or {}
    if lifecycle.get("preStop") is not None:
        return None, None
    seconds = policy.pre_stop_seconds
    native = facts.supports_native_sleep()
    if native is None:
        if policy.when_version_unknown is VersionUnknown.SKIP:
            return None, None
        native = policy.when_version_unknown is VersionUnknown.NATIVE
        version = f"cluster version unknown, policy {policy.name} says {policy.when_version_unknown.value}"
    else:
        major, minor = facts.server_version or (0, 0)
        version = f"cluster {major}.{minor}"
    if native:
        hook: dict[str, Any] = {"sleep": {"seconds": seconds}}
        how = "native sleep"
    elif policy.allow_exec and not windows:
        hook = {"exec": {"command": ["/bin/sleep", str(seconds)]}}
        how = "exec /bin/sleep (no native sleep before 1.30)"
    else:
        reason = "Windows node" if windows else f"policy {policy.name} forbids exec"
        return None, f"{ref.name}: no preStop sleep: cluster lacks native sleep and {reason}"
    patch.set((*ref.path, "lifecycle", "preStop"), hook)
    return Injection(
        ref.name, "preStop", f"sleep {seconds}s", f"{how}, {version}; policy {policy.name}"
    ), None


def grace_period(
    pod: Mapping[str, Any], *, policy: Policy, longest_sleep: int, patch: PatchBuilder
) -> Injection | None:
    """Raise terminationGracePeriodSeconds to the longest preStop sleep plus the drain; never lower it."""
    needed = longest_sleep + policy.drain_seconds
    current = pod["spec"].get("terminationGracePeriodSeconds")
    current_value = current if isinstance(current, int) and not isinstance(current, bool) else 30
    if current_value >= needed:
        return None
    patch.set(("spec", "terminationGracePeriodSeconds"), needed)
    return Injection(
        "pod",
        "terminationGracePeriodSeconds",
        str(needed),
        f"was {current_value}; preStop {longest_sleep}s + drain {policy.drain_seconds}s"
        f" (policy {policy.name})",
    )
