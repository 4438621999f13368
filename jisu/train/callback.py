"""Callbacks with MindSpore's hooks, ``RunContext`` and ``cb_params``.

Hooks run in this order: ``on_train_begin``; per epoch ``on_train_epoch_begin``, per step
``on_train_step_begin`` / ``on_train_step_end``, ``on_train_epoch_end``; ``on_train_end``.
Evaluation has the same set with ``on_eval_``. Each ``on_train_*`` hook calls MindSpore's
older name (``begin``, ``epoch_begin``, ``step_begin``, ``step_end``, ``epoch_end``, ``end``)
unless overridden, so callbacks written either way work. jisu adds three hooks of its own
(:data:`JISU_HOOKS`: a step dispatched, a compilation beginning, an exception), called only on
the callbacks that override them.

In sink mode the step hooks of a sink are replayed, in order, when the sink ends: every step
is seen, with its own loss, but after the fact (``cb_params.net_outputs`` then holds that
step's loss as a 0-d CPU tensor).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, MutableMapping
from typing import Any, TextIO

import torch
from tqdm import tqdm

from ..distributed import is_main_process
from .rates import get_lr, set_lr


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
    """``cb_params`` of ``Model.eval``: a dict whose keys are also attributes (as
    MindSpore's). Training's is a :class:`~jisu.train.state.TrainState`, which reads the
    same way."""

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
        """``cb_params``: a :class:`~jisu.train.state.TrainState` in training, a
        :class:`CallbackParams` in evaluation; attributes and keys alike."""
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


class CallbackList:
    """Calls a hook on every callback in order."""

    def __init__(self, callbacks: Any) -> None:
        if callbacks is None:
            callbacks = []
        elif isinstance(callbacks, Callback):
            callbacks = [callbacks]
        callbacks = list(callbacks)
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


def _step_in_epoch(params: Any) -> int:
    return (
        (params.cur_step_num - 1) % params.batch_num + 1
        if params.batch_num
        else params.cur_step_num
    )


class LossMonitor(Callback):
    """Prints ``epoch: E step: S, loss is L`` every ``per_print_times`` steps (0: never) and
    raises on a NaN/inf loss, as MindSpore does. Under sink mode it still prints every step
    (the steps are replayed at each sink's end)."""

    acts_on_training = False

    def __init__(self, per_print_times: int = 1) -> None:
        if (
            isinstance(per_print_times, bool)
            or not isinstance(per_print_times, int)
            or per_print_times < 0
        ):
            raise ValueError(
                f"LossMonitor: per_print_times must be an int >= 0. Received {per_print_times!r}"
            )
        self._per_print_times = per_print_times

    def on_train_step_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        loss = loss_value(params.net_outputs)
        step = _step_in_epoch(params)
        if math.isnan(loss) or math.isinf(loss):
            raise ValueError(
                f"In epoch: {params.cur_epoch_num} step: {step}, loss is NAN or INF, training "
                "process cannot continue, terminating training."
            )
        if self._per_print_times and params.cur_step_num % self._per_print_times == 0:
            report(f"epoch: {params.cur_epoch_num} step: {step}, loss is {loss}", flush=True)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        metrics = run_context.original_args().get("metrics")
        if metrics:
            report(
                f"Eval result: epoch {run_context.original_args().cur_epoch_num}, "
                f"metrics: {metrics}",
                flush=True,
            )


class TimeMonitor(Callback):
    """Prints ``Train epoch time: T ms, per step time: S ms`` after each epoch (and the time
    spent waiting for data per step with ``data_time=True``)."""

    def __init__(self, data_size: int | None = None, data_time: bool = False) -> None:
        if data_size is not None and (not isinstance(data_size, int) or data_size <= 0):
            raise ValueError(
                f"TimeMonitor: data_size must be a positive int. Received {data_size!r}"
            )
        self.data_size = data_size
        self.data_time = data_time
        self._start = 0.0
        self._wait = 0.0

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._start = time.perf_counter()
        self._wait = run_context.original_args().get("data_wait_seconds", 0.0)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        ms = (time.perf_counter() - self._start) * 1000
        steps = params.get("steps_in_epoch") or params.batch_num or self.data_size or 1
        line = f"Train epoch time: {ms:5.3f} ms, per step time: {ms / steps:5.3f} ms"
        if self.data_time:
            wait = (params.get("data_wait_seconds", 0.0) - self._wait) * 1000
            line += f" (data time: {wait / steps:5.3f} ms)"
        report(line, flush=True)


class ThroughputMonitor(Callback):
    """Samples/s per epoch and the share of the epoch spent waiting for data (the data-stall
    share: near 0 when the input pipeline keeps up, near 1 when the model waits on it).
    Results accumulate in ``self.epochs`` (dicts); ``verbose`` prints a line per epoch."""

    def __init__(self, verbose: bool = True) -> None:
        self.verbose = verbose
        self.epochs: list[dict[str, float]] = []
        self._start = self._wait = 0.0
        self._samples = 0

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        self._start = time.perf_counter()
        self._wait = params.get("data_wait_seconds", 0.0)
        self._samples = params.get("samples_seen", 0)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        seconds = max(time.perf_counter() - self._start, 1e-9)
        samples = params.get("samples_seen", 0) - self._samples
        wait = params.get("data_wait_seconds", 0.0) - self._wait
        record = {
            "epoch": params.cur_epoch_num,
            "samples_per_second": samples / seconds,
            "data_wait_share": min(1.0, wait / seconds),
            "seconds": seconds,
        }
        self.epochs.append(record)
        if self.verbose:
            report(
                f"epoch {record['epoch']}: {record['samples_per_second']:.0f} samples/s, "
                f"waiting for data {record['data_wait_share']:.0%} of the time",
                flush=True,
            )


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


class LambdaCallback(Callback):
    """A callback from functions: ``LambdaCallback(on_train_step_end=fn, ...)``; each takes
    the ``RunContext``. MindSpore's hooks and jisu's (:data:`JISU_HOOKS`) are accepted."""

    def __init__(self, **hooks: Callable[[RunContext], None]) -> None:
        known = (*HOOKS, *JISU_HOOKS)
        unknown = set(hooks) - set(known)
        if unknown:
            raise ValueError(
                f"LambdaCallback: unknown hook(s) {sorted(unknown)}; known: {list(known)}"
            )
        self._hooks = hooks

    def wants_hook(self, hook: str) -> bool:
        return hook in object.__getattribute__(self, "_hooks")

    def __getattribute__(self, name: str) -> Any:
        if name in HOOKS or name in JISU_HOOKS:
            hook = object.__getattribute__(self, "_hooks").get(name)
            if hook is not None:
                return hook
            return lambda run_context: None
        return object.__getattribute__(self, name)


class LearningRateScheduler(Callback):
    """Sets the learning rate after every step: ``learning_rate_function(lr, cur_step_num)``
    returns the new rate (MindSpore's signature: the current rate and the number of steps
    done), applied to every parameter group.

    It runs as each step is dispatched (``on_train_step_dispatched``), so in sink mode every
    step of a sink gets its own rate, as in step mode (MindSpore applies it once per sink).
    Only host values are read: the rate it last set, not a device tensor.
    """

    def __init__(self, learning_rate_function: Callable[[float, int], float]) -> None:
        if not callable(learning_rate_function):
            raise TypeError("LearningRateScheduler: learning_rate_function must be callable")
        self.learning_rate_function = learning_rate_function
        self._lr: float | None = None  # the rate set last (a host value)

    def on_train_begin(self, run_context: RunContext) -> None:
        optimizer = run_context.original_args().optimizer
        if getattr(optimizer, "dynamic_lr", False):
            raise ValueError(
                "LearningRateScheduler: the optimizer's learning rate is already per step (a "
                "list or a LearningRateSchedule); use one or the other"
            )
        self._lr = None

    def on_train_step_dispatched(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        groups = params.optimizer.param_groups
        lr = self._lr if self._lr is not None else get_lr(groups[0])
        new = float(self.learning_rate_function(lr, params.dispatched_step_num))
        if new != lr:
            for group in groups:
                set_lr(group, new)
        self._lr = new


def _monitored(params: Any, monitor: str) -> float | None:
    """The monitored value: ``"loss"`` is the training loss (the step's first output), as in
    MindSpore, also when an evaluation metric is named "loss" (that one is ``"eval_loss"``);
    other names are evaluation metrics, with or without ``eval_``. None when absent."""
    if monitor == "loss":
        return loss_value(params.net_outputs)
    metrics = params.get("metrics") or {}
    if monitor in metrics:
        return float(metrics[monitor])
    name = monitor[5:] if monitor.startswith("eval_") else None
    if name and name in metrics:
        return float(metrics[name])
    return None


class _Plateau:
    """Shared bookkeeping of EarlyStopping and ReduceLROnPlateau."""

    def __init__(self, owner: str, monitor: str, min_delta: float, patience: int, mode: str):
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"{owner}: mode must be 'auto', 'min' or 'max'. Received {mode!r}")
        self.owner = owner
        if mode == "auto":
            mode = "max" if "acc" in monitor else "min"
        self.monitor, self.min_delta, self.patience, self.mode = (
            monitor,
            abs(min_delta),
            patience,
            mode,
        )
        self.best: float | None = None
        self.wait = 0

    def _improved(self, value: float) -> bool:
        if self.best is None:
            return True
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def _value(self, run_context: RunContext) -> float | None:
        value = _monitored(run_context.original_args(), self.monitor)
        if value is None:
            report(
                f"{self.owner}: '{self.monitor}' is not available (run Model.fit with "
                "a valid_dataset and metrics, or monitor 'loss'); nothing done",
                file=sys.stderr,
            )
        return value


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


#: callbacks defined in modules that import this one, importable from here as from MindSpore's
#: ``mindspore.train.callback`` (resolved on first use, so that no import cycles)
_ELSEWHERE = {
    "ProgressBar": "progress",
    "ModelCheckpoint": "model_checkpoint",
    "CheckpointConfig": "model_checkpoint",
    "SummaryCollector": "summary",
    "CSVLogger": "summary",
}


def __getattr__(name: str) -> Any:
    if name in _ELSEWHERE:
        import importlib

        return getattr(importlib.import_module(f".{_ELSEWHERE[name]}", __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
