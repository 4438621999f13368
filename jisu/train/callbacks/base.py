"""The callback machinery: :class:`Callback` (MindSpore's hooks), :class:`RunContext`,
:class:`CallbackList` (the dispatcher the loops call), :func:`loss_value` and :func:`report`.

Hooks run in this order: ``on_train_begin``; per epoch ``on_train_epoch_begin``, per step
``on_train_step_begin`` / ``on_train_step_end``, ``on_train_epoch_end``; ``on_train_end``.
Evaluation has the same set with ``on_eval_``. Each ``on_train_*`` hook calls MindSpore's
older name (``begin``, ``epoch_begin``, ``step_begin``, ``step_end``, ``epoch_end``, ``end``)
unless overridden, so callbacks written either way work. jisu adds three hooks of its own
(:data:`JISU_HOOKS`: a step dispatched, a compilation beginning, an exception), called only on
the callbacks that override them.

``cb_params`` (``run_context.original_args()``) is a :class:`~jisu.train.state.TrainState`,
in training (``mode`` "train") and in evaluation (``mode`` "eval") alike. In sink mode the
step hooks of a sink are replayed, in order, when the sink ends: every step is seen, with its
own loss, but after the fact (``cb_params.net_outputs`` then holds that step's loss as a 0-d
CPU tensor).

The built-in callbacks live one per module beside this one (``loss_monitor``,
``model_checkpoint``, ...); nothing here imports them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, MutableMapping
from typing import Any, TextIO

import torch
from tqdm import tqdm

from ...dataset.ops.ds_callback import WaitedDSCallback
from ...distributed import is_main_process


def report(
    *args: Any, sep: str = " ", end: str = "\n", file: TextIO | None = None, flush: bool = False
) -> None:
    """``print`` on rank 0 only (every rank runs the callbacks under torchrun), through the
    progress bars while one is open: they are cleared, the line written and flushed, and the
    bars drawn again (tqdm's ``external_write_mode``), so the line starts at column 0 and no
    bar shares it. Write whole lines (``end`` with a newline) while a bar is open: the bar is
    drawn again right after."""
    if not is_main_process():
        return
    stream = sys.stdout if file is None else file
    if getattr(tqdm, "_instances", None):  # a bar is open (closed bars leave the set)
        with tqdm.external_write_mode(file=stream):
            print(*args, sep=sep, end=end, file=stream, flush=True)
    else:
        print(*args, sep=sep, end=end, file=stream, flush=flush)


class CallbackParams(dict):
    """A dict whose keys are also attributes, as MindSpore's ``cb_params``: for driving
    callbacks by hand (a custom loop, a test). ``Model``'s own ``cb_params``, in training and
    in evaluation, are a :class:`~jisu.train.state.TrainState`, which reads the same way."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


class RunContext:
    """What callbacks receive: ``original_args()`` is ``cb_params``; ``request_stop()`` ends
    training after the current step."""

    def __init__(self, params: MutableMapping[str, Any]) -> None:
        self._params = params
        self._stop = False

    def original_args(self) -> Any:
        """``cb_params``: ``Model``'s :class:`~jisu.train.state.TrainState` (``mode`` "train"
        or "eval"); attributes and keys alike."""
        return self._params

    def request_stop(self) -> None:
        self._stop = True

    def get_stop_requested(self) -> bool:
        return self._stop


class Callback:
    """Base class: override the ``on_*`` hooks (or MindSpore's older names)."""

    #: whether this callback may change what is trained (the optimizer, the loss scale, the
    #: weights, a stop) from a step hook. None: unknown, so sink mode watches its replayed
    #: step hooks (:mod:`jisu.train.replay_guard`); jisu's monitors, loggers and checkpoints
    #: declare False.
    acts_on_training: bool | None = None

    def wants_hook(self, hook: str) -> bool:
        """Whether this callback's class overrides ``hook`` (or MindSpore's older name that
        the hook calls). jisu's own hooks (:data:`JISU_HOOKS`) are called only then."""
        cls = type(self)
        if getattr(cls, hook) is not getattr(Callback, hook):
            return True
        old = OLD_NAMES.get(hook)
        return old is not None and getattr(cls, old) is not getattr(Callback, old)

    def begin(self, run_context: RunContext) -> None:
        """Called once before training (``on_train_begin``)."""

    def epoch_begin(self, run_context: RunContext) -> None:
        """Called before each epoch (``on_train_epoch_begin``)."""

    def epoch_end(self, run_context: RunContext) -> None:
        """Called after each epoch (``on_train_epoch_end``)."""

    def step_begin(self, run_context: RunContext) -> None:
        """Called before each step (``on_train_step_begin``)."""

    def step_end(self, run_context: RunContext) -> None:
        """Called after each step (``on_train_step_end``)."""

    def end(self, run_context: RunContext) -> None:
        """Called once after training (``on_train_end``)."""

    def on_train_begin(self, run_context: RunContext) -> None:
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.epoch_begin(run_context)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self.epoch_end(run_context)

    def on_train_step_begin(self, run_context: RunContext) -> None:
        self.step_begin(run_context)

    def on_train_step_end(self, run_context: RunContext) -> None:
        self.step_end(run_context)

    def on_train_end(self, run_context: RunContext) -> None:
        self.end(run_context)

    def on_eval_begin(self, run_context: RunContext) -> None:
        """Called once before evaluation."""

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        """Called before the evaluation pass."""

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        """Called after the evaluation pass."""

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        """Called before each evaluation step."""

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Called after each evaluation step."""

    def on_eval_end(self, run_context: RunContext) -> None:
        """Called once after evaluation."""

    # jisu's own hooks (see JISU_HOOKS): called only on callbacks whose class overrides them
    def on_train_step_dispatched(self, run_context: RunContext) -> None:
        """Called right after each train step call returns, before its callbacks: in sink
        mode as the sink's steps are dispatched (the loss is not read: no host sync here;
        ``cur_step_num`` is still the sink's first), eagerly between ``on_train_step_begin``
        and ``on_train_step_end``. The progress bar advances here."""

    def on_train_compile_begin(self, run_context: RunContext) -> None:
        """Called in GRAPH_MODE before the step call that runs ``torch.compile`` (the first);
        ``on_train_step_dispatched`` follows once it returns."""

    def on_train_exception(self, run_context: RunContext) -> None:
        """Called when training raises (the exception is ``sys.exc_info()``), before it
        propagates; ``on_train_end`` is not called then."""


HOOKS = (
    "on_train_begin",
    "on_train_epoch_begin",
    "on_train_step_begin",
    "on_train_step_end",
    "on_train_epoch_end",
    "on_train_end",
    "on_eval_begin",
    "on_eval_epoch_begin",
    "on_eval_step_begin",
    "on_eval_step_end",
    "on_eval_epoch_end",
    "on_eval_end",
)

#: the older MindSpore name each ``on_train_*`` hook calls unless overridden
OLD_NAMES = {
    "on_train_begin": "begin",
    "on_train_epoch_begin": "epoch_begin",
    "on_train_step_begin": "step_begin",
    "on_train_step_end": "step_end",
    "on_train_epoch_end": "epoch_end",
    "on_train_end": "end",
}

#: jisu's hooks beyond MindSpore's. ``CallbackList`` calls them only on the callbacks whose
#: class overrides them, so that a callback answering every ``on_*`` name sees MindSpore's
#: hooks only, and a step pays for none when no callback wants them.
JISU_HOOKS = ("on_train_step_dispatched", "on_train_compile_begin", "on_train_exception")


class WaitedTrainingSide(Callback):
    """The training half of a ``jisu.dataset.WaitedDSCallback`` (which, living in
    ``jisu.dataset``, cannot derive from this package's :class:`Callback`): the end of each
    step, epoch and of training releases the pipeline waiting in its hooks."""

    acts_on_training = False  # it only lets the pipeline go on

    def __init__(self, waited: WaitedDSCallback) -> None:
        self.waited = waited

    def step_end(self, run_context: RunContext) -> None:
        self.waited.step_end(run_context)

    def epoch_end(self, run_context: RunContext) -> None:
        self.waited.epoch_end(run_context)

    def end(self, run_context: RunContext) -> None:
        self.waited.end(run_context)


class CallbackList:
    """Calls a hook on every callback in order."""

    def __init__(self, callbacks: Any) -> None:
        if callbacks is None:
            callbacks = []
        elif isinstance(callbacks, Callback):
            callbacks = [callbacks]
        callbacks = [
            WaitedTrainingSide(cb) if isinstance(cb, WaitedDSCallback) else cb
            for cb in ([callbacks] if isinstance(callbacks, WaitedDSCallback) else callbacks)
        ]
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be jisu.train.Callback instances. Received {cb!r}")
        self.callbacks = callbacks

    def __getattr__(self, hook: str) -> Callable[[RunContext], None]:
        if hook in HOOKS:
            callbacks = self.callbacks
        elif hook in JISU_HOOKS:
            callbacks = [cb for cb in self.callbacks if cb.wants_hook(hook)]
        else:
            raise AttributeError(hook)

        def call(run_context: RunContext) -> None:
            for cb in callbacks:
                getattr(cb, hook)(run_context)

        return call


def loss_value(outputs: Any) -> float:
    """The loss among a step's outputs, as a float (MindSpore's ``_handle_loss``)."""
    if isinstance(outputs, (tuple, list)) and outputs:
        outputs = outputs[0]
    if isinstance(outputs, torch.Tensor):
        return float(outputs.detach().float().mean().item())
    return float(outputs)
