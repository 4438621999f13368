"""The MindSpore names a project's code uses, and whether jisu provides each.

Follows the import aliases (``import mindspore as ms``, ``from mindspore.ops import operations
as P``, ``from mindspore import nn``) and collects every dotted ``mindspore`` name the code
touches (``mindspore.ops.operations.ReduceSum``), with the line of its first use. A name is
then resolved in jisu (``mindspore`` -> ``jisu``: the module imported, the attributes
followed): provided, refused on purpose (jisu has the name, and using it raises with the
reason), or missing.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass

ROOT = "mindspore"


@dataclass(frozen=True)
class NameUse:
    """How jisu answers one MindSpore name: ``status`` is ``"provided"``, ``"refused"`` (with
    the ``reason`` the error gives) or ``"missing"``."""

    name: str
    status: str
    reason: str = ""


class Collector(ast.NodeVisitor):
    """The dotted mindspore names of one module (with the line of each first use) and the
    keywords of the calls made to them."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # local name -> dotted mindspore path
        self.lines: dict[str, int] = {}  # name -> line of its first use
        self.keywords: set[tuple[str, str]] = set()

    @property
    def names(self) -> set[str]:
        """The names collected."""
        return set(self.lines)

    def _add(self, name: str, node: ast.AST) -> None:
        self.lines.setdefault(name, getattr(node, "lineno", 0))

    # imports -----------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == ROOT or alias.name.startswith(ROOT + "."):
                self._add(alias.name, node)
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    self.aliases[ROOT] = ROOT

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or not (module == ROOT or module.startswith(ROOT + ".")):
            return
        for alias in node.names:
            if alias.name == "*":
                self._add(module, node)
                continue
            full = f"{module}.{alias.name}"
            self._add(full, node)
            self.aliases[alias.asname or alias.name] = full

    # uses --------------------------------------------------------------------------------
    def _dotted(self, node: ast.AST) -> str | None:
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id], *reversed(chain)])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self._dotted(node)
        if name is not None:
            self._add(name, node)
            return  # the chain's inner attributes are prefixes of this name
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self._dotted(node.func)
        if name is not None:
            for kw in node.keywords:
                if kw.arg:
                    self.keywords.add((name, kw.arg))
        self.generic_visit(node)


def names_in_source(source: str | bytes, filename: str = "<source>") -> Collector:
    """The MindSpore names of one Python source (an empty collector when it does not parse)."""
    collector = Collector()
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError):
        return collector
    collector.visit(tree)
    return collector


def resolve(name: str, target: str = "jisu") -> NameUse:
    """How ``target`` answers ``name`` (``mindspore.x.y``): the module imported, then the
    attributes followed. An object marked ``_jisu_unprovided`` is refused on purpose."""
    parts = [target, *name.split(".")[1:]]
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        except Exception as error:  # a module that fails to import: missing, with why
            return NameUse(name, "missing", f"importing it raised {type(error).__name__}")
        for attr in parts[cut:]:
            try:
                obj = getattr(obj, attr)
            except Exception:
                return NameUse(name, "missing")
        if getattr(obj, "_jisu_unprovided", False):
            return NameUse(name, "refused", str(getattr(obj, "_jisu_reason", "")))
        return NameUse(name, "provided")
    return NameUse(name, "missing")
