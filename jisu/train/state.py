"""``TrainState``: the typed state of a ``Model.train`` run or a ``Model.eval`` pass, which
callbacks receive as ``cb_params``.

The fields are what the training loop maintains (where the run stands, its clocks, the last
step's outputs) and what it trains (network, optimizer, ...). Callbacks read them as
attributes, MindSpore's way (``run_context.original_args().cur_step_num``), or by name
(``params.get("metrics")``, ``params["cur_step_num"]``): a ``TrainState`` is also a mutable
mapping of its attributes, as MindSpore's dict-based ``cb_params`` is. A callback may set its
own attributes on it (``params.my_value = 1``); they are then attributes and keys like the
fields.

Evaluation uses the same type with ``mode == "eval"`` and the fields MindSpore's evaluation
sets (``eval_network``, ``valid_dataset``, ``batch_num``, ``cur_step_num``, ``net_outputs``,
``metrics``, ``dataset_sink_mode``), plus the same clocks and ``samples_seen``; the training
fields it does not use keep their defaults. ``Model.fit``'s evaluations have a state of
their own: the training's is never changed by them but for ``metrics``.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


@dataclass(eq=False)
class TrainState(MutableMapping):
    """Where a training run (or an evaluation pass, ``mode`` "eval") stands; ``cb_params``
    of ``Model.train``, ``Model.fit`` and ``Model.eval``.

    Counters follow MindSpore: ``cur_epoch_num`` is the 1-based epoch in progress (the epochs
    done before the first, at ``on_train_begin``), ``cur_step_num`` the steps done since the
    start of training (a resumed run counts on from its checkpoint), ``step_in_epoch`` those
    of the current epoch, ``batch_num`` the steps of an epoch (None when the data's size is
    unknown). ``epoch_ended`` is True once the epoch's last step is done: from that step's
    ``on_train_step_end`` (the loop knows it is the last: the epoch's steps ran, or the data
    ended) to ``on_train_epoch_end``, and before the first epoch; it is False again at
    ``on_train_epoch_begin``, and stays False for an epoch stopped before its end.
    ``dispatched_step_num`` counts the steps dispatched to the device: ``cur_step_num`` in
    step mode; in sink mode it runs ahead while a sink's steps are dispatched
    (``on_train_step_dispatched`` reads it there), and ``cur_step_num`` catches up as the
    sink's callbacks are replayed. ``learning_rate`` is, from ``on_train_step_end`` (and in
    every replayed hook), the rate the step at hand trained with: the first parameter
    group's, recorded as the step was dispatched.

    The clocks are cumulative seconds: ``data_wait_seconds`` waiting for batches,
    ``copy_seconds`` copying them to the device, ``step_seconds`` in the train step (forward,
    backward, update; in sink mode also the sink's one read of its losses). In sink mode a
    sink's step callbacks are replayed at its end, when its clocks are complete, and
    ``weights_current`` is False but at its last step: the weights are those after it.
    ``step_capture`` says, in sink mode, whether the step is captured as a CUDA graph and if
    not why (:class:`~jisu.train.capture.StepCapture`); on CUDA, ``sink_device_seconds`` sums
    the device time of the sinks (CUDA events around each), ``sink_first_launch_seconds`` the
    host time of each sink's first step call and ``sinks`` counts them: a first call about as
    long as a step's device time means the step is launch-bound.

    In evaluation (``mode`` "eval") ``cur_step_num`` counts the pass's steps from 0,
    ``batch_num`` is the dataset's size (None when unknown), ``net_outputs`` is the eval
    network's output of the step at hand and ``metrics`` is set once the pass is done (from
    ``on_eval_epoch_end``); ``step_seconds`` is the time in the eval network and the metrics'
    updates.
    """

    # what is trained (fixed for the run)
    model: Any = field(default=None, repr=False)
    network: nn.Module | None = field(default=None, repr=False)
    train_network: Any = field(default=None, repr=False)
    optimizer: torch.optim.Optimizer | None = field(default=None, repr=False)
    loss_fn: Any = field(default=None, repr=False)
    loss_scale_manager: Any = field(default=None, repr=False)
    train_dataset: Any = field(default=None, repr=False)
    eval_network: Any = field(default=None, repr=False)  # evaluation's (mode "eval")
    valid_dataset: Any = field(default=None, repr=False)  # evaluation's (mode "eval")
    device: torch.device | None = None
    amp_level: str = "O0"
    graph_mode: bool = False
    dataset_sink_mode: bool = False
    sink_size: int = -1
    mode: str = "train"  # or "eval"
    epoch_num: int = 0
    batch_num: int | None = None
    # where the run stands
    cur_epoch_num: int = 0
    cur_step_num: int = 0
    dispatched_step_num: int = 0
    step_in_epoch: int = 0
    epoch_ended: bool = False
    samples_seen: int = 0
    dataset_state: dict | None = None
    net_outputs: Any = field(default=None, repr=False)
    learning_rate: Any = None  # the rate the step trained with (first group; float or tensor)
    weights_current: bool = True
    metrics: dict | None = None
    # the loop's clocks
    data_wait_seconds: float = 0.0
    copy_seconds: float = 0.0
    step_seconds: float = 0.0
    # sink mode on CUDA: how the step ran, and the sinks' launch clocks (the doctor's
    # launch-bound check): the device time of the sinks' steps, the host time of each sink's
    # first step call (launched into an idle queue, so never slowed by a full one) and the
    # sinks counted
    step_capture: Any = None  # a jisu.train.capture.StepCapture in sink mode
    sink_device_seconds: float = 0.0
    sink_first_launch_seconds: float = 0.0
    sinks: int = 0

    def begin_step(self) -> None:
        """Count one more step, in the run and in the epoch."""
        self.cur_step_num += 1
        self.step_in_epoch += 1

    def resume_point(self) -> tuple[int, int]:
        """``(epoch, step_in_epoch)`` at which a run resumed from here starts, Keras' numbers:
        ``epoch`` is the whole epochs done (the 0-based index of the epoch to run, what
        ``initial_epoch`` takes) and ``step_in_epoch`` the steps of it already done. Once an
        epoch's last step is done that is ``(cur_epoch_num, 0)``, the next epoch: a
        checkpoint named after epoch N (1-based) at its end holds ``epoch == N``; inside
        epoch N it is ``(N - 1, step_in_epoch)``."""
        epoch, step = self.cur_epoch_num - 1, self.step_in_epoch
        if self.epoch_ended or (self.batch_num and step >= self.batch_num):
            epoch, step = epoch + 1, 0
        return epoch, step

    # the mapping view: the instance's attributes, fields and a callback's own alike
    def __getitem__(self, name: str) -> Any:
        try:
            return vars(self)[name]
        except KeyError:
            raise KeyError(name) from None

    def __setitem__(self, name: str, value: Any) -> None:
        setattr(self, name, value)

    def __delitem__(self, name: str) -> None:
        if name not in vars(self):
            raise KeyError(name)
        delattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(vars(self)))

    def __len__(self) -> int:
        return len(vars(self))
