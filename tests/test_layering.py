"""The layering of docs/architecture.md, held by the code: every import, read with `ast`, points down the
doc's "Which layer may import which" table, every import between the parts of the core down its "Which
part of the core may import which" table, the core imports no framework and does no I/O, and no module
of the package imports one that imports it back.

Imports inside functions and under `if TYPE_CHECKING:` count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "webhook"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
LAYERS = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file())
CORE = PACKAGE / "core"
# The parts of the core: its sub-packages and the modules directly in it.
CORE_PARTS = sorted(
    [path.name for path in CORE.iterdir() if (path / "__init__.py").is_file()]
    + [path.stem for path in CORE.glob("*.py") if path.name != "__init__.py"]
)
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


def table(heading: str, every: Sequence[str]) -> dict[str, frozenset[str]]:
    """The doc's table under `heading`: name -> the names it may import (`every` for "every layer")."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, frozenset[str]] = {}
    for name, targets in re.findall(r"^\| `(\w+)` \| (.*?) \|$", section, flags=re.M):
        named = set(re.findall(r"`(\w+)`", targets))
        found[name] = frozenset(every if targets == "every layer" else named)
    return found


@cache
def allowed() -> dict[str, frozenset[str]]:
    """The layers' table: layer -> the layers it may import ("every layer" for commands)."""
    return table("Which layer may import which", LAYERS)


@cache
def core_allowed() -> dict[str, frozenset[str]]:
    """The core's table: part -> the parts it may import."""
    return table("Which part of the core may import which", CORE_PARTS)


def core_part(relative: Path) -> str | None:
    """The part of the core a module belongs to (`relative` to webhook/core/); None for its `__init__.py`."""
    if relative.parts == ("__init__.py",):
        return None
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def core_part_of(dotted: str) -> str | None:
    """The part of the core a `webhook.core.…` import lands in; None for anything else."""
    parts = dotted.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["webhook", "core"] else None


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def offences(relative: Path, source: str) -> list[str]:
    """Each import in `source` (of webhook/`relative`) that the table or the core's purity forbids."""
    layer = relative.parts[0] if len(relative.parts) > 1 else None
    where = Path("webhook") / relative
    found = []
    part = core_part(relative.relative_to("core")) if layer == "core" else None
    if part is not None and part not in core_allowed():
        found.append(f"{where} belongs to no part of the core's table")
    for line, name in imports_of(source):
        target = layer_of(name) if name.split(".")[0] == "webhook" else None
        if layer is None:  # webhook/__init__.py and __main__.py: the root only starts the command
            if relative.name == "__init__.py" and name.split(".")[0] == "webhook":
                found.append(f"{where}:{line} imports {name} (the package root must import no layer)")
            continue
        if target is not None and target != layer and target not in allowed()[layer]:
            found.append(f"{where}:{line} imports {name} ({layer} may not import {target})")
        reached = core_part_of(name) if part is not None else None
        if reached is not None and reached != part and reached not in core_allowed().get(part or "", ()):
            found.append(f"{where}:{line} imports {name} (core/{part} may not import core/{reached})")
        if layer == "core" and name.split(".")[0] != "webhook":
            top = name.split(".")[0]
            if top in FRAMEWORKS or top in IO_AND_CLOCK:
                found.append(f"{where}:{line} imports {name} (the core does no I/O and uses no framework)")
            if top == "kubernetes" and not name.startswith(KUBERNETES_PURE):
                found.append(f"{where}:{line} imports {name} (only the client's quantity parser is pure)")
    return found


def dotted_name(path: Path) -> str:
    """`webhook.core.model.pod` for webhook/core/model/pod.py; a package's `__init__.py` is the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """module -> the modules of `sources` it imports (a name resolved to its longest module prefix)."""
    graph: dict[str, set[str]] = {module: set() for module in sources}
    for module, source in sources.items():
        for _, name in imports_of(source):
            while name and name not in sources:
                name = name.rpartition(".")[0]
            if name and name != module:
                graph[module].add(name)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every set of two or more modules that import each other round (the graph's strongly connected
    components, Tarjan's algorithm without recursion), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
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

    def test_the_core_table_names_every_part_of_the_core_once(self) -> None:
        assert sorted(core_allowed()) == CORE_PARTS

    def test_the_core_table_names_only_parts_of_the_core(self) -> None:
        assert set().union(*core_allowed().values()) <= set(CORE_PARTS)

    def test_the_kubernetes_model_imports_no_other_part(self) -> None:
        assert core_allowed()["model"] == frozenset()

    def test_the_core_table_has_no_cycle(self) -> None:
        assert cycles({part: set(targets) for part, targets in core_allowed().items()}) == []

    def test_only_in_place_right_sizing_imports_the_engine(self) -> None:
        assert [part for part, targets in core_allowed().items() if "engine" in targets] == ["resize"]


class TestTheCodeFollowsIt:
    @pytest.mark.parametrize("path", modules(), ids=lambda path: str(path.relative_to(PACKAGE)))
    def test_every_import_points_down_the_table(self, path: Path) -> None:
        assert offences(path.relative_to(PACKAGE), path.read_text(encoding="utf-8")) == []

    def test_no_module_imports_one_that_imports_it_back(self) -> None:
        sources = {dotted_name(path): path.read_text(encoding="utf-8") for path in modules()}
        assert cycles(import_graph(sources)) == []

    @pytest.mark.parametrize(
        "path", sorted(CORE.rglob("__init__.py")), ids=lambda path: str(path.relative_to(PACKAGE))
    )
    def test_the_core_packages_hold_only_a_docstring(self, path: Path) -> None:
        """A re-export in a package file would make every module of it import the whole package."""
        (only,) = ast.parse(path.read_text(encoding="utf-8")).body
        assert isinstance(only, ast.Expr)
        assert isinstance(only.value, ast.Constant)


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
            pytest.param("core/model/x.py", "from webhook.core.policy.policies import Policy\n",
                         id="the model imports the policy"),
            pytest.param("core/policy/x.py", "def f():\n    from webhook.core.engine import decide\n",
                         id="the policy imports the engine, lazily"),
            pytest.param("core/sizing/x.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from webhook.core.fit.nodes import fit_pod\n", id="sizing imports fit, typed"),
            pytest.param("core/fit/x.py", "import webhook.core.resize.plan\n", id="fit imports resize"),
            pytest.param("core/steps/x.py", "from webhook.core import engine\n", id="a step, the engine"),
            pytest.param("core/x.py", "from webhook.core.model.pod import containers\n",
                         id="a module of the core in no part"),
        ],
    )
    def test_an_upward_import_is_an_offence(self, relative: str, source: str) -> None:
        assert offences(Path(relative), source) != []

    @pytest.mark.parametrize(
        ("relative", "source"),
        [
            pytest.param("core/steps/x.py", "from webhook.core.fit.nodes import fit_pod\n",
                         id="a step, a rule"),
            pytest.param("core/model/x.py", "from webhook.core.model.pod import containers\n",
                         id="within a part"),
            pytest.param("core/resize/x.py", "from webhook.core.engine import tailor\n",
                         id="right-sizing, the engine"),
        ],
    )
    def test_a_downward_import_is_none(self, relative: str, source: str) -> None:
        assert offences(Path(relative), source) == []

    @pytest.mark.parametrize(
        ("sources", "expected"),
        [
            pytest.param({"webhook.a": "import webhook.b\n", "webhook.b": "import webhook.c\n",
                          "webhook.c": "from webhook.a import x\n"},
                         [["webhook.a", "webhook.b", "webhook.c"]], id="three round"),
            pytest.param({"webhook.a": "def f():\n    import webhook.b\n",
                          "webhook.b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                       "    from webhook.a import x\n"},
                         [["webhook.a", "webhook.b"]], id="lazy and typing-only imports"),
            pytest.param({"webhook.p": '"""doc"""\n', "webhook.p.m": "from webhook.p import n\n",
                          "webhook.p.n": "import webhook.p.m\n"},
                         [["webhook.p.m", "webhook.p.n"]], id="through a package's module names"),
            pytest.param({"webhook.a": "import webhook.b\n", "webhook.b": "import webhook.c\n",
                          "webhook.c": "import json\n"}, [], id="a chain is no cycle"),
        ],
    )
    def test_modules_that_import_each_other_round_are_a_cycle(
        self, sources: dict[str, str], expected: list[list[str]]
    ) -> None:
        assert cycles(import_graph(sources)) == expected

    def test_the_core_may_parse_quantities_with_the_client(self) -> None:
        source = "from kubernetes.utils.quantity import parse_quantity\n"
        assert offences(Path("core/model/x.py"), source) == []
