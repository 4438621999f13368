"""``EarlyStopping``: stops training when a monitored value stopped improving."""

from __future__ import annotations

from .base import Callback, RunContext, report
from .plateau import _Plateau


class EarlyStopping(Callback):
    """Stops training when ``monitor`` (an eval metric, ``eval_<metric>``, or ``loss``: the
    training loss, as in MindSpore) has not improved by ``min_delta`` for ``patience`` epochs;
    optionally restores the best weights."""

    def __init__(
        self,
        monitor: str = "eval_loss",
        min_delta: float = 0.0,
        patience: int = 0,
        verbose: bool = False,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
    ) -> None:
        self._plateau = _Plateau("EarlyStopping", monitor, min_delta, patience, mode)
        self.verbose, self.baseline, self.restore_best_weights = (
            verbose,
            baseline,
            restore_best_weights,
        )
        self.stopped_epoch = 0
        self._best_weights: dict | None = None

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        p = self._plateau
        value = p._value(run_context)
        if value is None:
            return
        params = run_context.original_args()
        if p.best is None and self.baseline is not None:  # the first value must beat it
            improved = value < self.baseline if p.mode == "min" else value > self.baseline
        else:
            improved = p._improved(value)
        if improved:
            p.best, p.wait = value, 0
            if self.restore_best_weights:
                self._best_weights = {
                    k: v.detach().clone() for k, v in params.network.state_dict().items()
                }
            return
        p.wait += 1
        if p.wait > p.patience:
            self.stopped_epoch = params.cur_epoch_num
            run_context.request_stop()
            if self.verbose:
                report(f"EarlyStopping: epoch {self.stopped_epoch}: {p.monitor} stopped improving")
            if self.restore_best_weights and self._best_weights is not None:
                params.network.load_state_dict(self._best_weights)
