"""MindSpore's ``mindspore.mint.nn``: torch's layers under the same names; ``Linear`` also takes
MindSpore's ``weight_init`` and ``bias_init`` (jisu's initializers)."""

from __future__ import annotations

from typing import Any

import torch

from .._names import LAYERS, refused
from . import functional  # noqa: F401  (mint.nn.functional)

globals().update({name: getattr(torch.nn, name) for name in LAYERS if name != "Linear"})


class Linear(torch.nn.Linear):
    """``torch.nn.Linear`` with MindSpore's ``weight_init`` / ``bias_init`` (an initializer, its
    name such as "normal", a number or a tensor; None keeps torch's default initialization)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        weight_init: Any = None,
        bias_init: Any = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(in_features, out_features, bias, dtype=dtype)
        from ...common.initializer import initializer

        with torch.no_grad():
            if weight_init is not None:
                self.weight.copy_(
                    initializer(weight_init, tuple(self.weight.shape), self.weight.dtype)
                )
            if bias_init is not None and self.bias is not None:
                self.bias.copy_(initializer(bias_init, tuple(self.bias.shape), self.bias.dtype))


__all__ = sorted({*LAYERS, "functional"})


def __getattr__(name: str) -> Any:
    raise refused(__name__, name)
