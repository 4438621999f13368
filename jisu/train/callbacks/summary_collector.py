"""``SummaryCollector`` (MindSpore's name): the training's scalars in TensorBoard event files.

It writes on rank 0 only (every rank runs the callbacks under ``torchrun``) and measures an
epoch as :mod:`~jisu.train.callbacks.epoch_meter` says.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable
from typing import Any

from ...distributed import is_main_process
from .base import Callback, RunContext, loss_value
from .epoch_meter import EpochMeter, scalar, step_lr

_INSTALL_HINT = 'pip install "jisu[tensorboard]"'


def _summary_writer_class() -> type:
    """torch's ``SummaryWriter``, or an ImportError that names the extra to install."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise ImportError(
            "SummaryCollector writes TensorBoard event files and needs the tensorboard "
            f"package, which is not installed: {_INSTALL_HINT} (or pip install tensorboard)"
        ) from err
    return SummaryWriter


# collect_specified_data: what jisu collects (default on) and MindSpore's keys it cannot
_COLLECTED = ("collect_metric", "collect_lr", "collect_throughput", "collect_loss_scale")
_NOT_SUPPORTED = (
    "collect_graph",
    "collect_train_lineage",
    "collect_eval_lineage",
    "collect_input_data",
    "collect_dataset_graph",
    "histogram_regular",
    "collect_landscape",
)


class SummaryCollector(Callback):
    """Writes TensorBoard event files while training: the loss and learning rate per step,
    the evaluation metrics, throughput and data-stall share per epoch, and the loss scale.

    MindSpore's ``SummaryCollector``, writing what TensorBoard reads (``tensorboard --logdir
    summary_dir``). Scalars (tag: when, at which step):

    =============================  =================================================
    ``train/loss``                 every ``collect_freq``-th step and the run's first
    ``train/lr``                   with the loss: the first parameter group's rate
                                   the step used (read before the step)
    ``train/loss_scale``           with the loss when the scale is current (always
                                   in eager mode; at a sink's last step in sink
                                   mode), and at every epoch's end; only with a loss
                                   scale manager; the scale after the step
    ``train/samples_per_second``   every epoch's end
    ``train/data_wait_share``      every epoch's end: the share of the epoch's time
                                   spent waiting for batches (0 = the input pipeline
                                   keeps up, 1 = the model waits on it)
    ``eval/<metric>``              every epoch ``Model.fit`` evaluated
    ``epoch``                      every epoch's end: the epoch number
    =============================  =================================================

    Every scalar's step is ``cb_params.cur_step_num`` (per-epoch ones at the epoch's last
    step), so all charts share one axis. A step is collected when ``cur_step_num %
    collect_freq == 0``, and the first step of each ``train`` call always (as MindSpore).
    Unlike MindSpore, the unit stays the step in sink mode too: jisu replays every step's loss
    after a sink, so collecting a step costs nothing there; in eager mode reading a collected
    step's loss (and loss scale) is a host-device synchronisation, hence ``collect_freq``.

    Files: one event file per process and writer in ``summary_dir`` (created if missing), on
    rank 0 only. It is flushed after the first collected step and at every epoch's end, and
    closed at ``on_train_end``, and when training raises (jisu's ``on_train_exception``), so
    the steps up to the error are on disk as the traceback prints. A collector reused for
    another ``train`` call keeps writing the same open file, or a new one after a close; it is
    also a context manager that closes the file as the block ends.

    Args:
        summary_dir: the folder of the event files.
        collect_freq: collect the loss every this many steps (an int >= 1). Default 10.
        num_process: accepted for MindSpore compatibility; no effect (one writer thread).
        collect_specified_data: a dict of what to collect, each True or False:
            ``collect_metric`` (the loss per step and the evaluation metrics),
            and jisu's ``collect_lr``, ``collect_throughput`` (samples/s and data-stall
            share), ``collect_loss_scale``. MindSpore's other keys (``collect_graph``,
            ``collect_input_data``, ``histogram_regular``, ...) are refused unless False or
            None: jisu writes scalars only. None: collect everything.
        keep_default_action: with True (default) what ``collect_specified_data`` leaves out
            is collected; with False only what it sets True.
        custom_lineage_data, collect_tensor_freq, max_file_size, export_options: MindSpore's
            MindInsight features; only None is accepted.

    Raises:
        ImportError: the tensorboard package is missing (``pip install "jisu[tensorboard]"``).
        ValueError, TypeError: a bad argument, or one jisu does not support, naming it.

    Example:
        >>> collector = SummaryCollector("runs/exp1", collect_freq=20)  # doctest: +SKIP
        >>> model.fit(10, train, valid, callbacks=[collector])  # doctest: +SKIP
    """

    acts_on_training = False  # reads only: sink mode need not watch it

    def __init__(
        self,
        summary_dir: str | os.PathLike,
        collect_freq: int = 10,
        num_process: int = 32,
        collect_specified_data: dict[str, Any] | None = None,
        keep_default_action: bool = True,
        custom_lineage_data: dict | None = None,
        collect_tensor_freq: int | None = None,
        max_file_size: int | None = None,
        export_options: dict | None = None,
    ) -> None:
        if not isinstance(summary_dir, (str, os.PathLike)) or not os.fspath(summary_dir):
            raise TypeError(
                f"SummaryCollector: summary_dir must be a folder path (str or os.PathLike). "
                f"Received summary_dir={summary_dir!r}"
            )
        for name, value in (("collect_freq", collect_freq), ("num_process", num_process)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"SummaryCollector: {name} must be an int >= 1. Received {name}={value!r}"
                )
        if not isinstance(keep_default_action, bool):
            raise TypeError(
                "SummaryCollector: keep_default_action must be a bool. "
                f"Received keep_default_action={keep_default_action!r}"
            )
        for name, value in (
            ("custom_lineage_data", custom_lineage_data),
            ("collect_tensor_freq", collect_tensor_freq),
            ("max_file_size", max_file_size),
            ("export_options", export_options),
        ):
            if value is not None:
                raise ValueError(
                    f"SummaryCollector: {name} is a MindInsight feature jisu does not support "
                    f"(it writes TensorBoard scalars); leave it at None. Received {name}={value!r}"
                )
        self._collect = self._what_to_collect(collect_specified_data, keep_default_action)
        self._writer_class = _summary_writer_class()  # fails here, not at the first epoch
        self.summary_dir = os.fspath(summary_dir)
        self.collect_freq = collect_freq
        self._clock: Callable[[], float] = time.perf_counter  # tests put a fake clock here
        self._meter = EpochMeter(self._clock)
        self._writer: Any = None
        self._finalizer: weakref.finalize | None = None
        self._first_done = False
        self._scale_step: int | None = None  # the last step the loss scale was written at

    @staticmethod
    def _what_to_collect(specified: dict[str, Any] | None, keep_default: bool) -> dict[str, bool]:
        if specified is None:
            specified = {}
        if not isinstance(specified, dict):
            raise TypeError(
                "SummaryCollector: collect_specified_data must be a dict or None. "
                f"Received collect_specified_data={specified!r}"
            )
        for key, value in specified.items():
            if key in _NOT_SUPPORTED:
                if value not in (None, False):
                    raise ValueError(
                        f"SummaryCollector: collect_specified_data[{key!r}] is not supported "
                        "by jisu (it writes TensorBoard scalars); leave it out or set it to "
                        f"False. Received {key}={value!r}"
                    )
            elif key not in _COLLECTED:
                raise ValueError(
                    f"SummaryCollector: unknown collect_specified_data key {key!r}; jisu "
                    f"collects {list(_COLLECTED)}"
                )
            elif not isinstance(value, bool):
                raise TypeError(
                    f"SummaryCollector: collect_specified_data[{key!r}] must be a bool. "
                    f"Received {key}={value!r}"
                )
        return {key: bool(specified.get(key, keep_default)) for key in _COLLECTED}

    # ------------------------------------------------------------------ the file
    def _open(self) -> None:
        if self._writer is None:
            self._writer = self._writer_class(log_dir=self.summary_dir)
            # closed at exit or when the collector is collected, if training never ended
            self._finalizer = weakref.finalize(self, self._writer.close)

    def flush(self) -> None:
        """Write what is pending to the event file."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flush and close the event file (idempotent); a later ``train`` opens a new one."""
        if self._writer is not None:
            self._finalizer.detach()
            self._writer.close()
            self._writer = self._finalizer = None

    def __enter__(self) -> SummaryCollector:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _due(self, step: int) -> bool:
        return not self._first_done or step % self.collect_freq == 0

    def _add(self, tag: str, value: Any, step: int) -> None:
        number = scalar(value)
        if number is not None:
            self._writer.add_scalar(tag, number, global_step=step)

    def _add_loss_scale(self, params: Any, step: int) -> None:
        manager = params.get("loss_scale_manager")
        if manager is None or not self._collect["collect_loss_scale"] or self._scale_step == step:
            return
        # host-device sync: the scale lives on the device
        self._add("train/loss_scale", manager.get_loss_scale(), step)
        self._scale_step = step

    # ------------------------------------------------------------------ hooks
    def on_train_begin(self, run_context: RunContext) -> None:
        if not is_main_process():
            return
        self._open()
        self._meter.clock = self._clock
        self._first_done = False
        self._scale_step = None

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        if self._writer is not None:
            self._meter.begin(run_context.original_args())

    def on_train_step_end(self, run_context: RunContext) -> None:
        if self._writer is None:
            return
        params = run_context.original_args()
        self._meter.step_end(params)
        step = params.cur_step_num
        if not self._due(step):
            return
        if self._collect["collect_metric"]:
            # eager mode: a host-device sync (the loss is on the device); sink mode: a 0-d
            # CPU tensor already read with the sink's losses
            self._add("train/loss", loss_value(params.net_outputs), step)
        if self._collect["collect_lr"]:
            self._add("train/lr", step_lr(params), step)
        if params.get("weights_current", True):  # a replayed step's scale is long gone
            self._add_loss_scale(params, step)
        if not self._first_done:
            self._first_done = True
            self.flush()  # the first step shows at once

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        if self._writer is None:
            return
        params = run_context.original_args()
        step = params.cur_step_num
        if self._collect["collect_metric"]:
            for name, value in (params.get("metrics") or {}).items():
                self._add(f"eval/{name}", value, step)
        if self._collect["collect_throughput"]:
            measured = self._meter.result()
            if measured is not None:
                self._add("train/samples_per_second", measured[0], step)
                self._add("train/data_wait_share", measured[1], step)
        self._add_loss_scale(params, step)
        self._add("epoch", params.cur_epoch_num, step)
        self.flush()

    def on_train_end(self, run_context: RunContext) -> None:
        self.close()

    def on_train_exception(self, run_context: RunContext) -> None:
        self.close()  # what was collected up to the error, on disk now
