"""A parameter group's learning rate, read and written whether it is a float or a tensor.

A rate is a float for most optimizers and a 0-d tensor for some (a capturable optimizer's on
CUDA, a ``jisu.nn`` optimizer's dynamic rate). Writing fills a tensor in place, so a CUDA graph
that reads it keeps reading the current rate, and neither direction syncs unless the tensor is
on a device and read.
"""

from __future__ import annotations

from typing import Any

import torch


def get_lr(group: dict[str, Any]) -> float:
    """A parameter group's rate as a float (a host read when it is a device tensor)."""
    lr = group["lr"]
    return float(lr.item()) if isinstance(lr, torch.Tensor) else float(lr)


def set_lr(group: dict[str, Any], value: float) -> None:
    """Set a parameter group's rate: in place when it is a tensor, else as a float."""
    lr = group["lr"]
    if isinstance(lr, torch.Tensor):
        lr.fill_(value)
    else:
        group["lr"] = float(value)
