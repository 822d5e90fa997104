"""How a namespace's labels select pod-tailor's mode and policy."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum

from webhook import PREFIX

__all__ = ["MODE_LABEL", "POLICY_LABEL", "Mode", "NamespaceSettings", "label_problems", "namespace_settings"]

MODE_LABEL = PREFIX + "mode"
POLICY_LABEL = PREFIX + "policy"


class Mode(StrEnum):
    ENFORCE = "enforce"  # the patch is applied
    DRY_RUN = "dry-run"  # no patch; warnings and audit annotations say what would change
    OFF = "off"  # nothing


@dataclass(frozen=True, slots=True)
class NamespaceSettings:
    mode: Mode
    policy: str
    note: str | None = None  # why the labels were not taken as written


def namespace_settings(labels: Mapping[str, str] | None, *, default_mode: Mode) -> NamespaceSettings:
    """Settings from a namespace's labels; `labels is None` means the namespace is not known (yet)."""
    if labels is None:
        return NamespaceSettings(default_mode, "default")
    policy = labels.get(POLICY_LABEL) or "default"
    raw_mode = labels.get(MODE_LABEL)
    if raw_mode is None:
        # Opt-in: a known namespace without the label is not ours to change.
        return NamespaceSettings(Mode.OFF, policy)
    try:
        return NamespaceSettings(Mode(raw_mode), policy)
    except ValueError:
        return NamespaceSettings(Mode.OFF, policy, note=f"unknown {MODE_LABEL}={raw_mode!r}; treated as off")


def label_problems(labels: Mapping[str, str], *, policies: Collection[str]) -> list[str]:
    """What a namespace's pod-tailor labels do when their values are not ones pod-tailor knows (a typo
    such as `enforced` switches pod-tailor off there, silently but for this), with the known values."""
    problems = []
    mode = labels.get(MODE_LABEL)
    if mode is not None and mode not in {m.value for m in Mode}:
        known = ", ".join(m.value for m in Mode)
        problems.append(
            f"{MODE_LABEL}={mode} is not a mode ({known}): pod-tailor treats the namespace as off"
        )
    policy = labels.get(POLICY_LABEL)
    if policy and policy not in policies:
        problems.append(
            f"{POLICY_LABEL}={policy} names no policy (there are: {', '.join(sorted(policies))}): "
            "the default policy is used"
        )
    return problems
