"""A clean shutdown: a preStop sleep so endpoints drain first, and a grace period that covers it.

Endpoint removal and SIGTERM start at the same moment; the pause keeps the container serving while
load balancers stop sending it traffic (the 502s on scale-in).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.core.model.decision import POD_TARGET, Injection
from webhook.core.model.patch import PatchBuilder
from webhook.core.model.pod import ContainerRef
from webhook.core.policy.policies import Policy, VersionUnknown

__all__ = [
    "DEFAULT_GRACE",
    "NATIVE_SLEEP_SINCE",
    "existing_sleep",
    "grace_period",
    "grace_set_by_person",
    "is_windows",
    "pre_stop",
]

DEFAULT_GRACE = 30  # what API defaulting fills in; a person's 30 cannot be told apart from it
NATIVE_SLEEP_SINCE = (1, 30)  # `lifecycle.preStop.sleep` on by default


def grace_set_by_person(pod: Mapping[str, Any]) -> int | None:
    """The grace period when it can only have come from a person (any value but the default 30)."""
    current = pod["spec"].get("terminationGracePeriodSeconds")
    if isinstance(current, bool) or not isinstance(current, int) or current == DEFAULT_GRACE:
        return None
    return current


def is_windows(pod: Mapping[str, Any]) -> bool:
    spec = pod["spec"]
    os_name = (spec.get("os") or {}).get("name") if isinstance(spec.get("os"), dict) else None
    selector = spec.get("nodeSelector") or {}
    return os_name == "windows" or (
        isinstance(selector, dict) and selector.get("kubernetes.io/os") == "windows"
    )


def existing_sleep(container: Mapping[str, Any]) -> int | None:
    """Seconds of an existing preStop pause: native sleep, or an exec of `sleep N` we can read."""
    pre_stop = (container.get("lifecycle") or {}).get("preStop")
    if not isinstance(pre_stop, dict):
        return None
    sleep = pre_stop.get("sleep")
    if isinstance(sleep, dict) and isinstance(sleep.get("seconds"), int):
        return int(sleep["seconds"])
    command = (pre_stop.get("exec") or {}).get("command") if isinstance(pre_stop.get("exec"), dict) else None
    if isinstance(command, list) and command:
        words = " ".join(str(word) for word in command).split()
        for index, word in enumerate(words[:-1]):
            if word.endswith("sleep") and words[index + 1].isdigit():
                return int(words[index + 1])
    return None


def pre_stop(
    ref: ContainerRef,
    *,
    policy: Policy,
    server_version: tuple[int, int] | None,
    windows: bool,
    grace: int | None,
    patch: PatchBuilder,
    pause: tuple[int, str] | None = None,
) -> tuple[Injection | None, int, str | None]:
    """Add a preStop sleep to a serving container without a preStop hook.

    Returns (injection, seconds slept, warning). `pause`: (seconds, why) sized from the Pod's traffic
    path (`webhook.core.serving.traffic.pause_for`), else the policy's `sleepSeconds`. `grace` is a grace
    period a person set: it is kept, and the pause takes half of it at most.
    """
    lifecycle = ref.body.get("lifecycle") or {}
    if lifecycle.get("preStop") is not None:
        return None, 0, None
    seconds, path = pause or (policy.pre_stop_seconds, "")
    fitted = ""
    if grace is not None and seconds * 2 > grace:
        if grace < 2:
            return None, 0, f"{ref.name}: no preStop sleep: the Pod's grace period is {grace}s"
        seconds, fitted = grace // 2, f"; shortened to half the Pod's grace period of {grace}s"
    if server_version is None:
        if policy.when_version_unknown is VersionUnknown.SKIP:
            return None, 0, None
        native = policy.when_version_unknown is VersionUnknown.NATIVE
        version = f"cluster version unknown, so {policy.when_version_unknown.value}"
    else:
        native = server_version >= NATIVE_SLEEP_SINCE
        version = f"cluster {server_version[0]}.{server_version[1]}"
    if native:
        hook: dict[str, Any] = {"sleep": {"seconds": seconds}}
        how = "native sleep"
    elif policy.allow_exec and not windows:
        hook = {"exec": {"command": ["/bin/sleep", str(seconds)]}}
        how = "exec /bin/sleep (no native sleep before 1.30)"
    else:
        reason = "Windows node" if windows else f'policy "{policy.name}" forbids exec'
        return None, 0, f"{ref.name}: no preStop sleep: cluster lacks native sleep and {reason}"
    patch.set((*ref.path, "lifecycle", "preStop"), hook)
    source = (f"{path}; " if path else "") + f'{how}, {version}, policy "{policy.name}"{fitted}'
    return Injection(ref.name, "preStop", f"sleep {seconds}s", source), seconds, None


def grace_period(
    pod: Mapping[str, Any], *, policy: Policy, longest_sleep: int, patch: PatchBuilder
) -> tuple[Injection | None, str | None]:
    """Raise the default grace period to the longest preStop sleep plus the drain; never lower it.

    A value other than the default was set by a person and stays, with a warning if it is short.
    """
    needed = longest_sleep + policy.drain_seconds
    personal = grace_set_by_person(pod)
    if personal is not None:
        if personal >= needed:
            return None, None
        return None, (
            f"terminationGracePeriodSeconds {personal}s (set in the Pod) leaves {personal - longest_sleep}s"
            f" after the preStop sleep; policy drain is {policy.drain_seconds}s"
        )
    if needed <= DEFAULT_GRACE:
        return None, None
    patch.set(("spec", "terminationGracePeriodSeconds"), needed)
    current_value = DEFAULT_GRACE
    return Injection(
        POD_TARGET,
        "terminationGracePeriodSeconds",
        str(needed),
        f"was {current_value}; "
        + (f"preStop {longest_sleep}s + " if longest_sleep else "")
        + f"drain {policy.drain_seconds}s"
        f', policy "{policy.name}"',
    ), None
