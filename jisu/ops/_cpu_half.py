"""float16 convolutions on CPU, computed in float32.

torch's CPU kernels have no fast float16 convolution backward (a 3x3 conv's backward measured
about 80x slower in float16 than in float32), and the model zoo runs whole networks in float16
(``to_float(mstype.float16)``, ``Conv2d(..., dtype=float16)`` data). A float16 convolution on
CPU therefore runs in float32 on the float16 values and rounds its result to float16: the output
keeps MindSpore's dtype, and its values are those of a float16 kernel accumulating in float32
(within one float16 rounding step)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def conv(fn: Callable[..., torch.Tensor], x: torch.Tensor, *args: Any) -> torch.Tensor:
    """``fn(x, *args)`` (a torch convolution), in float32 when ``x`` is float16 on CPU."""
    if x.dtype != torch.float16 or x.device.type != "cpu":
        return fn(x, *args)
    wide = [
        a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.float16 else a for a in args
    ]
    return fn(x.float(), *wide).to(torch.float16)
