"""The layout of ``jisu.train``: one callback per module under ``jisu.train.callbacks``, the
import paths users write (``jisu.train``, MindSpore's ``jisu.train.callback``), and no import
cycle among ``jisu/train``'s modules (module-level and function-level imports alike)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import jisu.train
from jisu.train import callback, callbacks
from jisu.train.callbacks.base import Callback

TRAIN = Path(jisu.train.__file__).parent

#: MindSpore's ``mindspore.train.callback`` names that scripts import from that path
MINDSPORE_PATH = (
    "Callback",
    "RunContext",
    "LossMonitor",
    "TimeMonitor",
    "ModelCheckpoint",
    "CheckpointConfig",
    "SummaryCollector",
    "LearningRateScheduler",
    "EarlyStopping",
    "ReduceLROnPlateau",
    "History",
    "LambdaCallback",
)

BUILT_IN = [
    obj
    for obj in vars(callbacks).values()
    if inspect.isclass(obj) and issubclass(obj, Callback) and obj is not Callback
]


def test_every_built_in_callback_is_found():
    assert len(BUILT_IN) == 12


@pytest.mark.parametrize("cls", BUILT_IN, ids=lambda c: c.__name__)
def test_each_callback_has_its_own_module_and_is_exported(cls):
    module = cls.__module__
    assert module.startswith("jisu.train.callbacks.") and module != "jisu.train.callbacks.base"
    others = [c for c in BUILT_IN if c is not cls and c.__module__ == module]
    assert not others, f"{module} defines {cls.__name__} and {[c.__name__ for c in others]}"
    assert getattr(jisu.train, cls.__name__) is cls


@pytest.mark.parametrize("name", MINDSPORE_PATH)
def test_mindspores_callback_path_names_the_same_objects(name):
    assert getattr(callback, name) is getattr(callbacks, name) is getattr(jisu.train, name)


def _modules() -> dict[str, Path]:
    found = {}
    for path in TRAIN.rglob("*.py"):
        parts = ["jisu", "train", *path.relative_to(TRAIN).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The ``jisu.train`` modules that ``name`` imports, wherever the import statement is."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            target = ".".join([*base, node.module] if node.module else base)
            if not node.level:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
            targets = subs or [target]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def test_no_dynamic_import_in_jisu_train():
    # an import by name (a lazy module ``__getattr__``) would hide an edge from the graph
    for name, path in _modules().items():
        assert "import_module" not in path.read_text(), name


def test_no_import_cycle_in_jisu_train():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    for name in modules:
        importlib.import_module(name)  # every module imports on its own
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
