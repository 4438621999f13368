"""Dataset callbacks: ``DSCallback``, ``WaitedDSCallback`` and ``map(callbacks=...)``.

MindSpore's hooks on a map's rows: ``ds_begin`` once per iterator, ``ds_epoch_begin`` /
``ds_epoch_end`` around each epoch, ``ds_step_begin`` / ``ds_step_end`` around every
``step_size``-th row of an epoch (its rows 1, 1 + step_size, ...), each given a
:class:`DSRunContext` (``cur_epoch_num`` from 1, ``cur_step_num_in_epoch`` from 1 and
``cur_step_num`` over the iterator's epochs; 0 before the first step, as MindSpore's).

Where they run: the map's output rows pass a point (:class:`CallbackPointDataset`, a stream
node right above the map) that calls the hooks in the pipeline's own thread of this process,
as it hands each row on; the map below keeps its workers (threads or processes) and runs
ahead up to the prefetch depth. So ``ds_step_begin`` of a row comes after the map made that
row (MindSpore calls it from the map before its ops run) and before the row goes on, and
``ds_step_end`` when the next row is asked for; a hook that blocks holds back the rows
after its own. The hooks of one map are called in order, one at a time, never concurrently.

``WaitedDSCallback`` is also a training callback (pass it to ``Model.train``'s callbacks): its
``ds_step_begin`` (after the first ``step_size`` rows) waits for the training step to end and
then calls ``sync_step_begin(train_run_context, ds_run_context)``; ``ds_epoch_begin`` (from
the second epoch) waits for the training epoch's end and calls ``sync_epoch_begin``. A wait
longer than ``config.get_callback_timeout()`` seconds is a RuntimeError.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from ..core.node import Dataset
from ..core.switches import get_callback_timeout
from ..engine.context import ExecContext

HOOKS = ("ds_begin", "ds_epoch_begin", "ds_epoch_end", "ds_step_begin", "ds_step_end")


class DSRunContext:
    """What a dataset hook receives (MindSpore's ``CallbackParam``)."""

    __slots__ = ("cur_epoch_num", "cur_step_num", "cur_step_num_in_epoch")

    def __init__(self, cur_epoch_num: int, cur_step_num_in_epoch: int, cur_step_num: int):
        self.cur_epoch_num = cur_epoch_num
        self.cur_step_num_in_epoch = cur_step_num_in_epoch
        self.cur_step_num = cur_step_num

    def __repr__(self) -> str:
        return (
            f"DSRunContext(cur_epoch_num={self.cur_epoch_num}, cur_step_num_in_epoch="
            f"{self.cur_step_num_in_epoch}, cur_step_num={self.cur_step_num})"
        )


class DSCallback:
    """Base of a map's dataset callbacks: override any of the ``ds_*`` hooks.

    Args:
        step_size: the rows per step: the step hooks run on rows 1, 1 + step_size, ... of each
            epoch (usually the batch size). Default 1.

    Raises:
        TypeError: ``step_size`` not an int. ValueError: below 1.

    Example::

        class Count(ds.DSCallback):
            def ds_step_end(self, ds_run_context):
                print(ds_run_context.cur_step_num)

        data = data.map(ops, callbacks=Count())
    """

    def __init__(self, step_size: int = 1) -> None:
        if isinstance(step_size, bool) or not isinstance(step_size, int):
            raise TypeError(f"DSCallback: step_size must be an int. Received: {step_size!r}")
        if step_size < 1:
            raise ValueError(f"DSCallback: step_size must be at least 1. Received: {step_size}")
        self.step_size = step_size

    def ds_begin(self, ds_run_context: DSRunContext) -> None:
        """Called once, before the iterator's first epoch."""

    def ds_epoch_begin(self, ds_run_context: DSRunContext) -> None:
        """Called before each epoch."""

    def ds_epoch_end(self, ds_run_context: DSRunContext) -> None:
        """Called after each epoch's last row."""

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        """Called before a step's first row goes on."""

    def ds_step_end(self, ds_run_context: DSRunContext) -> None:
        """Called after a step's first row went on."""

    def active_hooks(self) -> dict[str, Any]:
        """The hooks this callback's class overrides, bound (the others are never called).

        Raises:
            AttributeError: none is overridden (MindSpore 2.10's error).
        """
        hooks = {
            name: getattr(self, name)
            for name in self._hook_names()
            if getattr(type(self), name) is not getattr(self._base(), name)
        }
        if not hooks:
            raise AttributeError(
                f"{type(self).__name__}: a dataset callback must override at least one of "
                f"{', '.join(self._hook_names())}"
            )
        return hooks

    def _hook_names(self) -> tuple[str, ...]:
        return HOOKS

    def _base(self) -> type:
        return DSCallback


class WaitedDSCallback(DSCallback):
    """A dataset callback that waits for the training loop: override ``sync_step_begin``
    and/or ``sync_epoch_begin``, and pass the object both to ``map(callbacks=...)`` and to
    ``Model.train(callbacks=...)``.

    ``sync_step_begin(train_run_context, ds_run_context)`` runs before each step's rows after
    the first ``step_size`` rows, once the training step before it has ended (its
    ``run_context``); ``sync_epoch_begin`` before each epoch after the first, once the
    training epoch has ended (neither once training has ended, nor for an epoch beyond its
    ``epoch_num``: jisu's ``Model.train`` reads ahead with an iterator of no fixed epoch
    count). The training side's ``step_end``, ``epoch_end`` and ``end`` are this class's: do
    not override them. Training's end releases any wait.

    Args:
        step_size: rows per training step (the batch size). Default 1.
    """

    acts_on_training = False  # its training hooks only release the pipeline

    def __init__(self, step_size: int = 1) -> None:
        super().__init__(step_size)
        self._make_events()
        self.training_ended = False

    def _make_events(self) -> None:
        self.step_event = threading.Event()
        self.epoch_event = threading.Event()
        self.step_run_context: Any = None
        self.epoch_run_context: Any = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in ("step_event", "epoch_event", "step_run_context", "epoch_run_context"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._make_events()

    def sync_epoch_begin(self, train_run_context: Any, ds_run_context: DSRunContext) -> None:
        """Called before a dataset epoch (from the second), after the training epoch ended."""

    def sync_step_begin(self, train_run_context: Any, ds_run_context: DSRunContext) -> None:
        """Called before a dataset step (after the first ``step_size`` rows), after the
        training step before it ended."""

    # the training side (jisu.train's CallbackList calls them)
    def step_end(self, run_context: Any) -> None:
        self.step_run_context = run_context
        self.step_event.set()

    def epoch_end(self, run_context: Any) -> None:
        self.epoch_run_context = run_context
        self.epoch_event.set()

    def end(self, run_context: Any) -> None:
        self.training_ended = True
        self.epoch_end(run_context)
        self.step_end(run_context)

    # the dataset side
    def _wait(self, event: threading.Event, hook: str) -> None:
        timeout = get_callback_timeout()
        if not event.wait(timeout=timeout):
            raise RuntimeError(
                f"{type(self).__name__}.{hook}: the training did not reach the matching step "
                f"in {timeout} second(s) (config.set_callback_timeout); is this callback also "
                "in Model.train's callbacks, and step_size the rows per training step?"
            )
        event.clear()

    def ds_epoch_begin(self, ds_run_context: DSRunContext) -> None:
        if ds_run_context.cur_epoch_num > 1 and not self.training_ended:
            self._wait(self.epoch_event, "ds_epoch_begin")
            if not self._beyond_training(ds_run_context):
                self.sync_epoch_begin(self.epoch_run_context, ds_run_context)

    def _beyond_training(self, ds_run_context: DSRunContext) -> bool:
        """Whether this epoch comes after training's last (``cb_params.epoch_num``)."""
        context = self.epoch_run_context
        params = context.original_args() if hasattr(context, "original_args") else None
        last = getattr(params, "epoch_num", None)
        return self.training_ended or (
            isinstance(last, int) and ds_run_context.cur_epoch_num > last
        )

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        if ds_run_context.cur_step_num > self.step_size and not self.training_ended:
            self._wait(self.step_event, "ds_step_begin")
            self.sync_step_begin(self.step_run_context, ds_run_context)

    def _hook_names(self) -> tuple[str, ...]:
        return ("sync_step_begin", "sync_epoch_begin")

    def _base(self) -> type:
        return WaitedDSCallback

    def active_hooks(self) -> dict[str, Any]:
        synced = super().active_hooks()  # refuses a class overriding neither sync hook
        names = {"sync_step_begin": "ds_step_begin", "sync_epoch_begin": "ds_epoch_begin"}
        return {names[name]: getattr(self, names[name]) for name in synced}


def check_callbacks(callbacks: Any) -> list[DSCallback]:
    """``map``'s ``callbacks`` as a list, checked when the pipeline is built.

    Raises:
        TypeError: not a DSCallback or a list of them. AttributeError: one overrides no hook.
    """
    items = list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    for cb in items:
        if not isinstance(cb, DSCallback):
            raise TypeError(
                f"map: callbacks must be a DSCallback or a list of DSCallback. Received: {cb!r}"
            )
        cb.active_hooks()
    return items


class _RunState:
    """Counters of one iterator run: epochs begun and steps over all epochs."""

    def __init__(self) -> None:
        self.epochs = 0
        self.steps = 0


class CallbackPointDataset(Dataset):
    """The rows of a map with dataset callbacks, calling the hooks as they pass; see the
    module docstring."""

    op_name = "map_callbacks"

    def __init__(self, child: Dataset, callbacks: Sequence[DSCallback]) -> None:
        super().__init__([child])
        self.callbacks = list(callbacks)
        self._hooks = [(cb.step_size, cb.active_hooks()) for cb in self.callbacks]
        self._columns = child._columns
        self._runs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_runs")
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._runs = weakref.WeakKeyDictionary()

    def _row_count(self) -> int | None:
        return self.children[0]._row_count()

    def functions(self) -> tuple[Any, ...]:
        return tuple(self.callbacks)

    def _call(self, hook: str, context: DSRunContext, step_of: int | None = None) -> None:
        for step_size, hooks in self._hooks:
            fn = hooks.get(hook)
            if fn is not None and (step_of is None or (step_of - 1) % step_size == 0):
                fn(context)

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        run = self._runs.get(ctx)
        if run is None:
            run = self._runs[ctx] = _RunState()
            self._call("ds_begin", DSRunContext(0, 0, 0))
        run.epochs += 1
        number = run.epochs
        self._call("ds_epoch_begin", DSRunContext(number, start, run.steps))
        step = start
        for row in self.children[0]._stream(ctx, epoch, start):
            step += 1
            run.steps += 1
            here = DSRunContext(number, step, run.steps)
            self._call("ds_step_begin", here, step)
            yield row
            self._call("ds_step_end", here, step)
        self._call("ds_epoch_end", DSRunContext(number, step, run.steps))
