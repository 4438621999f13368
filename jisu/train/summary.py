"""Training logs in the formats people already read: TensorBoard event files
(:class:`SummaryCollector`, MindSpore's name) and a CSV file with a row per epoch
(:class:`CSVLogger`, Keras' name).

Both write on rank 0 only (every rank runs the callbacks under ``torchrun``) and measure an
epoch the same way: its wall time runs from ``on_train_epoch_begin`` to its last step's
``on_train_step_end`` (so ``Model.fit``'s evaluation is not counted as training time), its
throughput is the samples of its steps over that time, and its data-stall share is the time the
loop waited for batches (``cb_params.data_wait_seconds``) over that time, at most 1.
"""

from __future__ import annotations

import csv
import io
import numbers
import os
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..distributed import is_main_process
from ..files import atomic_write
from .callback import Callback, RunContext, loss_value

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


def _scalar(value: Any) -> float | None:
    """``value`` as a float if it is one real number (a Python or NumPy number, a
    one-element array or tensor); None otherwise (a per-class metric, a string)."""
    if isinstance(value, torch.Tensor):
        return float(value.detach().reshape(-1)[0].item()) if value.numel() == 1 else None
    if isinstance(value, np.ndarray):
        return float(value.reshape(-1)[0]) if value.size == 1 else None
    if isinstance(value, numbers.Real):
        return float(value)
    return None


def _step_lr(params: Any) -> Any:
    """The learning rate the step at hand trained with, as the loop recorded it when the step
    was dispatched (right in sink mode's replayed callbacks too): a float, or a copy of a
    tensor rate, read when written."""
    return params.get("learning_rate")


class _EpochMeter:
    """Samples/s and the data-stall share of an epoch's training: from its begin to its last
    step's end (see the module)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._begin: tuple[float, float, int] = (0.0, 0.0, 0)
        self._end: tuple[float, float, int] | None = None

    def begin(self, params: Any) -> None:
        self._begin = (self.clock(), params.get("data_wait_seconds", 0.0), params.samples_seen)
        self._end = None

    def step_end(self, params: Any) -> None:
        self._end = (self.clock(), params.get("data_wait_seconds", 0.0), params.samples_seen)

    def result(self) -> tuple[float, float] | None:
        """``(samples_per_second, data_wait_share)``; None if no step ran this epoch."""
        if self._end is None:
            return None
        seconds = max(self._end[0] - self._begin[0], 1e-9)
        samples = self._end[2] - self._begin[2]
        wait = self._end[1] - self._begin[1]
        return samples / seconds, min(1.0, max(0.0, wait / seconds))


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
        self._meter = _EpochMeter(self._clock)
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
        number = _scalar(value)
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
            self._add("train/lr", _step_lr(params), step)
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


class CSVLogger(Callback):
    """Writes a CSV row per epoch: Keras' ``CSVLogger``, with jisu's columns.

    Columns, in this order: ``epoch`` (``cur_epoch_num``), ``step`` (``cur_step_num``),
    ``loss`` (the epoch's last step's loss), ``lr`` (the first parameter group's learning rate
    used by that step), ``samples_per_second`` and ``data_wait_share`` (see the module), then
    ``eval_<name>`` for each metric ``Model.fit`` evaluated (sorted by name). A value an epoch
    does not have (no evaluation that epoch) is an empty cell. Numbers are written in full
    precision (Python's ``repr``), lines end with ``\\n``, the file is UTF-8.

    Columns are stable: the header is written once, with the first row, and a column never
    moves. Keras fixes the columns at the first epoch and drops keys that appear later; here a
    metric that appears later (``fit(..., valid_frequency=2)`` evaluates first at epoch 2)
    adds its column at the end instead: the file is rewritten atomically (old rows get empty
    cells), so no value is lost and a reader never sees a partial file.

    Crash safety: each row is written whole, in one write, then flushed and fsynced, and the
    file is not kept open between epochs: a crash never leaves a half row.

    Args:
        filename: the CSV file.
        separator: the one-character field separator. Default ``","``.
        append: False (default): ``train`` starts the file anew. True: continue an existing
            file (a resumed run); its header must be a CSVLogger header with the same
            separator, else ValueError naming the file. Its columns are kept; new metrics
            are added as above.

    Raises:
        ValueError: a separator that is not one character; in append mode, an existing file
            whose header is not a CSVLogger header or whose last row is incomplete.

    Example:
        >>> model.fit(10, train, valid, callbacks=[CSVLogger("log.csv")])  # doctest: +SKIP
    """

    acts_on_training = False  # reads only: sink mode need not watch it

    COLUMNS = ("epoch", "step", "loss", "lr", "samples_per_second", "data_wait_share")

    def __init__(self, filename: str | os.PathLike, separator: str = ",", append: bool = False):
        if not isinstance(filename, (str, os.PathLike)) or not os.fspath(filename):
            raise TypeError(
                f"CSVLogger: filename must be a file path. Received filename={filename!r}"
            )
        if not isinstance(separator, str) or len(separator) != 1 or separator in '\r\n"':
            raise ValueError(
                "CSVLogger: separator must be one character other than a quote or a line "
                f"break (the csv module's delimiter). Received separator={separator!r}"
            )
        self.filename = os.fspath(filename)
        self.separator = separator
        self.append = bool(append)
        self._clock: Callable[[], float] = time.perf_counter  # tests put a fake clock here
        self._meter = _EpochMeter(self._clock)
        self._columns: list[str] | None = None  # None: no header in the file yet
        self._active = False
        self._lr: Any = None

    def _line(self, cells: list[Any]) -> str:
        out = io.StringIO()
        csv.writer(out, delimiter=self.separator, lineterminator="\n").writerow(cells)
        return out.getvalue()

    def _existing_columns(self) -> list[str] | None:
        """The header of the file to continue (None when there is none to continue)."""
        if not os.path.exists(self.filename) or os.path.getsize(self.filename) == 0:
            return None
        with open(self.filename, encoding="utf-8", newline="") as f:
            text = f.read()
        header = next(csv.reader(io.StringIO(text), delimiter=self.separator), [])
        extra = header[len(self.COLUMNS) :]
        if (
            tuple(header[: len(self.COLUMNS)]) != self.COLUMNS
            or not all(name.startswith("eval_") for name in extra)
            or len(set(extra)) != len(extra)
        ):
            raise ValueError(
                f"CSVLogger: cannot append to '{self.filename}': its header {header} is not a "
                f"CSVLogger header with separator {self.separator!r} (expected "
                f"{list(self.COLUMNS)} then eval_<metric> columns); pass append=False to "
                "start it anew, or another filename"
            )
        if not text.endswith("\n"):
            raise ValueError(
                f"CSVLogger: cannot append to '{self.filename}': its last row is incomplete "
                "(no line break at the end); repair or remove it"
            )
        return header

    def on_train_begin(self, run_context: RunContext) -> None:
        self._active = is_main_process()
        if not self._active:
            return
        self._meter.clock = self._clock
        if self.append:
            self._columns = self._existing_columns()
        else:
            self._columns = None
            with atomic_write(self.filename, "wb"):
                pass  # start anew: an empty file until the first row

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        if self._active:
            self._meter.begin(run_context.original_args())
            self._lr = None

    def on_train_step_end(self, run_context: RunContext) -> None:
        if self._active:
            params = run_context.original_args()
            self._meter.step_end(params)
            self._lr = _step_lr(params)  # the rate this step used (a float, or a tensor's copy)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        if not self._active:
            return
        params = run_context.original_args()
        measured = self._meter.result()
        row: dict[str, Any] = {
            "epoch": params.cur_epoch_num,
            "step": params.cur_step_num,
            # eager mode: a host-device sync, once per epoch
            "loss": loss_value(params.net_outputs) if params.net_outputs is not None else None,
            "lr": _scalar(self._lr),
            "samples_per_second": measured[0] if measured else None,
            "data_wait_share": measured[1] if measured else None,
        }
        for name, value in (params.get("metrics") or {}).items():
            number = _scalar(value)
            row[f"eval_{name}"] = number if number is not None else str(value)
        self._write(row)

    def _write(self, row: dict[str, Any]) -> None:
        def cell(value: Any) -> Any:
            return "" if value is None else value

        new = sorted(name for name in row if name not in (self._columns or self.COLUMNS))
        if self._columns is None:  # the first row: header and row, in one atomic write
            self._columns = [*self.COLUMNS, *new]
            with atomic_write(self.filename, "wb") as f:
                f.write(self._line(self._columns).encode("utf-8"))
                f.write(self._line([cell(row.get(c)) for c in self._columns]).encode("utf-8"))
            return
        if new:  # a metric appeared: widen the header, pad the old rows, atomically
            with open(self.filename, encoding="utf-8", newline="") as f:
                old_rows = list(csv.reader(f, delimiter=self.separator))[1:]
            self._columns = [*self._columns, *new]
            width = len(self._columns)
            with atomic_write(self.filename, "wb") as f:
                f.write(self._line(self._columns).encode("utf-8"))
                for old in old_rows:
                    f.write(self._line(old + [""] * (width - len(old))).encode("utf-8"))
                f.write(self._line([cell(row.get(c)) for c in self._columns]).encode("utf-8"))
            return
        line = self._line([cell(row.get(c)) for c in self._columns]).encode("utf-8")
        with open(self.filename, "ab") as f:  # the whole row in one write, then to disk
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
