"""Mixed-precision levels O0-O3 (MindSpore's semantics) for PyTorch modules.

| level | low precision (fp16/bf16)                                  | weights                 |
|-------|------------------------------------------------------------|-------------------------|
| O0    | nothing                                                    | fp32                    |
| O1    | matmul/conv/linear (autocast); softmax, norms, reductions, | fp32                    |
|       | losses forced to fp32 on every device                      |                         |
| O2    | everything except the black list (norms), which computes   | fp32 masters, cast to   |
|       | in fp32 and hands low-precision outputs on                 | low precision per step  |
| O3    | everything (norms too unless keep_batchnorm_fp32)          | low precision (pure)    |

Weights stay fp32 at O1/O2: the forward uses low-precision copies made on the fly (a cast is
differentiable), so gradients and optimizer updates are fp32 and updates smaller than the
low-precision epsilon are not lost. The converted network's floating outputs are fp32.

Each level is a precision type in :mod:`jisu.amp.levels` (:func:`precision_for` makes one);
the functions here are MindSpore's entry points over them, the shared op lists and casts are
in :mod:`jisu.amp.casting`.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from .casting import (
    LOW_DTYPES,
    _check_dtype,
    _short,
    default_low_dtype,
    get_black_list,
    get_white_list,
)
from .levels import (
    LEVELS,
    BlackListPrecision,
    MixedPrecisionNetwork,
    Precision,
    WhiteListPrecision,
    _new_precision,
    _refuse_converted,
    precision_for,
    precision_type,
)

__all__ = [
    "LEVELS",
    "LOW_DTYPES",
    "MixedPrecisionNetwork",
    "Precision",
    "auto_mixed_precision",
    "custom_mixed_precision",
    "default_low_dtype",
    "describe",
    "get_black_list",
    "get_white_list",
    "precision_for",
    "print_cast_plan",
]


def describe(network: nn.Module) -> str:
    """A table of which module runs in which dtype (for a network converted by jisu.amp)."""
    if not isinstance(network, MixedPrecisionNetwork):
        return f"{type(network).__name__}: not converted (O0): everything runs as its input (fp32)"
    name, low = type(network.network).__name__, _short(network.dtype)
    header = f"{name} at {network.level}, low precision {low}"
    rows = [("module", "type", "computes in", "weights"), *network.cast_plan()]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [header] + ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    if network.precision.note:
        lines.append(network.precision.note)
    lines.append("network output: fp32")
    return "\n".join(lines)


def print_cast_plan(network: nn.Module) -> None:
    """Print :func:`describe`."""
    print(describe(network))


def auto_mixed_precision(
    network: nn.Module,
    amp_level: str = "O0",
    dtype: torch.dtype | None = None,
    keep_batchnorm_fp32: bool | None = None,
) -> nn.Module:
    """Return ``network`` running at ``amp_level`` (see the module docstring for the levels).

    Args:
        network: a torch module (its parameters on the device it will run on).
        amp_level: "O0", "O1" (or "auto"), "O2", "O3".
        dtype: torch.float16 or torch.bfloat16; None: fp16 on CUDA/NPU, bf16 on CPU.
        keep_batchnorm_fp32: run the black-list (normalization) layers in fp32; default True
            at O2, False at O3 (MindSpore's defaults).

    O0 returns ``network`` itself. O3 converts the network's weights in place (pure low
    precision, no fp32 masters); O1/O2 leave them fp32. The same as
    ``precision_for(amp_level, network, dtype, keep_batchnorm_fp32).convert_module(network)``.
    """
    _refuse_converted("auto_mixed_precision", network)
    kind = precision_type(amp_level, "auto_mixed_precision", "amp_level")
    # stacklevel 4: a float16-on-CPU warning points at the caller of auto_mixed_precision
    precision = _new_precision(
        kind, network, dtype, keep_batchnorm_fp32, "auto_mixed_precision", stacklevel=4
    )
    return precision.convert_module(network)


def custom_mixed_precision(
    network: nn.Module,
    *,
    white_list: Iterable[type[nn.Module]] | None = None,
    black_list: Iterable[type[nn.Module]] | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Module:
    """Low precision by module type: only the ``white_list`` types (their inputs and weights
    cast, their outputs cast back to fp32), or everything but the ``black_list`` types (which
    compute in fp32). Exactly one list must be given. Weights stay fp32 masters."""
    _refuse_converted("custom_mixed_precision", network)
    if (white_list is None) == (black_list is None):
        raise ValueError("custom_mixed_precision: give exactly one of white_list and black_list")
    dtype = _check_dtype("custom_mixed_precision", network, dtype)
    precision: Precision
    if white_list is not None:
        precision = WhiteListPrecision(dtype, white_list)
    else:
        precision = BlackListPrecision(dtype, black_list)
    return precision.convert_module(network)
