"""Where profiles live between a build and the webhook: a versioned JSON document behind `ProfileStore`.

The embedded backend is one local file written atomically (temp file + fsync + rename), so a reader
never sees half a document; `profiles build`, `preview` and `serve` all find it at
`default_store_path()` without flags. The Kubernetes backend (`kubestore`) stores the same per-namespace
documents in ConfigMaps so several webhook replicas share them.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import orjson

from webhook.core.model.profile import (
    ContainerProfile,
    Evidence,
    NoRecommendation,
    Recommendation,
    TrailPoint,
    UsageTotals,
)
from webhook.core.model.quantity import QuantityError, parse, render, render_bytes, render_cpu
from webhook.core.model.workload import WorkloadKey
from webhook.core.snapshot import ProfileSnapshot
from webhook.profiles.summary import UsageSummary, decode_summaries, encode_summary

__all__ = [
    "FORMAT_VERSION",
    "PROFILES_VARIABLE",
    "FileStore",
    "ProfileDocument",
    "ProfileStore",
    "StoreError",
    "WorkloadEntry",
    "decode_document",
    "default_store_path",
    "encode_document",
    "encode_profile",
    "load_snapshot",
    "merge_documents",
    "replace_scope",
]

FORMAT_VERSION = 1
PROFILES_VARIABLE = _ENV = "POD_TAILOR_PROFILES"  # names the store file for every command


class StoreError(RuntimeError):
    """A store that cannot be read or written; the message names the location and the cause."""


@dataclass(frozen=True, slots=True)
class WorkloadEntry:
    """One workload's profiles plus what was requested when they were built (for `profiles show`)."""

    containers: Mapping[str, ContainerProfile]
    current: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)  # container -> cpu/memory
    summaries: Mapping[str, UsageSummary] = field(default_factory=dict)  # container -> drawable usage


@dataclass(frozen=True, slots=True)
class ProfileDocument:
    """A complete set of profiles as one build produced them."""

    workloads: Mapping[WorkloadKey, WorkloadEntry]
    generated_at: float
    source: str  # e.g. "prometheus http://prom:9090 window 14d"
    window: str = "14d"

    def snapshot(self, *, origin: str) -> ProfileSnapshot:
        profiles = {key: dict(entry.containers) for key, entry in self.workloads.items()}
        source = f"{origin} ({self.source})"
        return ProfileSnapshot(profiles=profiles, taken_at=self.generated_at, source=source)

    def namespaces(self) -> set[str]:
        return {key.namespace for key in self.workloads}

    def only(self, namespace: str) -> ProfileDocument:
        kept = {key: entry for key, entry in self.workloads.items() if key.namespace == namespace}
        return ProfileDocument(kept, self.generated_at, self.source, self.window)


def merge_documents(documents: Iterable[ProfileDocument], *, source: str) -> ProfileDocument:
    """Union of documents (later wins per workload); `generated_at` is the oldest, the honest age."""
    workloads: dict[WorkloadKey, WorkloadEntry] = {}
    stamps: list[float] = []
    window = "14d"
    for document in documents:
        workloads.update(document.workloads)
        stamps.append(document.generated_at)
        window = document.window
    return ProfileDocument(workloads, min(stamps, default=0.0), source, window)


def replace_scope(old: ProfileDocument, new: ProfileDocument, scope: Iterable[str]) -> ProfileDocument:
    """`new` for the namespaces in `scope`, `old` for every other namespace."""
    covered = set(scope)
    kept = {key: entry for key, entry in old.workloads.items() if key.namespace not in covered}
    kept.update(new.workloads)
    return ProfileDocument(kept, new.generated_at, new.source, new.window)


class ProfileStore(Protocol):
    """Reads and writes whole documents; `write` replaces what the namespaces it covers held."""

    def read(self) -> ProfileDocument: ...

    def write(self, document: ProfileDocument, *, scope: Iterable[str] | None = None) -> None:
        """Store `document`; with `scope` (namespaces built) other namespaces' profiles are kept."""
        ...

    def fingerprint(self) -> object:
        """Cheap change marker: equal fingerprints mean `read` would return the same document."""
        ...

    def describe(self) -> str: ...


# --- serialisation -----------------------------------------------------------------------------------


def _encode_profile(profile: ContainerProfile) -> dict[str, Any]:
    if isinstance(profile, NoRecommendation):
        return {"none": profile.reason}
    ev = profile.evidence
    out: dict[str, Any] = {
        "cpu": render_cpu(profile.cpu),
        "memory": render_bytes(profile.memory),
        "evidence": {
            "window": ev.window,
            "samples": ev.samples,
            "hours": round(ev.hours, 3),
            "cpuPercentile": ev.cpu_percentile,
            "memoryMargin": ev.memory_margin,
            "confidence": round(ev.confidence, 4),
            "oomKills": ev.oom_kills,
            **_encode_statistic(ev),
        },
    }
    if profile.startup_cpu is not None:
        out["startupCpu"] = render_cpu(profile.startup_cpu)
    if profile.startup_seconds is not None:
        out["startupSeconds"] = round(profile.startup_seconds, 1)
    if profile.cpu_by:
        out["cpuBy"] = {key: render_cpu(value) for key, value in sorted(profile.cpu_by.items())}
    return out | _encode_recorded(profile)


def _encode_statistic(ev: Evidence) -> dict[str, Any]:
    """The CPU statistic's description (older stores have none: pooled, resolution unknown)."""
    out: dict[str, Any] = {"cpuAggregate": ev.cpu_aggregate}
    if ev.cpu_step:
        out |= {"cpuStep": ev.cpu_step, "cpuRateWindow": ev.cpu_rate_window}
    if ev.cpu_value is not None:
        out["cpuValue"] = round(ev.cpu_value, 6)
    if ev.cpu_within is not None:
        out["cpuWithin"] = round(ev.cpu_within, 6)
    if ev.memory_peak is not None:
        out["memoryPeak"] = round(ev.memory_peak)
    return out


def _decode_statistic(ev: Mapping[str, Any], where: str) -> dict[str, Any]:
    value, within, peak = ev.get("cpuValue"), ev.get("cpuWithin"), ev.get("memoryPeak")
    return {
        "cpu_aggregate": str(ev.get("cpuAggregate", "pooled")),
        "cpu_step": str(ev.get("cpuStep", "")),
        "cpu_rate_window": str(ev.get("cpuRateWindow", "")),
        "cpu_value": None if value is None else _finite(value, where),
        "cpu_within": None if within is None else _finite(within, where, high=1.0),
        "memory_peak": None if peak is None else _finite(peak, where),
    }


# What a recommendation carries beside its values (totals, build time, trail) is optional, so a store
# written before these fields existed still loads (its recommendations simply have no headroom data and
# no step limit yet), and one written with them loads in a build that ignores unknown keys.


class RecordedError(ValueError):
    """A malformed optional field (the store names where)."""


def _encode_recorded(profile: Recommendation) -> dict[str, Any]:
    """What a recommendation carries beside its values: totals, build time, trail (each only when set)."""
    out: dict[str, Any] = {}
    totals = profile.totals
    if totals is not None and (totals.cpu is not None or totals.memory is not None):
        out["totals"] = {
            **({"cpu": render_cpu(totals.cpu)} if totals.cpu is not None else {}),
            **({"memory": render_bytes(totals.memory)} if totals.memory is not None else {}),
        }
    if profile.built_at is not None:
        out["builtAt"] = profile.built_at
    if profile.trail:
        out["trail"] = [
            [point.at, render_cpu(point.cpu), render_bytes(point.memory), *([1] if point.oom else [])]
            for point in profile.trail
        ]
    return out


def _decode_recorded(data: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for `Recommendation` from its stored JSON; raises RecordedError."""
    recorded: dict[str, Any] = {}
    try:
        if isinstance(data.get("totals"), Mapping):
            raw = data["totals"]
            recorded["totals"] = UsageTotals(
                cpu=parse(raw["cpu"]) if raw.get("cpu") is not None else None,
                memory=parse(raw["memory"]) if raw.get("memory") is not None else None,
            )
        if data.get("builtAt") is not None:
            recorded["built_at"] = float(data["builtAt"])
        if data.get("trail"):
            recorded["trail"] = tuple(
                TrailPoint(at=float(point[0]), cpu=parse(point[1]), memory=parse(point[2]),
                           oom=len(point) > 3 and bool(point[3]))
                for point in data["trail"]
            )
    except (IndexError, KeyError, TypeError, ValueError, QuantityError) as exc:
        raise RecordedError(f"{type(exc).__name__}: {exc}") from None
    return recorded


def _finite(value: Any, where: str, *, low: float = 0.0, high: float = float("inf")) -> float:
    number = float(value)
    if not (math.isfinite(number) and low <= number <= high):
        raise StoreError(f"{where}: {number!r} is outside {low}..{high}")
    return number


def _amount(value: Any, where: str) -> Decimal:
    amount = parse(value)
    if amount < 0:
        raise StoreError(f"{where}: negative quantity {value!r}")
    return amount


def _decode_profile(data: Any, where: str) -> ContainerProfile:
    if not isinstance(data, Mapping):
        raise StoreError(f"{where}: must be an object")
    if "none" in data:
        return NoRecommendation(str(data["none"])[:1000])
    try:
        ev = data["evidence"]
        if not isinstance(ev, Mapping):
            raise StoreError(f"{where}: evidence must be an object")
        evidence = Evidence(
            window=str(ev["window"]),
            samples=int(_finite(ev["samples"], where)),
            hours=_finite(ev["hours"], where),
            cpu_percentile=_finite(ev["cpuPercentile"], where, high=100.0),
            memory_margin=_finite(ev["memoryMargin"], where, high=100.0),
            confidence=_finite(ev["confidence"], where, high=1.0),
            oom_kills=int(_finite(ev.get("oomKills", 0), where)),
            **_decode_statistic(ev, where),
        )
        startup_cpu = data.get("startupCpu")
        startup_seconds = data.get("startupSeconds")
        return Recommendation(
            cpu=_amount(data["cpu"], where),
            memory=_amount(data["memory"], where),
            evidence=evidence,
            startup_cpu=None if startup_cpu is None else _amount(startup_cpu, where),
            startup_seconds=None if startup_seconds is None else _finite(startup_seconds, where),
            cpu_by={str(key): _amount(value, where)
                    for key, value in _mapping(data.get("cpuBy", {}), where).items()},
            **_decode_recorded(data),
        )
    except (KeyError, TypeError, ValueError, ArithmeticError, QuantityError, RecordedError) as exc:
        raise StoreError(f"{where}: {type(exc).__name__}: {str(exc)[:200]}") from None


def encode_document(document: ProfileDocument) -> dict[str, Any]:
    """The versioned JSON form; quantities as the canonical strings the API server prints."""
    workloads: dict[str, Any] = {}
    for key in sorted(document.workloads):
        entry = document.workloads[key]
        item: dict[str, Any] = {
            "containers": {name: _encode_profile(p) for name, p in sorted(entry.containers.items())}
        }
        if entry.current:
            item["current"] = {
                name: {res: render(res, v) for res, v in sorted(req.items())}
                for name, req in sorted(entry.current.items())
            }
        if entry.summaries:
            item["summaries"] = {name: encode_summary(s) for name, s in sorted(entry.summaries.items())}
        workloads[str(key)] = item
    return {
        "apiVersion": f"pod-tailor.io/profiles/v{FORMAT_VERSION}",
        "generatedAt": document.generated_at,
        "source": document.source,
        "window": document.window,
        "workloads": workloads,
    }


def _mapping(value: Any, where: str) -> Mapping[Any, Any]:
    """`value` when it is an object; `null` reads as an empty one; anything else is refused."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise StoreError(f"{where}: must be an object, got {type(value).__name__}")
    return value


def decode_document(data: Any, *, where: str) -> ProfileDocument:
    """Parse the JSON form, refusing unknown versions and every other shape with a StoreError.

    Only StoreError comes out (a fuzz test feeds it random JSON), so a bad store can never take
    down the task that reads it.
    """
    if not isinstance(data, Mapping):
        raise StoreError(f"{where}: not a profile document (expected a JSON object)")
    version = data.get("apiVersion")
    if version != f"pod-tailor.io/profiles/v{FORMAT_VERSION}":
        shown = repr(version)[:60]
        raise StoreError(f"{where}: unsupported apiVersion {shown} (this build reads v{FORMAT_VERSION})")
    workloads: dict[WorkloadKey, WorkloadEntry] = {}
    for text, item in _mapping(data.get("workloads"), f"{where}: workloads").items():
        key = _workload_key(text, where)
        entry = _mapping(item, f"{where}: {text}")
        containers = {
            str(name): _decode_profile(p, f"{where}: {text}/{name}")
            for name, p in _mapping(entry.get("containers"), f"{where}: {text} containers").items()
        }
        current: dict[str, dict[str, Decimal]] = {}
        for name, req in _mapping(entry.get("current"), f"{where}: {text} current").items():
            try:
                current[str(name)] = {
                    str(res): _amount(v, where) for res, v in _mapping(req, f"{where}: {text}/{name}").items()
                }
            except QuantityError as exc:
                raise StoreError(f"{where}: {text}/{name} current: {exc}") from None
        summaries = decode_summaries(entry.get("summaries"), where=f"{where}: {text}")
        workloads[key] = WorkloadEntry(containers, current, summaries)
    try:
        generated_at = _finite(data.get("generatedAt", 0.0), where)
    except (TypeError, ValueError):
        raise StoreError(f"{where}: generatedAt must be a number") from None
    source, window = str(data.get("source", ""))[:1000], str(data.get("window", "14d"))[:100]
    return ProfileDocument(workloads, generated_at, source, window)


def _workload_key(text: Any, where: str) -> WorkloadKey:
    try:
        if not isinstance(text, str):
            raise ValueError(text)
        key = WorkloadKey.parse(text)
    except ValueError:
        raise StoreError(f"{where}: bad workload key {str(text)[:100]!r} (expected ns/Kind/name)") from None
    return key


# --- embedded file backend ---------------------------------------------------------------------------


def default_store_path() -> Path:
    """`$POD_TAILOR_PROFILES`, else `$XDG_DATA_HOME/pod-tailor/profiles.json`, else under ~/.local/share."""
    explicit = os.environ.get(_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pod-tailor" / "profiles.json"


class FileStore:
    """One local JSON file; writes go to a temp file in the same directory and are renamed over it."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_store_path()

    def describe(self) -> str:
        return f"file {self.path}"

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> ProfileDocument:
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return ProfileDocument({}, 0.0, "no profiles built yet")
        except OSError as exc:
            raise StoreError(f"profile store {self.path}: {exc.strerror}") from None
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise StoreError(f"profile store {self.path}: not valid JSON: {str(exc)[:200]}") from None
        return decode_document(data, where=f"profile store {self.path}")

    def fingerprint(self) -> object:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StoreError(f"profile store {self.path}: {exc.strerror}") from None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    def write(self, document: ProfileDocument, *, scope: Iterable[str] | None = None) -> None:
        if scope is not None:
            document = replace_scope(self.read(), document, scope)
        payload = json.dumps(encode_document(document), indent=1, sort_keys=False).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".profiles-", suffix=".tmp", dir=self.path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(payload)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise StoreError(f"profile store {self.path}: cannot write: {exc.strerror}") from None


def load_snapshot(path: Path | None = None) -> ProfileSnapshot:
    """The snapshot stored at `path` (default location if None); empty when the file does not exist."""
    store = FileStore(path)
    if not store.exists():
        return ProfileSnapshot(profiles={}, taken_at=0.0, source=f"none (no profiles at {store.path})")
    return store.read().snapshot(origin=store.describe())


encode_profile = _encode_profile  # one container profile in the store's JSON form (the report shows it)
