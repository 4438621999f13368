"""MindSpore's ``mindspore.ops.function``: the functional API of arrays and math
(``ops.function.range``, ``ops.function.array_func.gather_nd``, ...), the same functions as
``jisu.ops``'s lowercase names."""

from __future__ import annotations

from . import array_func, math_func, nn_func  # noqa: F401 (ops.function.nn_func)
from .array_func import *  # noqa: F403
from .math_func import *  # noqa: F403
from .nn_func import multi_head_attention_forward, silu  # noqa: F401 (ops.function.silu)

__all__ = [*array_func.__all__, *math_func.__all__]
