"""``ReduceLROnPlateau``: lowers the learning rate when a monitored value stopped improving."""

from __future__ import annotations

from ..rates import get_lr, set_lr
from .base import Callback, RunContext, report
from .plateau import _Plateau


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by ``factor`` when ``monitor`` has not improved for
    ``patience`` epochs (not below ``min_lr``; then waits ``cooldown`` epochs)."""

    def __init__(
        self,
        monitor: str = "eval_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0.0,
    ) -> None:
        if not 0 < factor < 1:
            raise ValueError(f"ReduceLROnPlateau: factor must be in (0, 1). Received {factor}")
        self._plateau = _Plateau("ReduceLROnPlateau", monitor, min_delta, patience, mode)
        self.factor, self.verbose, self.cooldown, self.min_lr = factor, verbose, cooldown, min_lr
        self._cooling = 0

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        p = self._plateau
        value = p._value(run_context)
        if value is None:
            return
        if self._cooling > 0:
            self._cooling -= 1
            p.wait = 0
        if p._improved(value):
            p.best, p.wait = value, 0
            return
        p.wait += 1
        if p.wait > p.patience - 1 and self._cooling == 0:
            optimizer = run_context.original_args().optimizer
            for group in optimizer.param_groups:
                set_lr(group, max(get_lr(group) * self.factor, self.min_lr))
            if self.verbose:
                report(
                    f"ReduceLROnPlateau: learning rate now {get_lr(optimizer.param_groups[0]):g}"
                )
            self._cooling, p.wait = self.cooldown, 0
