"""Where the report's usage profiles come from: the configured store, or a build from Prometheus on the spot.

A store that cannot be read is not the end of a report: every value then comes from the policy,
and the report says why (the problem names the store and the cause).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import ProfileSnapshot
from webhook.profiles.build import BuildSettings
from webhook.profiles.prometheus import PrometheusError
from webhook.profiles.runner import BuildRun, build_once
from webhook.profiles.store import ProfileDocument, ProfileStore, StoreError
from webhook.profiles.summary import UsageSummary

__all__ = ["MemoryStore", "Usage", "built_now", "from_store", "without_profiles"]

_EMPTY = ProfileDocument({}, 0.0, "no profiles")


class MemoryStore:
    """A `ProfileStore` held in memory: a build for one report writes nowhere."""

    def __init__(self) -> None:
        self.document = _EMPTY

    def read(self) -> ProfileDocument:
        return self.document

    def write(self, document: ProfileDocument, *, scope: Iterable[str] | None = None) -> None:
        self.document = document

    def fingerprint(self) -> object:
        return id(self.document)

    def describe(self) -> str:
        return "built for this report"


@dataclass(frozen=True, slots=True)
class Usage:
    document: ProfileDocument
    snapshot: ProfileSnapshot
    problem: str | None = None

    @property
    def summaries(self) -> dict[WorkloadKey, Mapping[str, UsageSummary]]:
        """The drawable summaries by workload (only the workloads that have some)."""
        return {key: entry.summaries for key, entry in self.document.workloads.items() if entry.summaries}


def without_profiles(problem: str) -> Usage:
    """No profiles, and why (the report prints the problem and sizes everything from the policy)."""
    return Usage(_EMPTY, ProfileSnapshot(source="none"), problem)


def from_store(store: ProfileStore) -> Usage:
    try:
        document = store.read()
    except StoreError as exc:
        return without_profiles(f"{exc}: no usage profiles, every value from the policy")
    return Usage(document, document.snapshot(origin=store.describe()))


def built_now(
    run: BuildRun, settings: BuildSettings, *, where: str, progress: Callable[[str], None]
) -> Usage:
    """Profiles built from Prometheus (`where`) now; a failed build is a problem, not an error."""
    store = MemoryStore()
    try:
        build_once(run, settings, store, progress=progress)
    except (PrometheusError, StoreError, ValueError) as exc:
        return without_profiles(f"profiles from {where}: {exc}: every value from the policy")
    return Usage(store.document, store.document.snapshot(origin=f"built from {where} for this report"))
