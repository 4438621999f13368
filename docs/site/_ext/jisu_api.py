"""The reference's one rule: every public name of every public module, documented once.

A *public module* is ``jisu``, every module a public module exports by name (``jisu.amp``,
``jisu.train.callback``, ...), and the MindSpore import paths in ``MINDSPORE_PATHS``. Its
*public names* are its ``__all__``; for the few modules without one (``jisu.ops``,
``jisu.context``, ``jisu.common.*``, ``jisu.dataset.config``) the names it defines, as autodoc
would choose them: no ``_`` prefix, no module, class or function imported from outside jisu.

A name is documented in full (autodoc) on the page of its *home*, the public module it belongs
to; every other module that exports the same object gets a short entry linking there, so
``jisu.Model`` and ``jisu.train.callback.LossMonitor`` are in the index and the search without
the page being written twice. ``build.py`` checks the built inventory against these names.

The directive, in a page's reST::

    .. jisu-names:: jisu.train

       Model
       TrainState

    .. jisu-names:: jisu.train
       :rest:

documents the listed names (or, with ``:rest:``, those of the module not yet documented on
this page, in ``__all__`` order) under the current module.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import sys
import types
from functools import cache
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import PycodeError
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective

ROOT = "jisu"

# MindSpore import paths that jisu mirrors (docs/porting.md) although no module exports them by
# name: ``import mindspore.dataset.vision.c_transforms as C`` ports to jisu's path.
#: the libraries of jisu's commands that jisu itself does not import (``jisu port``'s)
COMMAND_MODULES = ("jisu.porting",)
MINDSPORE_PATHS = (
    "jisu.dataset.vision.c_transforms",
    "jisu.dataset.vision.py_transforms",
    "jisu.dataset.transforms.c_transforms",
    "jisu.dataset.transforms.py_transforms",
    "jisu.dataset.vision.utils",
    "jisu.dataset.vision.transforms",
    "jisu.dataset.transforms.transforms",
    "jisu.dataset.transforms.vision",
    "jisu.dataset.transforms.vision.c_transforms",
    "jisu.dataset.transforms.vision.py_transforms",
    "jisu.dataset.transforms.vision.utils",
    "jisu.common.tensor",
    "jisu.common.seed",
    "jisu.common.parameter",
    "jisu.train.loss_scale_manager",
    "jisu.train.serialization",
    "jisu.nn.metrics",
)


def _assigned_names(module: types.ModuleType) -> set[str]:
    """The names the module's own source assigns at top level (not those it imports)."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return set()
    names = set()
    for statement in tree.body:
        targets = (
            statement.targets
            if isinstance(statement, ast.Assign)
            else [statement.target]
            if isinstance(statement, ast.AnnAssign)
            else []
        )
        for target in targets:
            names |= {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}
    return names


@cache
def public_names(modname: str) -> tuple[str, ...]:
    """The module's ``__all__``; without one, the names the module itself defines.

    Those are, as for autodoc: names without a ``_`` prefix whose classes and functions were
    defined in the module or are assigned by its source (``add = torch.add``), whose
    constants its source assigns, and its submodules; imports are left out.
    """
    module = importlib.import_module(modname)
    names = getattr(module, "__all__", None)
    if names is not None:
        return tuple(names)
    assigned = _assigned_names(module)
    found = []
    for name, value in vars(module).items():
        if name.startswith("_"):
            continue
        if inspect.ismodule(value):
            defined = value.__name__.startswith(modname + ".")
        elif inspect.isclass(value) or inspect.isroutine(value):
            defined = getattr(value, "__module__", None) == modname or name in assigned
        else:
            defined = name in assigned
        if defined:
            found.append(name)
    return tuple(found)


@cache
def public_modules() -> tuple[str, ...]:
    """``jisu``, the modules public modules export by name, ``COMMAND_MODULES`` and
    ``MINDSPORE_PATHS``."""
    order: list[str] = []
    todo = [ROOT, *COMMAND_MODULES, *MINDSPORE_PATHS]
    while todo:
        modname = todo.pop(0)
        if modname in order:
            continue
        order.append(modname)
        module = importlib.import_module(modname)
        for name in public_names(modname):
            value = getattr(module, name)
            if inspect.ismodule(value) and value.__name__.startswith(ROOT):
                todo.append(value.__name__)
    return tuple(sorted(order))


def _has_identity(value: Any) -> bool:
    """Objects one can tell apart by ``is``: not small ints and interned strings."""
    return inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value)


@cache
def home(modname: str, name: str) -> tuple[str, str]:
    """Where ``modname.name`` is documented in full: ``(module, name)``.

    Among the public modules that export the same object: under its own ``__name__`` first
    (``RecordDataset`` rather than its alias ``MindDataset``), not from ``jisu`` itself when a
    submodule has it, from a module the object was defined in, the shortest module path, then
    the first in order.
    """
    value = getattr(importlib.import_module(modname), name)
    own_name = getattr(value, "__name__", None) if _has_identity(value) else None
    defined_in = getattr(value, "__module__", None) or ""
    candidates = []
    for other in public_modules():
        module = importlib.import_module(other)
        for other_name in public_names(other):
            if not hasattr(module, other_name):
                continue
            same = (
                getattr(module, other_name) is value
                if _has_identity(value)
                else other_name == name and getattr(module, other_name) is value
            )
            if same:
                inside = defined_in == other or defined_in.startswith(other + ".")
                key = (other_name != own_name, other == ROOT, not inside, len(other), other)
                candidates.append((key, other, other_name))
    if not candidates:  # not an object another module shares: its own home
        return modname, name
    _, other, other_name = min(candidates)
    return other, other_name


def is_alias(modname: str, name: str) -> bool:
    """Whether ``modname.name`` only links to its description elsewhere."""
    value = getattr(importlib.import_module(modname), name)
    if inspect.ismodule(value):
        return value.__name__ != f"{modname}.{name}"
    return home(modname, name) != (modname, name)


def _summary(value: Any) -> str:
    """The first sentence of the object's docstring, on one line (for alias entries)."""
    doc = inspect.getdoc(value) if _has_identity(value) else None
    if not doc:
        return ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    start = 0
    while (end := paragraph.find(". ", start)) != -1:  # the first sentence, not inside ``...``
        if paragraph.count("``", 0, end) % 2 == 0:
            return paragraph[: end + 1]
        start = end + 1
    return paragraph


def _attr_doc(modname: str, name: str) -> list[str]:
    """The ``#:`` comment or string literal documenting a module-level constant."""
    try:
        analyzer = ModuleAnalyzer.for_module(modname)
        return list(analyzer.find_attr_docs().get(("", name), []))
    except PycodeError:
        return []


def _role(value: Any) -> str:
    if inspect.isclass(value):
        return "exception" if issubclass(value, BaseException) else "class"
    if inspect.isroutine(value):
        return "function"
    return "data"


def entry_lines(modname: str, name: str) -> list[str]:
    """The reST documenting ``modname.name``: autodoc at its home, a link elsewhere."""
    value = getattr(importlib.import_module(modname), name)
    where, where_name = home(modname, name)
    full = f"{modname}.{name}"
    if inspect.ismodule(value):
        if value.__name__ == full:  # the submodule's own page holds its entry
            return [f"* :py:mod:`{full}` — {_summary(value)}", ""]
        return [
            f".. py:data:: {name}",
            f"   :module: {modname}",
            "",
            f"   The module :py:mod:`{value.__name__}`: {_summary(value)}",
            "",
        ]
    if (where, where_name) != (modname, name):
        # a torch object's docstring is written for torch's site (its markup fails here)
        summary = _summary(value) if getattr(value, "__module__", "").startswith(ROOT) else ""
        return [
            f".. py:{_role(value)}:: {name}",
            f"   :module: {modname}",
            "",
            f"   Alias of :py:obj:`{where}.{where_name}`." + (f" {summary}" if summary else ""),
            "",
        ]
    role = _role(value)
    origin = getattr(value, "__module__", None) or ""
    if role != "data" and not origin.startswith(ROOT):
        # torch's own function or class under MindSpore's name (``add = torch.add``): its
        # docstring is written for torch's site (its labels and math) and lives there
        target = f"{origin}.{getattr(value, '__qualname__', name)}"
        return [f".. py:{role}:: {name}", f"   :module: {modname}", "", f"   ``{target}``.", ""]
    if role in ("class", "exception"):
        lines = [f".. auto{role}:: {full}", "   :members:"]
        if any(_private_mixin(base) for base in value.__bases__):
            # methods a class gets from one of jisu's own unexported bases (``Dataset``'s fluent
            # methods, from ``core.fluent.PipelineOps``) are documented on the class
            lines.append("   :inherited-members:")
        if value.__bases__ != (object,):  # "Bases: object" says nothing
            lines.append("   :show-inheritance:")
        return [*lines, ""]
    if role == "function":
        return [f".. autofunction:: {full}", ""]
    lines = [f".. py:data:: {name}", f"   :module: {modname}", f"   :value: {value!r}", ""]
    doc = _attr_doc(modname, name)
    if not doc and isinstance(value, enum.Enum):
        doc = [f"A member of :py:class:`{type(value).__name__}`."]
    lines += [f"   {line}" for line in doc] + [""]
    return lines


def _private_mixin(base: type) -> bool:
    """A base class of jisu's own (all of it, to ``object``) that no module exports, so its
    methods have no page of their own."""
    module = sys.modules.get(base.__module__)
    own = all(c is object or c.__module__.startswith(ROOT) for c in base.__mro__)
    return own and base.__name__ not in getattr(module, "__all__", ())


#: what an op is to MindSpore's API (its call, ``device``) is documented on each op; the rest of
#: its base's members are the engine's protocol (``apply``, ``apply_into``, ``axes``,
#: ``output_dtype``, the flags the planner reads): how the pipeline runs an op, not what a user
#: calls. Inherited, they repeated one docstring on every op (285 times on the vision page).
OP_API = frozenset({"device"})


def _defining_class(obj: Any) -> type | None:
    """The class a function was defined in (from its module and qualified name), or None."""
    qualname = getattr(obj, "__qualname__", "")
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if "." not in qualname or module is None:
        return None
    owner: Any = module
    for part in qualname.split(".")[:-1]:
        owner = getattr(owner, part, None)
    return owner if inspect.isclass(owner) else None


def skip_engine_protocol(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any):
    """``autodoc-skip-member``: leave an op's engine-protocol members off its entry (the
    members of ``TensorOperation`` outside :data:`OP_API`, inherited or overridden)."""
    from jisu.dataset.core.operation import TensorOperation

    if what != "class" or name in OP_API or name not in vars(TensorOperation):
        return None
    owner = _defining_class(inspect.unwrap(obj)) if callable(obj) else None
    if owner is None or issubclass(owner, TensorOperation):
        return True  # a flag (no owner to tell) or a method of an op: the protocol
    return None


class JisuNames(SphinxDirective):
    """``.. jisu-names:: module`` with names as content, or ``:rest:``."""

    required_arguments = 1
    has_content = True
    option_spec: ClassVar[dict[str, Any]] = {"rest": directives.flag}

    def run(self) -> list[nodes.Node]:
        modname = self.arguments[0]
        done = self.env.temp_data.setdefault("jisu_names_done", set())
        if modname not in public_modules():
            raise self.error(f"jisu-names: {modname} is not a public module")
        known = public_names(modname)
        if "rest" in self.options:
            names = [name for name in known if (modname, name) not in done]
        else:
            names = [line.strip() for line in self.content if line.strip()]
            unknown = [name for name in names if name not in known]
            if unknown:
                raise self.error(f"jisu-names: not public in {modname}: {', '.join(unknown)}")
        lines: list[str] = []
        for name in names:
            done.add((modname, name))
            lines += entry_lines(modname, name)
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=f"<jisu-names {modname}>"), 0, container)
        # An alias entry stays in objects.inv (the name is documented, links to it work) but
        # is marked as Sphinx marks a ``:canonical:`` name: left out of the search's object
        # results, and skipped when a short reference such as ``MalformedFileError`` in a
        # docstring would otherwise match both the alias and the object it names.
        objects = self.env.get_domain("py").objects
        for name in names:
            full = f"{modname}.{name}"
            if is_alias(modname, name) and full in objects:
                objects[full] = objects[full]._replace(aliased=True)
        return container.children


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("jisu-names", JisuNames)
    app.connect("autodoc-skip-member", skip_engine_protocol)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}


__all__ = [
    "entry_lines",
    "home",
    "is_alias",
    "public_modules",
    "public_names",
    "setup",
    "skip_engine_protocol",
]
