"""The generated reference pages (policy, command line, metrics, module map) match the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pod_tailor_docs", ROOT / "scripts" / "docs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DOCS = _generator()


REFERENCES = ("policy-reference.md", "cli-reference.md", "metrics-reference.md", "architecture.md")
EXAMPLE_PAGES = tuple(path.name for path in DOCS.example_pages())
GENERATED = tuple(sorted(set(REFERENCES) | set(EXAMPLE_PAGES)))


@pytest.mark.parametrize("name", GENERATED)
def test_each_generated_page_is_what_the_code_says(name: str) -> None:
    path = ROOT / "docs" / name
    assert path.read_text(encoding="utf-8") == DOCS.pages()[path], (
        f"{path.name} is out of date: run .venv/bin/python scripts/docs.py"
    )


def test_every_generated_page_is_checked() -> None:
    assert sorted(path.name for path in DOCS.pages()) == sorted(GENERATED)


def test_the_examples_shown_in_the_preview_and_report_pages_are_generated() -> None:
    """The outputs a reader compares against are re-run by scripts/docs.py, not pasted."""
    assert {"preview.md", "report-and-dashboard.md"} <= set(EXAMPLE_PAGES)


class TestThePolicyReference:
    def test_every_field_of_the_bundled_policy_has_a_row_and_a_reason(self) -> None:
        reference = (ROOT / "docs" / "policy-reference.md").read_text(encoding="utf-8")
        bundled = yaml.safe_load((ROOT / "webhook" / "data" / "policy.yaml").read_text(encoding="utf-8"))
        fields = [path for path, _ in DOCS.leaves(bundled["policies"]["default"])]
        assert len(fields) >= 40
        for field in fields:
            assert f"| `{field}` |" in reference

    @pytest.mark.parametrize(
        ("field", "accepted"),
        [
            ("resources.cpu.limit", "one of none, ratio, equal"),
            ("probes.readiness.periodSeconds", "an integer from 1 to 3600"),
            ("resources.memory.request", "a positive Kubernetes quantity"),
            ("probes.httpPath", "null or an absolute HTTP path"),
            ("autoscalers.steps.upPerDay", "a number from 0 to 100, or null"),
        ],
    )
    def test_what_a_field_accepts_comes_from_the_parser(self, field: str, accepted: str) -> None:
        bundled = yaml.safe_load((ROOT / "webhook" / "data" / "policy.yaml").read_text(encoding="utf-8"))
        default = bundled["policies"]["default"]
        assert DOCS.accepts(default, field) == accepted


def test_the_module_map_lists_every_module_of_the_package() -> None:
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for module in sorted((ROOT / "webhook").rglob("*.py")):
        assert f"### `{module.parent.relative_to(ROOT)}/`" in architecture
        assert f"| `{module.name}` |" in architecture
