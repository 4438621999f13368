"""MindSpore's padding rules shared by the convolution and pooling layers: argument checks
for ``pad_mode``/``padding`` and the exact "same" padding (TensorFlow's rule: the output is
``ceil(in / stride)`` long and an odd total puts the extra element after, at the bottom/right).
"""

from __future__ import annotations

import math
from typing import Any

PAD_MODES = ("same", "valid", "pad")


def check_pad_mode(owner: str, pad_mode: Any) -> str:
    """``pad_mode`` lower-cased, one of "same"/"valid"/"pad" (any case, as MindSpore)."""
    if not isinstance(pad_mode, str):
        raise TypeError(f"{owner}: pad_mode must be a str. Received pad_mode={pad_mode!r}")
    if pad_mode.lower() not in PAD_MODES:
        raise ValueError(
            f"{owner}: pad_mode must be one of 'same', 'valid', 'pad'. "
            f"Received pad_mode={pad_mode!r}"
        )
    return pad_mode.lower()


def check_nchw(owner: str, data_format: Any) -> None:
    """jisu's layers run channels-first only; MindSpore's NHWC (a GPU-only option there) is
    refused with a way out."""
    if data_format not in ("NCHW", "NCDHW"):
        raise ValueError(
            f"{owner}: only data_format='NCHW' is supported (torch layers are channels-first; "
            "for NHWC input permute it, or use torch.channels_last memory format). "
            f"Received data_format={data_format!r}"
        )


def n_tuple(owner: str, name: str, value: Any, n: int, low: int = 1) -> tuple[int, ...]:
    """An int or an n-tuple of ints >= ``low`` as an n-tuple."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * n
    if isinstance(value, list):
        value = tuple(value)
    if (
        not isinstance(value, tuple)
        or len(value) != n
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise TypeError(
            f"{owner}: {name} must be an int or a tuple of {n} ints. Received {name}={value!r}"
        )
    if any(v < low for v in value):
        raise ValueError(f"{owner}: every {name} must be >= {low}. Received {name}={value!r}")
    return value


def explicit_pads(owner: str, padding: Any, n: int) -> tuple[tuple[int, int], ...]:
    """MindSpore's ``padding`` for pad_mode "pad": an int (all sides) or, for 2-d, a 4-tuple
    (top, bottom, left, right) -> ((before, after) per spatial dim)."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        if padding < 0:
            raise ValueError(f"{owner}: padding must be >= 0. Received padding={padding}")
        return ((padding, padding),) * n
    if (
        isinstance(padding, tuple)
        and len(padding) == 2 * n
        and all(isinstance(p, int) and not isinstance(p, bool) for p in padding)
    ):
        if any(p < 0 for p in padding):
            raise ValueError(f"{owner}: every padding must be >= 0. Received padding={padding}")
        return tuple((padding[2 * i], padding[2 * i + 1]) for i in range(n))
    raise TypeError(
        f"{owner}: padding must be an int or a tuple of {2 * n} ints. Received padding={padding!r}"
    )


def same_pad(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """(before, after) padding of pad_mode "same" for one spatial dim of length ``size``."""
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + dilation * (kernel - 1) + 1 - size, 0)
    return total // 2, total - total // 2


def torch_pad_arg(pads: tuple[tuple[int, int], ...]) -> list[int]:
    """Per-dim (before, after) pairs as ``torch.nn.functional.pad``'s flat list (last dim
    first)."""
    return [p for pair in reversed(pads) for p in pair]
