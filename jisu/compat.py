"""Helpers for code ported from MindSpore as it stands.

MindSpore's tensors have ``asnumpy()``, and training loops call it everywhere; jisu's
pipelines hand out ``torch.Tensor`` s (``output_numpy=True`` gives NumPy arrays instead).
:func:`add_asnumpy` gives every torch tensor an ``asnumpy()`` method, so such loops run
unchanged. It adds one Python method to ``torch.Tensor`` — no subclass, so the training
step's torch ops do not slow down (a tensor subclass would route every op through
``__torch_function__``).
"""

from __future__ import annotations

from typing import Any


def _asnumpy(self: Any) -> Any:
    """The tensor's values as a NumPy array (MindSpore's ``Tensor.asnumpy``): shares memory
    with a CPU tensor that needs no gradient, else a copy on the host."""
    return self.detach().cpu().numpy()


def add_asnumpy() -> None:
    """Give ``torch.Tensor`` an ``asnumpy()`` method (idempotent; a method torch itself
    defines one day is left alone)."""
    import torch

    current = getattr(torch.Tensor, "asnumpy", None)
    if current is None:
        torch.Tensor.asnumpy = _asnumpy  # type: ignore[attr-defined]
