"""MindSpore 2.x's functional loss scalers (``amp.StaticLossScaler``, ``amp.DynamicLossScaler``)
for hand-written train steps: ``loss = scaler.scale(loss)``, ``grads = scaler.unscale(grads)``,
``scaler.adjust(all_finite(grads))``.

The scale and the counter are tensors updated in place on their device, so ``adjust`` needs no
host synchronisation (as in MindSpore, where the update is part of the graph)."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["DynamicLossScaler", "LossScaler", "StaticLossScaler"]


def _check_scale_value(where: str, scale_value: Any) -> float:
    if isinstance(scale_value, bool) or not isinstance(scale_value, (int, float)):
        raise TypeError(
            f"{where}: scale_value must be a float or an int. "
            f"Received: {type(scale_value).__name__}"
        )
    if scale_value < 1.0:
        raise ValueError(f"{where}: scale_value must be >= 1. Received: scale_value={scale_value}")
    return float(scale_value)


def _check_positive_int(where: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where}: {name} must be an int. Received: {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{where}: {name} must be > 0. Received: {name}={value}")
    return value


def _map(inputs: Any, fn: Any) -> Any:
    if isinstance(inputs, (tuple, list)):
        return type(inputs)(_map(x, fn) for x in inputs)
    return fn(inputs)


class LossScaler:
    """The base of MindSpore's functional loss scalers: ``scale``, ``unscale``, ``adjust``."""

    scale_value: torch.Tensor

    def scale(self, inputs: Any) -> Any:
        """``inputs`` (a tensor, or a tuple/list of them) times ``scale_value``, each in its
        own dtype."""
        return _map(inputs, lambda x: x * self.scale_value.to(x.dtype))

    def unscale(self, inputs: Any) -> Any:
        """``inputs`` times ``1 / scale_value`` (the reciprocal cast to each input's dtype)."""
        return _map(inputs, lambda x: x * torch.reciprocal(self.scale_value).to(x.dtype))

    def adjust(self, grads_finite: torch.Tensor) -> bool:
        """Update the scale from whether the gradients were finite."""
        raise NotImplementedError


class StaticLossScaler(LossScaler):
    """A fixed scale: ``adjust`` changes nothing and returns False.

    Args:
        scale_value: the scale, >= 1.
    """

    def __init__(self, scale_value: float) -> None:
        value = _check_scale_value("StaticLossScaler", scale_value)
        self.scale_value = torch.tensor(value, dtype=torch.float32)

    def adjust(self, grads_finite: torch.Tensor) -> bool:
        """Nothing to adjust: returns False."""
        return False


class DynamicLossScaler(LossScaler):
    """A scale that grows by ``scale_factor`` after ``scale_window`` finite steps in a row and
    shrinks by it (never below 1) after a step with inf/NaN gradients, which also restarts the
    count.

    Args:
        scale_value: the initial scale, >= 1.
        scale_factor: the factor, a positive int.
        scale_window: finite steps before the scale grows, a positive int.
    """

    def __init__(self, scale_value: float, scale_factor: int, scale_window: int) -> None:
        value = _check_scale_value("DynamicLossScaler", scale_value)
        self.scale_window = _check_positive_int("DynamicLossScaler", "scale_window", scale_window)
        self.scale_factor = _check_positive_int("DynamicLossScaler", "scale_factor", scale_factor)
        self.scale_value = torch.tensor(value, dtype=torch.float32)
        self.counter = torch.tensor(0, dtype=torch.int32)

    def adjust(self, grads_finite: torch.Tensor) -> bool:
        """Grow, keep or shrink the scale (in place, on its device, no host sync); returns
        True."""
        finite = torch.as_tensor(grads_finite, device=self.scale_value.device).to(torch.bool)
        grown = self.scale_value * self.scale_factor
        at_window = self.counter == self.scale_window - 1
        kept_or_grown = torch.where(at_window & torch.isfinite(grown), grown, self.scale_value)
        shrunk = torch.clamp(self.scale_value / self.scale_factor, min=1.0)
        self.scale_value.copy_(torch.where(finite, kept_or_grown, shrunk))
        self.counter.copy_(((self.counter + 1) % self.scale_window) * finite)
        return True
