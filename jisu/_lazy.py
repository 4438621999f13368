"""Lazy package faces (PEP 562): a package's public names are imported when first used.

``import jisu`` used to import every subpackage (about 0.5 s over torch's own import: the
data engine, OpenCV, Arrow, the training loop, the profiler, torch.distributed), and every
worker process paid it again. A package using :func:`attach_stub` lists its names once, as
imports in its ``__init__.pyi`` (which IDEs and type checkers read, so go-to-definition still
lands on the definition); ``__getattr__`` imports the module that defines a name the first
time it is asked for (``jisu.Model``, ``from jisu import nn``) and keeps it in the package.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["attach_stub"]


def _read_stub(path: str) -> tuple[set[str], dict[str, tuple[str, str]], list[str]]:
    """The submodules (``from . import x``), the names (``from .m import a as b``: b ->
    (m, a)) and the ``__all__`` of the stub at ``path``; only relative imports and the
    ``__all__`` assignment at its top level count."""
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    submodules: set[str] = set()
    names: dict[str, tuple[str, str]] = {}
    public: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]:
            public = list(ast.literal_eval(node.value))
        if not (isinstance(node, ast.ImportFrom) and node.level == 1):
            continue
        for alias in node.names:
            bound = alias.asname or alias.name
            if node.module is None:
                if bound != alias.name:
                    raise ValueError(f"{path}: a submodule under another name ({bound})")
                submodules.add(alias.name)
            else:
                names[bound] = (node.module, alias.name)
    return submodules, names, public


def attach_stub(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of ``package``, whose names are the
    imports of the ``.pyi`` beside ``init_file`` (its ``__init__.py``) and whose ``__all__``
    is the stub's."""
    submodules, names, public = _read_stub(os.path.splitext(init_file)[0] + ".pyi")

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        if name in names:
            module, attr = names[name]
            value = getattr(importlib.import_module(f"{package}.{module}"), attr)
            setattr(sys.modules[package], name, value)  # asked once
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | submodules | set(names))

    return __getattr__, __dir__, public
