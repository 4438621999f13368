"""The progress bar of ``Model.train``: a tqdm bar over each epoch's steps that moves as the
steps are dispatched, and keeps the terminal's other output off its line.

``Model.train`` adds a :class:`ProgressBar` by itself when stderr is a terminal (and none was
passed). What it shows:

- **the step count and steps/s as steps are dispatched** (jisu's ``on_train_step_dispatched``
  hook, called by the loop right after each step call returns). In sink mode that is during
  the sink, without any host synchronisation: the bar reads no loss there. On a GPU the
  dispatch runs ahead of the device by at most the launch queue, so the rate is the device's
  once the queue is full; the sink's one read at its end waits for the rest.
- **the last known loss**: in sink mode the one read at the previous sink's end (a sink's last
  step, replayed); eagerly, read every ``refresh`` steps (that read is a host-device sync).
- **"compiling the train step…"** in GRAPH_MODE while ``torch.compile`` runs the first step
  (jisu's ``on_train_compile_begin`` hook); the compilation's time is left out of the rate.

While a bar is open, the other output of the run goes through it: the callbacks'
:func:`~jisu.train.callbacks.base.report` lines, ``warnings`` and ``logging``'s console handlers
(and its last-resort handler) clear the bar, write their line at column 0 and draw the bar
again (tqdm's ``external_write_mode``), so no line shares the bar's. A plain ``print`` from
user code is not redirected: use ``report`` or ``tqdm.write`` in a callback.
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import Any, TextIO

from tqdm import tqdm

from ...distributed import is_main_process
from .base import Callback, RunContext, loss_value

COMPILING = "compiling the train step…"


class ProgressBar(Callback):
    """A tqdm bar over each epoch's steps (see the module): the step count, steps/s and the
    last known loss, moving during a sink, and a notice while GRAPH_MODE compiles.

    Args:
        refresh: eagerly (not sink mode), read and show the loss every ``refresh`` steps
            (each read is a host-device sync); default 10.
        mininterval: the least seconds between two redraws (tqdm's); default 0.1.
        miniters: the least steps between two redraws (tqdm's; None: tqdm adapts it).
            ``miniters=1, mininterval=0`` redraws at every step.
        file: where the bar goes (default: ``sys.stderr`` when the epoch begins).

    Only rank 0 shows a bar under ``torchrun``.

    Example:
        >>> model.train(3, dataset, callbacks=[ProgressBar(refresh=50)])  # doctest: +SKIP
    """

    acts_on_training = False  # reads only: sink mode need not watch it

    def __init__(
        self,
        refresh: int = 10,
        mininterval: float = 0.1,
        miniters: int | None = None,
        file: TextIO | None = None,
    ) -> None:
        if isinstance(refresh, bool) or not isinstance(refresh, int) or refresh < 1:
            raise ValueError(
                f"ProgressBar: refresh must be an int >= 1. Received refresh={refresh!r}"
            )
        number = isinstance(mininterval, (int, float)) and not isinstance(mininterval, bool)
        if not number or mininterval < 0:
            raise ValueError(
                "ProgressBar: mininterval must be a number of seconds >= 0. "
                f"Received mininterval={mininterval!r}"
            )
        if miniters is not None and (
            isinstance(miniters, bool) or not isinstance(miniters, int) or miniters < 1
        ):
            raise ValueError(
                f"ProgressBar: miniters must be None or an int >= 1. Received miniters={miniters!r}"
            )
        self.refresh = refresh
        self.mininterval = mininterval
        self.miniters = miniters
        self.file = file
        self._bar: tqdm | None = None
        self._desc = ""
        self._compiling = False
        self._last_loss: float | None = None  # carried across epochs (sink mode's first sink)
        self._guard: _OutputGuard | None = None

    # ------------------------------------------------------------------ hooks
    def on_train_begin(self, run_context: RunContext) -> None:
        self._last_loss = None

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        if not is_main_process():
            return
        self._close()  # a bar left open (an epoch that did not end) goes first
        params = run_context.original_args()
        epochs = params.get("epoch_num")
        self._desc = f"epoch {params.cur_epoch_num}" + (f"/{epochs}" if epochs else "")
        self._bar = tqdm(
            total=params.get("batch_num") or None,
            initial=params.get("step_in_epoch", 0) or 0,  # a resumed epoch's steps done
            desc=self._desc,
            unit="step",
            leave=False,
            dynamic_ncols=True,
            mininterval=self.mininterval,
            miniters=self.miniters,
            file=self.file if self.file is not None else sys.stderr,
            postfix=None if self._last_loss is None else {"loss": f"{self._last_loss:.4f}"},
        )
        self._guard = _OutputGuard()

    def on_train_compile_begin(self, run_context: RunContext) -> None:
        bar = self._bar
        if bar is None:
            return
        self._compiling = True
        notice = COMPILING if _can_encode(bar, COMPILING) else COMPILING.replace("…", "...")
        bar.set_description(f"{self._desc}: {notice}", refresh=True)

    def on_train_step_dispatched(self, run_context: RunContext) -> None:
        bar = self._bar
        if bar is None:
            return
        if not self._compiling:
            bar.update(1)
            return
        # the step that compiled: count it, but leave its time (the compilation) out of the
        # rate, which tqdm measures from the last redraw: redraw now, as tqdm's update would
        self._compiling = False
        bar.set_description(self._desc, refresh=False)
        bar.n += 1
        bar.last_print_n, bar.last_print_t = bar.n, bar._time()
        bar.refresh()

    def on_train_step_end(self, run_context: RunContext) -> None:
        bar = self._bar
        if bar is None:
            return
        params = run_context.original_args()
        if params.get("dataset_sink_mode"):
            # a replayed step: its loss is on the host already (read once at the sink's end);
            # the sink's last step (weights_current) holds the last known loss
            if not params.get("weights_current", True):
                return
        elif params.cur_step_num % self.refresh:
            return
        self._last_loss = loss_value(params.net_outputs)  # eagerly: a host-device sync
        bar.set_postfix(loss=f"{self._last_loss:.4f}")

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self._close()

    def on_train_end(self, run_context: RunContext) -> None:
        self._close()

    def on_train_exception(self, run_context: RunContext) -> None:
        self._close()  # before the traceback prints, so it starts on a line of its own

    def _close(self) -> None:
        if self._guard is not None:
            self._guard.remove()
            self._guard = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._compiling = False


def _can_encode(bar: tqdm, text: str) -> bool:
    encoding = getattr(bar.fp, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class _BarStream:
    """A console stream (for a logging handler) whose every write clears the open bars,
    writes and draws them again; logging writes a whole record (and its newline) at once."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        with tqdm.external_write_mode(file=self.stream):
            written = self.stream.write(text)
            self.stream.flush()
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _OutputGuard:
    """While a bar is open: ``warnings`` and ``logging``'s console output through the bar.

    ``remove()`` restores what it replaced, unless something replaced it since (a
    ``warnings.catch_warnings`` entered and not yet left); what it leaves behind then passes
    everything on unchanged, as it does once removed.
    """

    def __init__(self) -> None:
        self.active = True
        self._showwarning = warnings.showwarning
        warnings.showwarning = self._show_warning
        self._handlers: list[tuple[logging.StreamHandler, TextIO]] = []
        for handler in logging.root.handlers:
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and stream in (sys.stdout, sys.stderr):
                self._handlers.append((handler, stream))
                handler.stream = _BarStream(stream)
        self._last_resort = self._resort = logging.lastResort
        if self._last_resort is not None:
            # used when no handler is configured; its stream is sys.stderr at each record
            self._resort = logging.StreamHandler(_BarStream(sys.stderr))
            self._resort.setLevel(self._last_resort.level)
            logging.lastResort = self._resort

    def _show_warning(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if not self.active:
            self._showwarning(message, category, filename, lineno, file, line)
            return
        stream = sys.stderr if file is None else file
        text = warnings.formatwarning(message, category, filename, lineno, line)
        with tqdm.external_write_mode(file=stream):
            stream.write(text)
            stream.flush()

    def remove(self) -> None:
        if not self.active:
            return
        self.active = False
        if warnings.showwarning == self._show_warning:
            warnings.showwarning = self._showwarning
        for handler, stream in self._handlers:
            if isinstance(handler.stream, _BarStream):
                handler.stream = stream
        if logging.lastResort is self._resort:
            logging.lastResort = self._last_resort
