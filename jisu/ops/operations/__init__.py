"""MindSpore's primitive operators (``mindspore.ops.operations``, imported ``as P`` in most of
the model zoo), on torch.

Each class is built with MindSpore's constructor arguments and called with tensors; outputs
follow MindSpore's dtype rules and return tuples where MindSpore does. A MindSpore primitive
that jisu does not provide fails when it is built, naming it; the submodules mirror
MindSpore's (``array_ops``, ``math_ops``, ``nn_ops``, ``comm_ops``, ...).
"""

from __future__ import annotations

from ..primitive import (  # noqa: F401 (P.Primitive, as MindSpore's)
    Primitive,
    PrimitiveWithCheck,
    PrimitiveWithInfer,
    prim_attr_register,
    unprovided,
)
from . import _inner_ops  # noqa: F401 (MindSpore's internal primitives: refused by name)
from ._gap_lstm import *  # noqa: F403
from ._gap_ops import *  # noqa: F403
from ._mindspore_names import MINDSPORE_PRIMITIVES
from .array_ops import *  # noqa: F403
from .comm_ops import *  # noqa: F403
from .float_status_ops import *  # noqa: F403
from .image_ops import *  # noqa: F403
from .math_ops import *  # noqa: F403
from .nn_ops import *  # noqa: F403
from .other_ops import *  # noqa: F403
from .random_ops import *  # noqa: F403


def __getattr__(name: str) -> type:
    if name in MINDSPORE_PRIMITIVES:
        return unprovided(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
