"""MindSpore's ``Tensor`` and ``Parameter`` constructors, giving torch tensors.

``Tensor(input_data, dtype=None, shape=None, init=None)`` returns a ``torch.Tensor`` with
MindSpore's dtype rules (Python floats -> float32, ints -> int64, bools -> bool, NumPy arrays
keep their dtype), or, with ``shape`` and ``init``, one filled by an initializer. There is no
tensor subclass (it would slow every torch op down): ``isinstance(x, Tensor)`` is True for any
torch tensor, and every torch tensor has MindSpore's tensor methods (``asnumpy()``, ``astype()``
... :mod:`jisu.common.tensor_methods`).
``Parameter(data, name=None, requires_grad=True)`` is a ``torch.nn.Parameter`` whose MindSpore
name is recorded (the weight-decay rule of ``jisu.nn`` optimizers reads it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .. import compat


def _as_tensor(data: Any, dtype: torch.dtype | None) -> torch.Tensor:
    if isinstance(data, torch.Tensor):
        out = data.detach().clone()
    elif isinstance(data, np.ndarray):
        out = torch.from_numpy(np.array(data, copy=True))
    elif isinstance(data, (np.generic,)):
        out = torch.tensor(data.item(), dtype=torch.from_numpy(np.asarray(data)).dtype)
    else:
        array = np.asarray(data)
        if array.dtype == np.float64:  # Python floats: float32, as MindSpore
            array = array.astype(np.float32)
        if array.dtype.kind in "USO":
            raise TypeError(f"Tensor: cannot make a tensor of {type(data).__name__} data")
        out = torch.from_numpy(array)
    return out.to(dtype) if dtype is not None else out


class _TensorMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, torch.Tensor)


class Tensor(metaclass=_TensorMeta):
    """MindSpore's ``Tensor(input_data, dtype, shape, init)``: makes a ``torch.Tensor``."""

    def __new__(
        cls,
        input_data: Any = None,
        dtype: torch.dtype | None = None,
        shape: Any = None,
        init: Any = None,
        const_arg: bool = False,
    ) -> torch.Tensor:
        compat.add_asnumpy()
        if dtype is not None and not isinstance(dtype, torch.dtype):
            raise TypeError(
                f"Tensor: dtype must be a dtype (jisu.dtype.float32 ...). Received {dtype!r}"
            )
        if input_data is None:
            if shape is None or init is None:
                raise ValueError("Tensor: give input_data, or shape and init")
            from .initializer import initializer

            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            return initializer(init, shape, dtype or torch.float32)
        if shape is not None or init is not None:
            raise ValueError("Tensor: shape and init go without input_data")
        return _as_tensor(input_data, dtype)

    @staticmethod
    def from_numpy(array: np.ndarray) -> torch.Tensor:
        """A tensor sharing memory with a NumPy array (MindSpore's ``Tensor.from_numpy``)."""
        if not isinstance(array, np.ndarray):
            raise TypeError(
                "Tensor.from_numpy: input must be a numpy.ndarray. "
                f"Received: {type(array).__name__}"
            )
        compat.install_tensor_methods()
        return torch.from_numpy(array)


class _ParameterMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, torch.nn.Parameter)


class Parameter(metaclass=_ParameterMeta):
    """MindSpore's ``Parameter(default_input, name, requires_grad)``: makes a
    ``torch.nn.Parameter`` from a tensor, an array or a number, its MindSpore ``name``
    recorded; ``isinstance(p, Parameter)`` holds for every torch parameter (the zoo's
    ``isinstance(param, Parameter)`` filters).

    Only ``name`` and ``requires_grad`` of MindSpore's options are used. An integer or bool
    parameter (a step counter, a mask) never requires gradients: torch has no gradients of
    integers, and MindSpore computes none for it either."""

    def __new__(
        cls,
        default_input: Any,
        name: str | None = None,
        requires_grad: bool = True,
        **kwargs: Any,
    ) -> torch.nn.Parameter:
        from .parameter_names import _remember

        unknown = set(kwargs) - {"layerwise_parallel", "parallel_optimizer", "storage_format"}
        if unknown:
            raise TypeError(f"Parameter: unknown argument(s) {sorted(unknown)}")
        data = default_input if isinstance(default_input, torch.Tensor) else Tensor(default_input)
        data = data.detach().clone()
        differentiable = data.is_floating_point() or data.is_complex()
        param = torch.nn.Parameter(data, requires_grad=requires_grad and differentiable)
        if name is not None:
            _remember(param, name)
        return param


class ParameterTuple(tuple):
    """MindSpore's ``ParameterTuple``: a tuple of parameters; ``clone`` makes a new
    (untrainable) parameter per parameter, as update rules do for their moments."""

    def clone(self, prefix: str, init: Any = "same") -> ParameterTuple:
        """New parameters of the same shapes, dtypes and devices, named ``prefix.<name>``,
        filled by ``init`` (an initializer name or value; "same": a copy of each)."""
        from .initializer import initializer
        from .parameter_names import _remember, parameter_name

        out = []
        for p in self:
            if isinstance(init, str) and init == "same":
                data = p.detach().clone()
            else:
                data = initializer(init, tuple(p.shape), p.dtype).to(p.device)
            new = torch.nn.Parameter(data, requires_grad=False)
            _remember(new, f"{prefix}.{parameter_name(p) or 'param'}")
            out.append(new)
        return ParameterTuple(out)
