"""MindSpore's ``mindspore.mint``: torch-like functions, layers (``mint.nn``), functional ops
(``mint.nn.functional``) and optimizers (``mint.optim``), which on jisu are torch's own.

MindSpore 2.x added ``mint`` with PyTorch's names and arguments (``dim``, ``keepdim``), so here
each name is the torch function of the same name (``mint.sum is torch.sum``,
``mint.nn.functional.softmax is torch.nn.functional.softmax``), except ``mint.nn.Linear``, which
also takes MindSpore's ``weight_init``/``bias_init``. Collective communication
(``mint.all_reduce``, ``mint.init_process_group``, ...) and Ascend-only kernels are refused by
name: use ``jisu.communication`` or ``torch.distributed``.
"""

from __future__ import annotations

from typing import Any

from . import nn, optim
from ._names import FUNCTIONS, LAYERS, lookup, refused

globals().update({name: lookup(name) for name in FUNCTIONS})
globals().update({name: getattr(nn, name) for name in LAYERS})
globals().update({name: getattr(optim, name) for name in optim.__all__})

__all__ = sorted({*FUNCTIONS, *LAYERS, *optim.__all__, "nn", "optim"})


def __getattr__(name: str) -> Any:
    raise refused(__name__, name)
