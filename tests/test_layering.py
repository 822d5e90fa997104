"""The layering of docs/architecture.md, held by the code: every import, read with `ast`, points down the
doc's "Which layer may import which" table, and the core imports no framework and does no I/O.

Imports inside functions and under `if TYPE_CHECKING:` count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "webhook"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LAYERS = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file())
ADAPTERS = ("cluster", "profiles", "config")

# Modules the pure core must not import (the doc: "no I/O, no framework imports, no clock").
FRAMEWORKS = ("fastapi", "starlette", "uvicorn", "httpx", "requests", "urllib3", "prometheus_client")
IO_AND_CLOCK = ("asyncio", "socket", "ssl", "http", "urllib", "subprocess", "threading", "multiprocessing",
                "concurrent", "os", "pathlib", "io", "shutil", "tempfile", "logging", "time", "random")
KUBERNETES_PURE = ("kubernetes.utils.quantity",)  # the client's quantity parser: no I/O


def imports_of(source: str) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every absolute import in `source`, `from a import b` giving `a.b`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"line {node.lineno}: relative import"
            module = node.module or ""
            yield node.lineno, module
            yield from ((node.lineno, f"{module}.{alias.name}") for alias in node.names)


def layer_of(dotted: str) -> str | None:
    """The layer a `webhook.…` import lands in; None for the package's own constants (`webhook.PREFIX`)."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


@cache
def allowed() -> dict[str, frozenset[str]]:
    """The doc's table: layer -> the layers it may import ("every layer" for commands)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Which layer may import which", 1)[1].split("\n## ", 1)[0]
    table: dict[str, frozenset[str]] = {}
    for layer, targets in re.findall(r"^\| `(\w+)` \| (.*?) \|$", section, flags=re.M):
        named = set(re.findall(r"`(\w+)`", targets))
        table[layer] = frozenset(LAYERS if targets == "every layer" else named)
    return table


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def offences(relative: Path, source: str) -> list[str]:
    """Each import in `source` (of webhook/`relative`) that the table or the core's purity forbids."""
    layer = relative.parts[0] if len(relative.parts) > 1 else None
    where = Path("webhook") / relative
    found = []
    for line, name in imports_of(source):
        target = layer_of(name) if name.split(".")[0] == "webhook" else None
        if layer is None:  # webhook/__init__.py and __main__.py: the root only starts the command
            if relative.name == "__init__.py" and name.split(".")[0] == "webhook":
                found.append(f"{where}:{line} imports {name} (the package root must import no layer)")
            continue
        if target is not None and target != layer and target not in allowed()[layer]:
            found.append(f"{where}:{line} imports {name} ({layer} may not import {target})")
        if layer == "core" and name.split(".")[0] != "webhook":
            top = name.split(".")[0]
            if top in FRAMEWORKS or top in IO_AND_CLOCK:
                found.append(f"{where}:{line} imports {name} (the core does no I/O and uses no framework)")
            if top == "kubernetes" and not name.startswith(KUBERNETES_PURE):
                found.append(f"{where}:{line} imports {name} (only the client's quantity parser is pure)")
    return found


class TestTheDocsTable:
    def test_the_table_names_every_layer_of_the_package_once(self) -> None:
        assert sorted(allowed()) == LAYERS

    def test_the_core_may_import_no_other_layer(self) -> None:
        assert allowed()["core"] == frozenset()

    @pytest.mark.parametrize("adapter", ADAPTERS)
    def test_adapters_never_import_commands_or_the_server(self, adapter: str) -> None:
        assert not allowed()[adapter] & {"commands", "server", "dashboard"}

    def test_only_commands_import_commands(self) -> None:
        assert [layer for layer, targets in allowed().items() if "commands" in targets] == ["commands"]


class TestTheCodeFollowsIt:
    @pytest.mark.parametrize("path", modules(), ids=lambda path: str(path.relative_to(PACKAGE)))
    def test_every_import_points_down_the_table(self, path: Path) -> None:
        assert offences(path.relative_to(PACKAGE), path.read_text(encoding="utf-8")) == []


class TestTheCheckItself:
    """The check must see what it is for; each case is a mutation of the code it guards against."""

    @pytest.mark.parametrize(
        ("relative", "source"),
        [
            pytest.param("core/x.py", "from webhook.admission.cache import VerdictCache\n",
                         id="core imports up"),
            pytest.param("core/x.py", "def f():\n    from webhook.server import app\n",
                         id="lazy, in a function"),
            pytest.param("core/x.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    import webhook.refreshers.state\n", id="under TYPE_CHECKING"),
            pytest.param("core/x.py", "import fastapi\n", id="core imports a framework"),
            pytest.param("core/x.py", "import time\n", id="core reads the clock"),
            pytest.param("core/x.py", "from kubernetes import client\n", id="core imports the API client"),
            pytest.param("cluster/x.py", "from webhook.commands import serve\n",
                         id="adapter imports a command"),
            pytest.param("profiles/x.py", "from webhook.server.app import create_app\n",
                         id="adapter imports the server"),
            pytest.param("admission/x.py", "from webhook import server\n", id="from the package, a layer"),
        ],
    )
    def test_an_upward_import_is_an_offence(self, relative: str, source: str) -> None:
        assert offences(Path(relative), source) != []

    def test_the_core_may_parse_quantities_with_the_client(self) -> None:
        assert offences(Path("core/x.py"), "from kubernetes.utils.quantity import parse_quantity\n") == []
