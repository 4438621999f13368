"""``CSVLogger`` (Keras' name): a CSV file with a row per epoch.

It writes on rank 0 only (every rank runs the callbacks under ``torchrun``) and measures an
epoch as :mod:`~jisu.train.callbacks.epoch_meter` says.
"""

from __future__ import annotations

import csv
import io
import os
import time
from collections.abc import Callable
from typing import Any

from ...distributed import is_main_process
from ...files import atomic_write
from .base import Callback, RunContext, loss_value
from .epoch_meter import EpochMeter, scalar, step_lr


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
        self._meter = EpochMeter(self._clock)
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
            self._lr = step_lr(params)  # the rate this step used (a float, or a tensor's copy)

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
            "lr": scalar(self._lr),
            "samples_per_second": measured[0] if measured else None,
            "data_wait_share": measured[1] if measured else None,
        }
        for name, value in (params.get("metrics") or {}).items():
            number = scalar(value)
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
