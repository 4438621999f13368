"""MindSpore's ``Tensor`` methods on ``torch.Tensor``, added without changing torch's meanings.

jisu's tensors are plain ``torch.Tensor`` s (a subclass would route every torch op through
``__torch_function__``, about 5x slower per op), so ported code that calls MindSpore's tensor
methods gets them from :func:`install`, which patches ``torch.Tensor`` once (idempotent).
Two kinds of additions, and nothing else:

* **New names** torch does not define (a name torch defines one day is left alone):
  ``asnumpy``, ``astype``, ``expand_dims``, ``itemset``, ``copy``, ``fill``, ``ptp``,
  ``init_data``, ``to_tensor``, ``value``, ``has_init``, ``strides``, ``gather_elements``,
  ``set_data``, ``set_dtype``, ``assign_value``.
* **Extended signatures**: a thin wrapper calls torch's original for every call that does not
  use a MindSpore form, so torch's own call forms give torch's results:

  - ``transpose()`` reverses the axes, ``transpose(2, 0, 1)`` / ``transpose((2, 0, 1))`` permute
    (forms torch rejects); ``transpose(0, 1)`` with two ints keeps torch's swap (MindSpore 2.10
    swaps too; 2.0 read two ints as a permutation).
  - ``sum`` / ``mean`` / ``all`` / ``any`` take ``keep_dims=``; ``sum`` takes ``initial=``;
    ``keepdims=True`` without an axis keeps every axis (as 1s).
  - ``max`` / ``min`` with ``axis=`` (or ``initial=``, ``where=``, ``return_indices=``,
    ``keep_dims=``) reduce like MindSpore and NumPy: a tensor, or ``(values, indices)`` with
    ``return_indices=True``. ``max(1)`` / ``max(dim=1)`` keep torch's ``(values, indices)``.
  - ``var`` / ``std`` with ``axis=``, ``ddof=`` or ``keep_dims=`` are MindSpore's (``ddof=0`` by
    default, the population variance); ``var()`` / ``var(1)`` keep torch's unbiased estimate.
  - ``repeat(n, axis=k)`` is MindSpore's (NumPy's) element repeat; ``repeat(2, 3)`` stays
    torch's tiling.
  - ``norm(ord=...)`` is MindSpore's ``ops.norm`` (``torch.linalg.norm``).
  - ``view(*shape)`` of a tensor whose strides torch's ``view`` rejects (a transposed or
    permuted one) reshapes into a copy, as MindSpore's ``view`` (a reshape) does; wherever
    torch's ``view`` works, the result is that same view (``reshape`` returns a view exactly
    when one exists). ``view(dtype)`` stays torch's.

  The ``axis=`` keyword is an undocumented NumPy alias in torch; for ``max``/``min``/``var``/
  ``std`` it now takes MindSpore's (and NumPy's) meaning. No documented torch form changes.

Kept as torch has them (MindSpore's meaning differs; recorded in tests/fixtures/ms_tensor_methods):
``size`` (an int property in MindSpore, a method in torch: use ``numel()``); the printed shape
(``torch.Size([2, 3])``; MindSpore prints ``(2, 3)``: format ``tuple(x.shape)``; ``torch.Size``
is a tuple, so comparisons and unpacking agree); the dtype's name (``torch.float32``, MindSpore
``Float32``); ``x.repeat(n)`` without ``axis=`` (torch tiles; MindSpore 2.0 repeated elements);
``x == ndarray`` (element-wise, as ``ndarray == x`` is in both; MindSpore 2.10 returns False),
``x < ndarray`` (TypeError in both); index results (``argmin``, ``argsort``) are int64
(MindSpore: int32); ``numpy()`` needs a tensor without grad on the CPU (use ``asnumpy()``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

_MS_FORMS: dict[str, Callable[..., Any]] = {}  # name -> jisu's wrapper or new method
_ORIGINALS: dict[str, Any] = {}  # name -> torch's own method (absent for new names)
_installed = False


def _torch_method(name: str) -> Any:
    """Torch's own ``torch.Tensor.<name>``, looking through a jisu wrapper already installed."""
    current = getattr(torch.Tensor, name)
    return getattr(current, "_jisu_original", current)


# Torch's own forms are passed to torch's functions (``torch.sum(x, ...)`` is ``x.sum(...)``),
# not to the unbound ``TensorBase`` methods: torch.compile traces the functions, but stops at
# a call of an unbound C method ("marked as skipped"), which broke every compiled graph that
# used x.transpose(0, 1), x.max(1) or x.repeat(2, 1) once jisu was imported.
_torch_transpose = torch.transpose
_torch_sum = torch.sum
_torch_mean = torch.mean
_torch_all = torch.all
_torch_any = torch.any
_torch_max = torch.max
_torch_min = torch.min
_torch_var = torch.var
_torch_std = torch.std
_torch_norm = torch.norm
_torch_view = _torch_method("view")  # only for the rare dtype view (no function form)
_torch_repeat_method = _torch_method("repeat")


def _torch_repeat(self: torch.Tensor, *sizes: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``repeat``: ``torch.tile`` is the same tiling where torch's ``repeat`` accepts
    the sizes (at least one per dimension), and compiles; other calls get the method, which
    raises as torch does."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, torch.Size)):
        sizes = tuple(sizes[0])
    if kwargs or len(sizes) < self.dim() or not all(isinstance(n, int) for n in sizes):
        return _torch_repeat_method(self, *sizes, **kwargs)
    return torch.tile(self, sizes)


# ---------------------------------------------------------------- dtype names


_DTYPE_CACHE: dict[Any, torch.dtype] = {}


def to_torch_dtype(dtype: Any, op: str = "astype") -> torch.dtype:
    """A torch dtype from a torch dtype, a NumPy dtype or type, a name ("float32") or a Python
    type (``int`` -> int64, ``float`` -> float32, ``bool``), as MindSpore's ``astype`` takes."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return _DTYPE_CACHE[dtype]
    except (KeyError, TypeError):
        pass
    if dtype in (bool, int, float):
        out = {bool: torch.bool, int: torch.int64, float: torch.float32}[dtype]
    elif isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype):
        out = getattr(torch, dtype)
    else:
        try:
            out = torch.from_numpy(np.empty(0, dtype=np.dtype(dtype))).dtype
        except TypeError:
            raise TypeError(
                f"{op}: dtype must be a dtype or a dtype name. Received: dtype={dtype!r}"
            ) from None
    _DTYPE_CACHE[dtype] = out
    return out


# ---------------------------------------------------------------- new names


def asnumpy(self: torch.Tensor) -> np.ndarray:
    """The tensor's values as a NumPy array (MindSpore's ``Tensor.asnumpy``): shares memory
    with a CPU tensor, else a copy on the host (a host-device sync on an accelerator)."""
    return self.detach().cpu().numpy()


def astype(self: torch.Tensor, dtype: Any, copy: bool = True) -> torch.Tensor:
    """The tensor cast to ``dtype`` (a dtype, a NumPy dtype or a name such as "float32")."""
    return self.to(to_torch_dtype(dtype), copy=copy)


def expand_dims(self: torch.Tensor, axis: int) -> torch.Tensor:
    """The tensor with a new axis of size 1 at ``axis`` (``unsqueeze``)."""
    return self.unsqueeze(axis)


def itemset(self: torch.Tensor, *args: Any) -> torch.Tensor:
    """Set one element in place: ``itemset(value)`` for a one-element tensor, ``itemset(index,
    value)`` with a flat index or an index tuple. Returns the tensor, as MindSpore does."""
    if len(args) == 1:
        index, value = 0, args[0]
    elif len(args) == 2:
        index, value = args
    else:
        raise TypeError(
            f"itemset: takes (value) or (index, value). Received: {len(args)} arguments"
        )
    with torch.no_grad():
        if isinstance(index, int):
            _torch_view(self, -1)[index] = value
        else:
            self[tuple(index)] = value
    return self


def copy(self: torch.Tensor) -> torch.Tensor:
    """A copy of the tensor (``clone``; gradients flow through it, as in MindSpore)."""
    return self.clone()


def fill(self: torch.Tensor, value: Any) -> torch.Tensor:
    """A new tensor of this shape and dtype filled with ``value`` (the tensor is unchanged;
    torch's in-place form is ``fill_``)."""
    return torch.full_like(self, value)


def ptp(self: torch.Tensor, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    """The range (max - min) along ``axis`` (all axes when None)."""
    dim = () if axis is None else axis
    return torch.amax(self, dim, keepdims) - torch.amin(self, dim, keepdims)


def init_data(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """The tensor itself: jisu's initializers fill tensors when they are made."""
    return self


def to_tensor(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """The tensor itself (MindSpore's ``initializer(...).to_tensor()``; jisu's initializer
    already returns a tensor)."""
    return self


def value(self: torch.Tensor) -> torch.Tensor:
    """The tensor itself (MindSpore's ``Parameter.value()``)."""
    return self


def _strides(self: torch.Tensor) -> tuple[int, ...]:
    """The strides in bytes, as NumPy and MindSpore give them (torch's ``stride()`` counts
    elements)."""
    return tuple(step * self.element_size() for step in self.stride())


def gather_elements(self: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """Values at ``index`` along ``dim`` (MindSpore's name for ``torch.gather``)."""
    return torch.gather(self, dim, index)


def _has_init(self: torch.Tensor) -> bool:
    """False: jisu's tensors never wait for a deferred initializer."""
    return False


def set_data(self: torch.Tensor, data: Any, slice_shape: bool = False) -> torch.Tensor:
    """Replace the values in place (MindSpore's ``Parameter.set_data``): ``data`` is cast to
    this tensor's dtype; a different shape replaces the storage. Returns the tensor."""
    if isinstance(data, float) and not (self.is_floating_point() or self.is_complex()):
        raise TypeError(
            f"set_data: a float cannot set an integer parameter of dtype {self.dtype}. "
            f"Received: data={data!r}"
        )
    if not isinstance(data, (torch.Tensor, int, float, np.ndarray)):
        raise TypeError(f"set_data: data must be a Tensor, int or float. Received: {type(data)}")
    new = torch.as_tensor(data, dtype=self.dtype, device=self.device)
    with torch.no_grad():
        if new.shape == self.shape:
            self.copy_(new)
        else:
            self.data = new.clone()
    return self


def set_dtype(self: torch.Tensor, dtype: Any) -> torch.Tensor:
    """Change the dtype in place (MindSpore's ``Parameter.set_dtype``). Returns the tensor."""
    self.data = self.data.to(to_torch_dtype(dtype, "set_dtype"))
    return self


def assign_value(self: torch.Tensor, value: Any) -> torch.Tensor:
    """Copy ``value`` into the tensor in place (MindSpore's ``assign_value``)."""
    return set_data(self, value)


# ---------------------------------------------------------------- extended signatures


def ms_transpose(self: torch.Tensor, *axes: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``transpose(dim0, dim1)``; also MindSpore's ``transpose(*axes)``: no axes
    reverses them, a permutation (as ints or one tuple) permutes."""
    if kwargs or (len(axes) == 2 and not isinstance(axes[0], (tuple, list))):
        return _torch_transpose(self, *axes, **kwargs)
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if not axes or axes == (None,):
        return self.permute(tuple(range(self.dim() - 1, -1, -1)))
    return self.permute(axes)


def ms_view(self: torch.Tensor, *shape: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``view``; a shape torch cannot view a non-contiguous tensor as gives
    ``reshape``'s copy (MindSpore's ``view`` reshapes any tensor). ``reshape`` returns the
    view torch's ``view`` would (same memory, same autograd view) wherever one exists."""
    if kwargs or (len(shape) == 1 and isinstance(shape[0], torch.dtype)):
        return _torch_view(self, *shape, **kwargs)
    return self.reshape(*shape)  # torch's view itself wherever one exists; traceable


def _keep_dims(
    kwargs: dict[str, Any], x: torch.Tensor | None = None, args: tuple = ()
) -> dict[str, Any]:
    for alias in ("keep_dims", "keepdims"):
        if alias in kwargs:
            kwargs["keepdim"] = kwargs.pop(alias)
    no_axis = not args and kwargs.get("dim") is None and kwargs.get("axis") is None
    if x is not None and no_axis and kwargs.get("keepdim") and x.dim():
        # MindSpore: keep_dims without an axis reduces every axis to 1 (torch refuses it)
        kwargs.pop("axis", None)
        kwargs["dim"] = tuple(range(x.dim()))
    return kwargs


def ms_sum(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``sum``; also ``keep_dims=`` and ``initial=`` (MindSpore)."""
    if not kwargs:
        return _torch_sum(self, *args)
    initial = kwargs.pop("initial", None)
    out = _torch_sum(self, *args, **_keep_dims(kwargs, self, args))
    return out if initial is None else out + initial


def ms_mean(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``mean``; also ``keep_dims=`` (MindSpore)."""
    if not kwargs:
        return _torch_mean(self, *args)
    return _torch_mean(self, *args, **_keep_dims(kwargs, self, args))


def ms_all(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``all``; also ``keep_dims=`` (MindSpore)."""
    if not kwargs:
        return _torch_all(self, *args)
    return _torch_all(self, *args, **_keep_dims(kwargs, self, args))


def ms_any(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``any``; also ``keep_dims=`` (MindSpore)."""
    if not kwargs:
        return _torch_any(self, *args)
    return _torch_any(self, *args, **_keep_dims(kwargs, self, args))


_MS_REDUCE_KEYS = frozenset({"axis", "keep_dims", "initial", "where", "return_indices"})


def _ms_extreme(self: torch.Tensor, args: tuple, kwargs: dict[str, Any], largest: bool) -> Any:
    name = "max" if largest else "min"
    axis = kwargs.pop("axis", args[0] if args else None)
    keepdims = kwargs.pop("keepdims", kwargs.pop("keep_dims", args[1] if len(args) > 1 else False))
    initial = kwargs.pop("initial", None)
    where = kwargs.pop("where", None)
    return_indices = kwargs.pop("return_indices", False)
    if kwargs:
        raise TypeError(f"Tensor.{name}: unknown argument(s) {sorted(kwargs)}")
    if return_indices:
        if axis is None:
            values, indices = (_torch_max if largest else _torch_min)(self.reshape(-1), 0, keepdims)
        else:
            values, indices = (_torch_max if largest else _torch_min)(self, axis, keepdims)
        return values, indices
    x = self
    if where is not None:
        if initial is None:
            raise ValueError(f"Tensor.{name}: where= needs initial=. Received: initial=None")
        x = torch.where(where, x, torch.as_tensor(initial, dtype=x.dtype, device=x.device))
    dim = () if axis is None else axis
    out = (torch.amax if largest else torch.amin)(x, dim, keepdims)
    if initial is not None:
        bound = torch.as_tensor(initial, dtype=out.dtype, device=out.device)
        out = torch.maximum(out, bound) if largest else torch.minimum(out, bound)
    return out


def ms_max(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    """Torch's ``max``; with ``axis=`` (or ``keep_dims``/``initial``/``where``/
    ``return_indices``) MindSpore's: the reduced tensor, not torch's ``(values, indices)``."""
    if not kwargs or _MS_REDUCE_KEYS.isdisjoint(kwargs):
        return _torch_max(self, *args, **kwargs)
    return _ms_extreme(self, args, kwargs, largest=True)


def ms_min(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    """Torch's ``min``; with ``axis=`` (or ``keep_dims``/``initial``/``where``/
    ``return_indices``) MindSpore's: the reduced tensor, not torch's ``(values, indices)``."""
    if not kwargs or _MS_REDUCE_KEYS.isdisjoint(kwargs):
        return _torch_min(self, *args, **kwargs)
    return _ms_extreme(self, args, kwargs, largest=False)


_MS_VAR_KEYS = frozenset({"axis", "ddof", "keep_dims"})


def _ms_var_args(args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    axis = kwargs.pop("axis", args[0] if args else None)
    ddof = kwargs.pop("ddof", args[1] if len(args) > 1 else 0)
    keepdims = kwargs.pop("keepdims", kwargs.pop("keep_dims", args[2] if len(args) > 2 else False))
    if kwargs:
        raise TypeError(f"Tensor.var/std: unknown argument(s) {sorted(kwargs)}")
    return {"dim": axis, "correction": ddof, "keepdim": keepdims}


def ms_var(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``var``; with ``axis=``/``ddof=``/``keep_dims=`` MindSpore's (``ddof=0``)."""
    if not kwargs or _MS_VAR_KEYS.isdisjoint(kwargs):
        return _torch_var(self, *args, **kwargs)
    return _torch_var(self, **_ms_var_args(args, kwargs))


def ms_std(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``std``; with ``axis=``/``ddof=``/``keep_dims=`` MindSpore's (``ddof=0``)."""
    if not kwargs or _MS_VAR_KEYS.isdisjoint(kwargs):
        return _torch_std(self, *args, **kwargs)
    return _torch_std(self, **_ms_var_args(args, kwargs))


def ms_repeat(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``repeat`` (tiling); with ``axis=`` MindSpore's ``repeat(repeats, axis)``, each
    element repeated (NumPy's ``repeat``; ``axis=None`` flattens first). Positional
    ``repeat(repeats[, axis])`` with fewer numbers than dimensions, which torch refuses, is
    MindSpore's form too (LPCNet's ``cfeat.repeat(160, 1)``)."""
    if "axis" not in kwargs:
        if kwargs or not 0 < len(args) < min(self.dim(), 3) or not isinstance(args[0], int):
            return _torch_repeat(self, *args, **kwargs)
        args, kwargs = args[:1], {"axis": args[1] if len(args) > 1 else None}
    axis = kwargs.pop("axis")
    repeats = kwargs.pop("repeats", args[0] if args else None)
    if kwargs or repeats is None or len(args) > 1:
        raise TypeError("Tensor.repeat: MindSpore's form is repeat(repeats, axis=None)")
    x = self.reshape(-1) if axis is None else self
    if isinstance(repeats, (list, tuple)):
        repeats = repeats[0] if len(repeats) == 1 else torch.tensor(repeats, device=self.device)
    return x.repeat_interleave(repeats, dim=0 if axis is None else axis)


def ms_norm(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """Torch's ``norm``; with ``ord=`` MindSpore's ``norm(ord, dim, keepdim, dtype=)``."""
    if "ord" not in kwargs:
        return _torch_norm(self, *args, **kwargs)
    ord_ = kwargs.pop("ord")
    dim = kwargs.pop("dim", args[0] if args else None)
    keepdim = kwargs.pop("keepdim", args[1] if len(args) > 1 else False)
    return torch.linalg.norm(self, ord_, dim, keepdim, dtype=kwargs.pop("dtype", None))


# ---------------------------------------------------------------- install


_NEW = {
    "asnumpy": asnumpy,
    "astype": astype,
    "expand_dims": expand_dims,
    "itemset": itemset,
    "copy": copy,
    "fill": fill,
    "ptp": ptp,
    "init_data": init_data,
    "to_tensor": to_tensor,
    "value": value,
    "has_init": property(_has_init),
    "strides": property(_strides),
    "gather_elements": gather_elements,
    "set_data": set_data,
    "set_dtype": set_dtype,
    "assign_value": assign_value,
}
_EXTENDED = {
    "transpose": ms_transpose,
    "sum": ms_sum,
    "mean": ms_mean,
    "all": ms_all,
    "any": ms_any,
    "max": ms_max,
    "min": ms_min,
    "var": ms_var,
    "std": ms_std,
    "repeat": ms_repeat,
    "norm": ms_norm,
    "view": ms_view,
}


def install() -> None:
    """Add MindSpore's tensor methods to ``torch.Tensor`` (idempotent, cheap to call again)."""
    global _installed
    if _installed:
        return
    for name, method in _NEW.items():
        if not hasattr(torch.Tensor, name):
            setattr(torch.Tensor, name, method)
            _MS_FORMS[name] = method
    for name, wrapper in _EXTENDED.items():
        original = _torch_method(name)
        wrapper._jisu_original = original  # type: ignore[attr-defined]
        # torch's own entry in torch.Tensor's dict, or None where it comes from TensorBase
        _ORIGINALS[name] = torch.Tensor.__dict__.get(name)
        setattr(torch.Tensor, name, wrapper)
        _MS_FORMS[name] = wrapper
    _installed = True


def uninstall() -> None:
    """Restore ``torch.Tensor`` as torch made it (for benchmarks and tests)."""
    global _installed
    for name, method in list(_MS_FORMS.items()):
        if torch.Tensor.__dict__.get(name) is method:
            delattr(torch.Tensor, name)
            if _ORIGINALS.get(name) is not None:
                setattr(torch.Tensor, name, _ORIGINALS[name])
        _ORIGINALS.pop(name, None)
        del _MS_FORMS[name]
    _installed = False


def installed() -> bool:
    """Whether :func:`install` has patched ``torch.Tensor``."""
    return _installed
