"""The OpenReports CRD as shipped (manifests/components/openreports-crd) and a strict check against it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import yaml

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "components" / "openreports-crd" / "openreports.io_reports.yaml"


def report_crd() -> dict[str, Any]:
    (crd,) = [doc for doc in yaml.safe_load_all(CRD_FILE.read_text()) if doc]
    return dict(crd)


def _closed(schema: Any) -> Any:
    """The schema with every object closed to fields it does not name: what the API server would prune
    silently must fail here, so that nothing pod-tailor writes is lost on the way in."""
    if isinstance(schema, dict):
        out = {k: _closed(v) for k, v in schema.items()}
        if schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


def strict_validator() -> jsonschema.Draft7Validator:
    (version,) = report_crd()["spec"]["versions"]
    return jsonschema.Draft7Validator(_closed(copy.deepcopy(version["schema"]["openAPIV3Schema"])))


def assert_valid_report(report: dict[str, Any]) -> None:
    errors = [f"{list(e.path)}: {e.message}" for e in strict_validator().iter_errors(report)]
    assert not errors, errors
