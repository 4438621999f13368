"""Loss scaling whose overflow check and update run on the device (no host sync per step).

A loss-scale manager keeps its scale, its clean-step counter and its consecutive-overflow
counter as tensors on the gradients' device. Each step :meth:`LossScaleManager.unscale_`
divides the gradients by the scale and sets a found-inf flag (one fused kernel, as PyTorch's
GradScaler uses), and :meth:`LossScaleManager.update_` applies MindSpore's rule with tensor
ops. Nothing calls ``.item()`` in the step; the host reads the scale only when asked
(:meth:`get_loss_scale`) and the collapse guard every ``check_interval`` steps.
"""

from __future__ import annotations

from typing import Any

import torch


class LossScaleCollapsedError(RuntimeError):
    """Too many consecutive steps had inf/NaN gradients: training is not progressing."""


class LossScaleManager:
    """Base class: a scale on the device, a found-inf check, and an update rule.

    Args:
        loss_scale: the initial scale.
        drop_overflow_update: skip (not apply) a step whose gradients contain inf/NaN.
        max_consecutive_overflows: raise :class:`LossScaleCollapsedError` beyond this many
            overflowing steps in a row (checked lazily, every ``check_interval`` steps).
    """

    def __init__(
        self,
        loss_scale: float,
        drop_overflow_update: bool = True,
        max_consecutive_overflows: int = 1000,
        check_interval: int = 100,
    ) -> None:
        if not loss_scale >= 1.0:
            raise ValueError(
                f"{type(self).__name__}: loss_scale must be >= 1. Received {loss_scale}"
            )
        if max_consecutive_overflows < 1 or check_interval < 1:
            raise ValueError(
                f"{type(self).__name__}: max_consecutive_overflows and check_interval must be "
                f">= 1. Received {max_consecutive_overflows}, {check_interval}"
            )
        self._initial = float(loss_scale)
        self.drop_overflow_update = bool(drop_overflow_update)
        self.max_consecutive_overflows = int(max_consecutive_overflows)
        self.check_interval = int(check_interval)
        self._scale: torch.Tensor | None = None  # created on the gradients' device
        self._good: torch.Tensor | None = None  # clean steps since the last overflow/growth
        self._bad: torch.Tensor | None = None  # consecutive overflowing steps
        self._steps = 0  # host-side count of updates (for the lazy guard)

    # ------------------------------------------------------------------ device state
    def _on(self, device: torch.device) -> None:
        if self._scale is None:
            self._scale = torch.full((), self._initial, dtype=torch.float32, device=device)
            self._good = torch.zeros((), dtype=torch.int32, device=device)
            self._bad = torch.zeros((), dtype=torch.int32, device=device)
        elif self._scale.device != device:
            self._scale, self._good, self._bad = (
                t.to(device) for t in (self._scale, self._good, self._bad)
            )

    def scale_tensor(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """The current scale, a 0-d float32 tensor on ``device`` (no sync)."""
        self._on(torch.device(device))
        return self._scale

    def scale(self, loss: torch.Tensor) -> torch.Tensor:
        """``loss * scale`` in fp32, ready for ``backward()``."""
        return loss.float() * self.scale_tensor(loss.device)

    def unscale_(self, grads: list[torch.Tensor]) -> torch.Tensor:
        """Divide ``grads`` by the scale in place; return the found-inf flag (a 0-d float
        tensor, 1.0 when any gradient is inf/NaN, as fused optimizers take it), on device."""
        if not grads:
            raise ValueError("loss scaling: no gradients to unscale (did backward() run?)")
        device = grads[0].device
        self._on(device)
        found_inf = torch.zeros((), dtype=torch.float32, device=device)
        inv_scale = self._scale.double().reciprocal().float()
        by_device: dict[tuple, list[torch.Tensor]] = {}
        for g in grads:
            by_device.setdefault((g.device, g.dtype), []).append(g)
        for (grad_device, _), group in by_device.items():
            flag = found_inf if grad_device == device else found_inf.to(grad_device)
            torch._amp_foreach_non_finite_check_and_unscale_(group, flag, inv_scale.to(grad_device))
            if flag is not found_inf:
                found_inf.copy_(torch.maximum(found_inf, flag.to(device)))
        return found_inf

    def update_(self, found_inf: torch.Tensor) -> None:
        """Advance the scale after a step: :meth:`update_on_device_` then :meth:`count_step`."""
        self.update_on_device_(found_inf)
        self.count_step()

    def update_on_device_(self, found_inf: torch.Tensor) -> None:
        """The step's device part of the update: the overflow streak and the scale, updated
        in place (what a captured CUDA graph replays)."""
        overflow = found_inf.reshape(()) > 0
        self._bad.copy_(torch.where(overflow, self._bad + 1, torch.zeros_like(self._bad)))
        self._update_scale(overflow)

    def count_step(self) -> None:
        """The step's host part: count it, and every ``check_interval`` steps check the
        overflow streak (one read from the device). A captured step runs it after each replay."""
        self._steps += 1
        if self._steps % self.check_interval == 0:
            self.check()

    def _update_scale(self, overflow: torch.Tensor) -> None:
        """Fixed scale: nothing to change."""

    def check(self) -> None:
        """Raise :class:`LossScaleCollapsedError` if the overflow streak is too long (reads
        one number from the device: call it rarely)."""
        if self._bad is not None:
            bad = int(self._bad.item())
            if bad > self.max_consecutive_overflows:
                raise LossScaleCollapsedError(
                    f"{type(self).__name__}: the gradients overflowed (inf/NaN) in {bad} "
                    f"consecutive steps (limit {self.max_consecutive_overflows}); the loss scale "
                    f"is now {self.get_loss_scale():g} and no step is being applied. Check the "
                    "learning rate and the data for NaN/inf, or train in bfloat16 (no scaling)."
                )

    # ------------------------------------------------------------------ host API
    def get_loss_scale(self) -> float:
        """The current scale (reads it from the device)."""
        return self._initial if self._scale is None else float(self._scale.item())

    def get_drop_overflow_update(self) -> bool:
        return self.drop_overflow_update

    def update_loss_scale(self, overflow: bool) -> None:
        """MindSpore's host-side update: one step with (``True``) or without an overflow."""
        device = self._scale.device if self._scale is not None else torch.device("cpu")
        self._on(device)
        self.update_(torch.tensor([1.0 if overflow else 0.0], device=device))

    def state_dict(self) -> dict[str, Any]:
        """Scale and counters (host values), for checkpoints."""
        self._on(self._scale.device if self._scale is not None else torch.device("cpu"))
        return {
            "loss_scale": float(self._scale.item()),
            "good_steps": int(self._good.item()),
            "consecutive_overflows": int(self._bad.item()),
            "steps": self._steps,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        device = self._scale.device if self._scale is not None else torch.device("cpu")
        self._scale = torch.tensor(float(state["loss_scale"]), dtype=torch.float32, device=device)
        self._good = torch.tensor(int(state["good_steps"]), dtype=torch.int32, device=device)
        self._bad = torch.tensor(
            int(state["consecutive_overflows"]), dtype=torch.int32, device=device
        )
        self._steps = int(state.get("steps", 0))


class FixedLossScaleManager(LossScaleManager):
    """A constant scale (MindSpore's ``FixedLossScaleManager``). With
    ``drop_overflow_update=False`` an overflowing step is applied anyway (as in MindSpore)."""

    def __init__(
        self,
        loss_scale: float = 128.0,
        drop_overflow_update: bool = True,
        max_consecutive_overflows: int = 1000,
        check_interval: int = 100,
    ) -> None:
        super().__init__(
            loss_scale, drop_overflow_update, max_consecutive_overflows, check_interval
        )

    def get_update_cell(self) -> Any:
        """MindSpore's update cell for a hand-written loss-scaled step: a
        ``FixedLossScaleUpdateCell`` when overflowing steps are dropped, else None."""
        if not self.drop_overflow_update:
            return None
        from ..nn.wrap.loss_scale import FixedLossScaleUpdateCell  # nn builds on amp

        return FixedLossScaleUpdateCell(self._initial)


class DynamicLossScaleManager(LossScaleManager):
    """MindSpore's dynamic rule: an overflow divides the scale by ``scale_factor`` (not below
    1) and skips the step; ``scale_window`` clean steps in a row multiply it by
    ``scale_factor`` (unless that would overflow fp32)."""

    def __init__(
        self,
        init_loss_scale: float = 2.0**24,
        scale_factor: float = 2.0,
        scale_window: int = 2000,
        max_consecutive_overflows: int = 1000,
        check_interval: int = 100,
    ) -> None:
        if scale_factor <= 1 or scale_window < 1:
            raise ValueError(
                "DynamicLossScaleManager: scale_factor must be > 1 and scale_window >= 1. "
                f"Received scale_factor={scale_factor}, scale_window={scale_window}"
            )
        super().__init__(init_loss_scale, True, max_consecutive_overflows, check_interval)
        self.scale_factor = float(scale_factor)
        self.scale_window = int(scale_window)

    def get_update_cell(self) -> Any:
        """MindSpore's update cell for a hand-written loss-scaled step (``Transformer``'s
        ``TrainOneStepWithLossScaleCell(..., scale_update_cell=...)``): a
        ``DynamicLossScaleUpdateCell`` starting at the initial scale, with this rule."""
        from ..nn.wrap.loss_scale import DynamicLossScaleUpdateCell  # nn builds on amp

        return DynamicLossScaleUpdateCell(self._initial, self.scale_factor, self.scale_window)

    def _update_scale(self, overflow: torch.Tensor) -> None:
        good = torch.where(overflow, torch.zeros_like(self._good), self._good + 1)
        grown = self._scale * self.scale_factor
        grow = (good >= self.scale_window) & torch.isfinite(grown)
        shrunk = torch.clamp(self._scale / self.scale_factor, min=1.0)
        self._scale.copy_(torch.where(overflow, shrunk, torch.where(grow, grown, self._scale)))
        self._good.copy_(torch.where(good >= self.scale_window, torch.zeros_like(good), good))
