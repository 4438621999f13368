"""MindSpore's ``mindspore.common`` names: ``set_seed``, ``dtype`` (and its ``float32`` ...),
``initializer``, ``RowTensor``, ``Tensor``, ``Parameter``, ``ParameterTuple`` and the
``parameter`` module.

``Tensor``, ``Parameter``, ``ParameterTuple``, ``set_seed`` and ``get_seed`` are read from
the ``jisu`` package (which imports :mod:`jisu.common.tensor`, :mod:`jisu.common.parameter`
and :mod:`jisu.common.seed`) when first asked for: ``Parameter`` names itself through
:mod:`jisu.nn` and ``set_seed`` seeds :mod:`jisu.dataset`, which both import this package, so
importing :mod:`.tensor` or :mod:`.seed` here would close an import cycle.
"""

import importlib
from typing import Any

from . import dtype, initializer
from .dtype import (
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from .row_tensor import RowTensor
from .tensor_slicing import install as _install_negative_steps

_install_negative_steps()  # x[:, ::-1] as MindSpore's (torch refuses a negative step)

_SUBMODULES = ("parameter", "seed", "tensor")
_FROM_JISU = ("Tensor", "Parameter", "ParameterTuple", "set_seed", "get_seed")


def __getattr__(name: str) -> Any:
    if name in ("JitConfig", "mutable", "api"):  # jisu.common.api imports jisu._jit: lazily
        # by name: ``from . import api`` would ask this __getattr__ for "api" first, forever
        api = importlib.import_module(f"{__name__}.api")
        return api if name == "api" else getattr(api, name)
    if name in _SUBMODULES:  # mindspore.common.parameter and the like, as attributes
        return importlib.import_module(f"{__name__}.{name}")
    if name in _FROM_JISU:
        import jisu  # already imported: a submodule's import runs its package's __init__ first

        return getattr(jisu, name)
    raise AttributeError(f"module 'jisu.common' has no attribute {name!r}")


__all__ = [
    "JitConfig",
    "Parameter",
    "ParameterTuple",
    "RowTensor",
    "Tensor",
    "bfloat16",
    "bool_",
    "dtype",
    "float16",
    "float32",
    "float64",
    "get_seed",
    "initializer",
    "int8",
    "int16",
    "int32",
    "int64",
    "mutable",
    "set_seed",
    "uint8",
]
