"""``History``: the loss and the evaluation metrics of every epoch (MindSpore's, Keras')."""

from __future__ import annotations

from .base import Callback, RunContext, loss_value


class History(Callback):
    """Records, per epoch, the last step's loss (``history["net_output"]``) and the evaluation
    metrics of ``fit`` (under their names); ``epoch["epoch"]`` lists the epochs (as
    MindSpore's History)."""

    def __init__(self) -> None:
        self.epoch: dict[str, list[int]] = {"epoch": []}
        self.history: dict[str, list[float]] = {}

    def on_train_begin(self, run_context: RunContext) -> None:
        self.epoch = {"epoch": []}

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        self.epoch["epoch"].append(params.cur_epoch_num)
        values = {"net_output": loss_value(params.net_outputs), **(params.get("metrics") or {})}
        for name, value in values.items():
            self.history.setdefault(name, []).append(value)
