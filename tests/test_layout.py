"""The package's structure: no import cycle anywhere in ``jisu``, the layers of
``jisu.dataset`` import downwards only, and no module over 500 lines.

The graph is built from the source (``ast``), with every import that runs: module-level and
function-level alike. Importing ``a.b.c`` runs the ``__init__`` of ``a.b`` first, so it counts as
an edge to that package too (unless the importer is inside it, where it is already running) —
the edge behind "partially initialized module" errors. Imports under ``if TYPE_CHECKING:`` name
types only and never run; they are left out.
"""

from __future__ import annotations

import ast
import importlib
import itertools
from pathlib import Path

import pytest

import jisu

ROOT = Path(jisu.__file__).parent
MAX_LINES = 500

#: ``jisu.dataset``'s layers, bottom first: a module may import its own layer and those below.
#: ``config`` is the settings every layer reads (kept at MindSpore's path), so it sits in core.
LAYERS = (
    ("core", ("core", "config")),
    ("engine", ("engine",)),
    (
        "ops, sources, vision, transforms",
        ("ops", "sources", "vision", "transforms", "text", "record", "device"),
    ),
    ("datasets", ("datasets", "")),
)
#: siblings in the same layer that must not import each other (importer part -> forbidden)
FORBIDDEN = {"sources": ("ops",)}
#: where a module imports another by name (hidden from the graph), and why that is sound
DYNAMIC_IMPORTS = {
    # a worker process defers ``jisu.dataset``'s ``__init__``; the binding module (the top
    # layer) is imported by name when a binding is first needed there
    "jisu.dataset.core.bindings",
    # runs the deferred packages' ``__init__`` (it imports nothing from jisu itself)
    "jisu.dataset.engine.processes.forkserver_boot",
    # ``record.convert`` on first use: the packing pipelines sit above the formats they write
    "jisu.dataset.record",
    # imports the user's pipeline module named on the command line
    "jisu.profiler.doctor",
    # resolves the MindSpore names a ported project uses, module by module (``jisu port``)
    "jisu.porting.names",
    # ``transforms.vision`` on first use (MindSpore's attribute): its subpackage imports
    # jisu.dataset.vision, which imports transforms, but only after transforms' __init__ ran
    "jisu.dataset.transforms",
    # the package faces (``jisu``): a public name's module is imported when first asked for
    "jisu._lazy",
    # ``jisu.common.parameter``/``seed``/``tensor`` as attributes: they import jisu.common
    "jisu.common",
    # the profiler's AutoTune and verdict, installed on first need (the engine sits below it)
    "jisu.dataset.engine.policies",
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ["jisu", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _targets(name: str, path: Path) -> dict[str, int]:
    """The jisu modules ``name`` imports (with a line), parent packages included."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    skipped = _type_only(tree)
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            targets = subs or [target]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            parts = target.split(".") if target else []
            for k in range(1, len(parts) + 1):
                step = ".".join(parts[:k])
                if step in MODULES and step != name and not name.startswith(step + "."):
                    out.setdefault(step, node.lineno)
    return out


GRAPH = {name: _targets(name, path) for name, path in MODULES.items()}


def _layer(module: str) -> tuple[int, str] | None:
    """(layer index, part of jisu.dataset) of a ``jisu.dataset`` module; None outside it."""
    if module != "jisu.dataset" and not module.startswith("jisu.dataset."):
        return None
    part = module.removeprefix("jisu.dataset").lstrip(".").split(".")[0]
    for index, (_, parts) in enumerate(LAYERS):
        if part in parts:
            return index, part
    raise AssertionError(f"{module}: not in any layer of LAYERS; place it")


def test_every_module_imports_on_its_own():
    for name in MODULES:
        importlib.import_module(name)


def test_no_import_cycle_in_jisu():
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(GRAPH[node]):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                lines = [f"{a} (line {GRAPH[a][b]})" for a, b in itertools.pairwise(cycle)]
                raise AssertionError("import cycle: " + " -> ".join([*lines, nxt]))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])


def test_the_layers_of_jisu_dataset_import_downwards_only():
    wrong = []
    for name, targets in GRAPH.items():
        mine = _layer(name)
        if mine is None:
            continue
        for target, line in targets.items():
            theirs = _layer(target)
            if theirs is None:
                continue
            if theirs[0] > mine[0]:
                wrong.append(f"{name}:{line} imports {target} ({LAYERS[theirs[0]][0]} is above)")
            elif theirs[1] in FORBIDDEN.get(mine[1], ()):
                wrong.append(f"{name}:{line} imports {target} ({mine[1]} import no {theirs[1]})")
    assert not wrong, "\n".join(wrong)


def test_the_engine_names_no_op_class():
    # the engine asks nodes through the contract (``stream_stage``, ``describe()`` …)
    for name, path in MODULES.items():
        if name.startswith("jisu.dataset.engine."):
            text = path.read_text()
            for op in ("MapDataset", "BatchDataset", "FilterDataset", "RepeatDataset"):
                assert op not in text, f"{name} names {op}"


def test_no_hidden_import_by_name():
    for name, path in MODULES.items():
        if name not in DYNAMIC_IMPORTS:
            assert "import_module(" not in path.read_text(), name


def test_the_graph_sees_a_cycle_and_a_parent_package_edge(tmp_path, monkeypatch):
    # the checker itself: a two-module cycle, and an edge through a package's __init__
    (tmp_path / "a.py").write_text("def f():\n    from jisu.dataset.core import node\n")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from . import heavy\n")
    (package / "heavy.py").write_text("import jisu\n")
    (package / "light.py").write_text("")
    monkeypatch.setitem(MODULES, "jisu.fake_a", tmp_path / "a.py")
    monkeypatch.setitem(MODULES, "jisu.fake_pkg", package / "__init__.py")
    monkeypatch.setitem(MODULES, "jisu.fake_pkg.heavy", package / "heavy.py")
    monkeypatch.setitem(MODULES, "jisu.fake_pkg.light", package / "light.py")
    assert "jisu.dataset.core.node" in _targets("jisu.fake_a", tmp_path / "a.py")
    (tmp_path / "b.py").write_text("from jisu.fake_pkg.light import x\n")
    edges = _targets("jisu.fake_b", tmp_path / "b.py")
    assert {"jisu.fake_pkg", "jisu.fake_pkg.light"} <= set(edges)
    (tmp_path / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jisu.fake_pkg\n"
    )
    assert "jisu.fake_pkg" not in _targets("jisu.fake_c", tmp_path / "c.py")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_over_500_lines(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines"
