"""MindSpore's ``mindspore.ops.primitive``: the base class of the primitive operators.

A primitive is built with its attributes and called with tensors
(``ops.ReduceMean(keep_dims=True)(x, axis)``); jisu's primitives compute with torch, so they run
under autograd, AMP and ``torch.compile`` like torch code.
"""

from __future__ import annotations

from typing import Any


class Primitive:
    """Base of the primitive classes: built with attributes, called with tensors."""

    def __repr__(self) -> str:
        attrs = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({attrs})"


def unprovided(name: str, reason: str = "") -> type:
    """A primitive class that refuses to be built: MindSpore's ``name`` with "not provided by
    jisu" (and ``reason``), at construction, never a torch traceback later."""

    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        why = f": {reason}" if reason else ""
        raise NotImplementedError(
            f"mindspore.ops.operations.{name} is not provided by jisu{why} "
            "(docs/porting.md lists what is)"
        )

    doc = f"MindSpore's ``{name}``: not provided by jisu."
    return type(name, (Primitive,), {"__init__": refuse, "_jisu_unprovided": True, "__doc__": doc})
