"""MindSpore's ``mindspore.ops.primitive``: the base classes of the primitive operators and the
decorators of graph-mode code (``constexpr``, ``prim_attr_register``).

A primitive is built with its attributes and called with tensors
(``ops.ReduceMean(keep_dims=True)(x, axis)``); jisu's primitives compute with torch, so they run
under autograd, AMP and ``torch.compile`` like torch code. There is no graph compiler: a
``@constexpr`` function simply runs on its Python values, and ``PrimitiveWithInfer``'s
``infer_shape``/``infer_dtype`` are never needed (torch infers them); a user's subclass
computes in its ``__call__`` (or ``construct``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


class Primitive:
    """Base of the primitive classes: built with attributes, called with tensors.

    MindSpore's bookkeeping methods are kept for code that calls them: ``add_prim_attr``
    (the attribute is also set on the instance), ``init_prim_io_names``, ``set_prim_instance_name``,
    ``shard``/``recompute``/``set_device`` (placement hints with no effect on torch).
    """

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    @property
    def name(self) -> str:
        """The primitive's name (its class name unless given)."""
        return self.__dict__.get("_name", type(self).__name__)

    @name.setter
    def name(self, value: str) -> None:
        self.__dict__["_name"] = value

    def __repr__(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({attrs})"

    @property
    def attrs(self) -> dict[str, Any]:
        """The attributes added with :meth:`add_prim_attr` (MindSpore's ``attrs``)."""
        return self.__dict__.setdefault("_attrs", {})

    def add_prim_attr(self, name: str, value: Any) -> Primitive:
        """Record attribute ``name`` (also readable as ``self.<name>``); returns self."""
        self.attrs[name] = value
        setattr(self, name, value)
        return self

    def del_prim_attr(self, name: str) -> Primitive:
        """Forget attribute ``name``; returns self."""
        self.attrs.pop(name, None)
        self.__dict__.pop(name, None)
        return self

    def init_prim_io_names(self, inputs: Any, outputs: Any) -> None:
        """Record the input and output names (MindSpore's graph metadata)."""
        self.add_prim_attr("input_names", list(inputs))
        self.add_prim_attr("output_names", list(outputs))

    def set_prim_instance_name(self, instance_name: str) -> Primitive:
        """Record the instance name; returns self."""
        self.instance_name = instance_name
        return self

    def shard(self, *args: Any, **kwargs: Any) -> Primitive:
        """A placement hint of MindSpore's auto parallel: no effect on torch; returns self."""
        return self

    def recompute(self, mode: bool = True) -> Primitive:
        """MindSpore's recomputation hint: no effect on torch; returns self."""
        return self

    def set_device(self, device_target: str) -> Primitive:
        """MindSpore's heterogeneous placement hint: no effect on torch; returns self."""
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        construct = getattr(self, "construct", None)
        if construct is not None:
            return construct(*args, **kwargs)
        raise NotImplementedError(
            f"{type(self).__name__}: this primitive has no torch computation; give the class a "
            "__call__ (or construct) that computes with torch"
        )


class PrimitiveWithInfer(Primitive):
    """MindSpore's primitive with Python shape/dtype inference: the inference methods are kept
    but never needed (torch infers shapes and dtypes)."""

    def infer_shape(self, *args: Any) -> Any:
        """MindSpore's shape inference hook: unused by jisu."""
        return None

    def infer_dtype(self, *args: Any) -> Any:
        """MindSpore's dtype inference hook: unused by jisu."""
        return None

    def infer_value(self, *args: Any) -> Any:
        """MindSpore's constant folding hook: unused by jisu."""
        return None


class PrimitiveWithCheck(Primitive):
    """MindSpore's primitive with Python input checks: ``check_shape``/``check_dtype`` are
    kept for subclasses; jisu does not call them."""

    def check_shape(self, *args: Any) -> None:
        """MindSpore's shape check hook: unused by jisu."""

    def check_dtype(self, *args: Any) -> None:
        """MindSpore's dtype check hook: unused by jisu."""


def prim_attr_register(fn: Callable) -> Callable:
    """Decorator of a primitive's ``__init__``: every argument (defaults included) is recorded
    as an attribute (``add_prim_attr``) before the body runs, as in MindSpore."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            if signature.parameters[name].kind in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            ):
                continue
            if isinstance(self, Primitive):
                self.add_prim_attr(name, value)
            else:
                setattr(self, name, value)
        fn(self, *args, **kwargs)

    return init


def constexpr(fn: Callable | None = None, get_instance: bool = True, name: str | None = None,
              reuse_result: bool = True, check: bool = True) -> Any:  # fmt: skip
    """MindSpore's ``@constexpr``: in graph mode the function is folded at compile time from
    constant arguments; in jisu (eager) it simply runs on its Python values. Usable bare
    (``@constexpr``) or with MindSpore's arguments (``@constexpr(reuse_result=False)``), which
    have no effect."""
    if fn is None:
        return lambda f: constexpr(f, get_instance, name, reuse_result, check)
    return fn


def _primexpr(fn: Callable | None = None, get_instance: bool = True, name: str | None = None,
              reuse_result: bool = True) -> Any:  # fmt: skip
    """MindSpore's ``@_primexpr`` (``constexpr`` for values known only at run time): runs
    eagerly in jisu."""
    if fn is None:
        return lambda f: _primexpr(f, get_instance, name, reuse_result)
    return fn


def unprovided(name: str, reason: str = "") -> type:
    """A primitive class that refuses to be built: MindSpore's ``name`` with "not provided by
    jisu" and the reason, at construction, never a torch traceback later."""
    from .._unprovided import refused_class

    why = (
        reason
        or "a MindSpore primitive jisu does not provide (docs/porting.md lists those it does)"
    )
    return refused_class(f"ops.operations.{name}", why, base=Primitive)


__all__ = [
    "Primitive",
    "PrimitiveWithCheck",
    "PrimitiveWithInfer",
    "constexpr",
    "prim_attr_register",
]
