"""MindSpore's ``MultitypeFuncGraph``, ``HyperMap`` and ``Map``: functions overloaded on
MindSpore's type names and mapped over (nested) tuples of gradients, as train cells use them::

    grad_scale = C.MultitypeFuncGraph("grad_scale")

    @grad_scale.register("Tensor", "Tensor")
    def tensor_grad_scale(scale, grad):
        return grad * F.cast(P.Reciprocal()(scale), F.dtype(grad))

    grads = C.HyperMap()(F.partial(grad_scale, scaling_sens), grads)

They follow MindSpore's PyNative semantics: a ``MultitypeFuncGraph`` with one registered
function calls it whatever the arguments; with several, the first whose types match.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
import torch


def _is_number(x: Any) -> bool:
    return isinstance(x, (numbers.Number, np.number, np.bool_)) and not isinstance(x, torch.Tensor)


def _named(cls_name: str) -> Callable[[Any], bool]:
    return lambda x: any(c.__name__ == cls_name for c in type(x).__mro__)


#: MindSpore's type names (``mstype.typing.str_to_type``) -> a test of a Python value.
#: ``Number`` holds ``Bool`` as in MindSpore's type lattice.
TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "Tensor": lambda x: isinstance(x, torch.Tensor),
    "Parameter": lambda x: isinstance(x, torch.nn.Parameter),
    "Number": _is_number,
    "Bool": lambda x: isinstance(x, (bool, np.bool_)),
    "Int": lambda x: isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)),
    "UInt": lambda x: isinstance(x, np.unsignedinteger),
    "Float": lambda x: isinstance(x, (float, np.floating)),
    "Tuple": lambda x: isinstance(x, tuple),
    "List": lambda x: isinstance(x, list),
    "Dictionary": lambda x: isinstance(x, dict),
    "Dict": lambda x: isinstance(x, dict),
    "String": lambda x: isinstance(x, str),
    "Function": lambda x: callable(x) and not isinstance(x, (type, torch.Tensor)),
    "None": lambda x: x is None,
    "NoneType": lambda x: x is None,
    "Slice": lambda x: isinstance(x, slice),
    "Ellipsis": lambda x: x is Ellipsis,
    "TypeType": lambda x: isinstance(x, (type, torch.dtype)),
    "RowTensor": _named("RowTensor"),
    "COOTensor": _named("COOTensor"),
    "CSRTensor": _named("CSRTensor"),
    "MapTensor": _named("MapTensor"),
}


def _type_name(x: Any) -> str:
    for name in ("Tensor", "Bool", "Int", "Float", "Number", "Tuple", "List", "Dictionary",
                 "String", "None", "RowTensor", "Function"):  # fmt: skip
        if TYPE_TESTS[name](x):
            return name
    return type(x).__name__


class MultitypeFuncGraph:
    """A function overloaded on MindSpore's type names (``"Tensor"``, ``"Number"``,
    ``"Tuple"``, ``"List"``, ``"RowTensor"``, ``"Bool"``, ``"String"``, ``"Function"``,
    ``"None"``, ...).

    Args:
        name: the function's name (in error messages).
        read_value: MindSpore's pass-by-value flag for graph mode; no effect.

    Raises:
        ValueError: at a call, when no registered function matches the arguments' types (with
            several registered), or at ``register`` for an unknown type name.

    Example:
        >>> add = C.MultitypeFuncGraph("add")
        >>> @add.register("Number", "Number")
        ... def _(x, y):
        ...     return x + y
    """

    def __init__(self, name: str, read_value: bool = False) -> None:
        self.name = name
        self.read_value = read_value
        self.entries: list[tuple[tuple[str, ...], Callable]] = []

    def register(self, *type_names: Any) -> Callable[[Callable], Callable]:
        """Decorator registering a function for the given MindSpore type names."""
        for t in type_names:
            if not isinstance(t, str):
                raise TypeError(
                    f"MultitypeFuncGraph {self.name!r}: register takes MindSpore type names "
                    f"(str). Received {t!r}"
                )
            if t not in TYPE_TESTS:
                raise ValueError(
                    f"MultitypeFuncGraph {self.name!r}: unknown type name {t!r}; known: "
                    f"{sorted(TYPE_TESTS)}"
                )

        def deco(fn: Callable) -> Callable:
            self.entries.append((tuple(type_names), fn))
            return fn

        return deco

    def __call__(self, *args: Any) -> Any:
        if len(self.entries) == 1:  # MindSpore (PyNative) calls its only function as it is
            return self.entries[0][1](*args)
        for sigs, fn in self.entries:
            if len(sigs) == len(args) and all(TYPE_TESTS[s](a) for s, a in zip(sigs, args)):
                return fn(*args)
        got = ", ".join(_type_name(a) for a in args)
        known = "; ".join("(" + ", ".join(s) + ")" for s, _ in self.entries) or "none"
        raise ValueError(
            f"MultitypeFuncGraph {self.name!r}: no function registered for argument types "
            f"({got}). Registered: {known}"
        )

    def __repr__(self) -> str:
        return f"MultitypeFuncGraph({self.name!r}, {len(self.entries)} functions)"


class HyperMap:
    """Apply an operation element by element over (nested) tuples or lists: the leaves of the
    first sequence argument, with the matching leaves of the others.

    Args:
        ops: the operation; None: it is the first argument of each call.
        reverse: MindSpore's graph-mode ordering hint; no effect.

    Returns a tuple of the same nesting (lists come back as tuples, as in MindSpore).

    Example:
        >>> grads = C.HyperMap()(F.partial(grad_scale, scale), grads)
    """

    def __init__(self, ops: Any = None, reverse: bool = False) -> None:
        if ops is not None and not callable(ops):
            raise TypeError(f"HyperMap: ops must be callable or None. Received {ops!r}")
        self.ops = ops
        self.reverse = reverse

    def __call__(self, *args: Any) -> Any:
        fn, seqs = (self.ops, args) if self.ops is not None else (args[0], args[1:])
        if not seqs:
            raise TypeError("HyperMap: no sequence to map over")
        return _hyper_map(fn, seqs)


def _hyper_map(fn: Callable, seqs: tuple) -> Any:
    if not isinstance(seqs[0], (tuple, list)):
        return fn(*seqs)
    return tuple(_hyper_map(fn, row) for row in zip(*seqs))


class Map:
    """Apply an operation element by element over tuples or lists (one level, unlike
    :class:`HyperMap`).

    Args:
        ops: the operation; None: it is the first argument of each call.
        reverse: MindSpore's graph-mode ordering hint; no effect.
    """

    def __init__(self, ops: Any = None, reverse: bool = False) -> None:
        if ops is not None and not callable(ops):
            raise TypeError(f"Map: ops must be callable or None. Received {ops!r}")
        self.ops = ops
        self.reverse = reverse

    def __call__(self, *args: Any) -> tuple:
        fn, seqs = (self.ops, args) if self.ops is not None else (args[0], args[1:])
        if not seqs:
            raise TypeError("Map: no sequence to map over")
        return tuple(map(fn, *seqs))


def partial(fn: Callable, *args: Any) -> Callable:
    """MindSpore's ``F.partial``: ``fn`` with its first arguments bound."""
    return functools.partial(fn, *args)
