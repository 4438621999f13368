"""Timing copies of a user's model, run two ways, for ``jisu doctor --train``: at two AMP
levels (:func:`measure_precision`) and eager against compiled (:func:`measure_graph_mode`).

Each way trains a copy of the model (:func:`~jisu.train.amp_choice.plain_copy`: the user's
network, weights and optimizer state are left as they are) on the data set's first
batches, without sink mode, timing each train step (:class:`_StepTimer`); the median step
after the first counts, so that one step slowed down by another process does not decide.
"""

from __future__ import annotations

import contextlib
import statistics
import time
import warnings
from collections.abc import Iterator
from typing import Any

import torch

from ..train.amp_choice import first_of as _first
from ..train.amp_choice import plain_copy
from ..train.callback import Callback, RunContext
from .comparison import GraphModeComparison, PrecisionComparison

#: how the train step's warning starts when its first, compiling, call failed and it runs
#: eagerly (:class:`jisu.train.steps.CompiledStep`)
COMPILE_FAILED = "GRAPH_MODE: torch.compile failed"


class _StepTimer(Callback):
    """Seconds of each train step (the device's queued work included)."""

    acts_on_training = False  # reads only: sink mode need not watch it

    def __init__(self, device: torch.device) -> None:
        self.device, self.seconds, self._begin = device, [], 0.0

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def on_train_step_begin(self, run_context: RunContext) -> None:
        self._begin = self._now()

    def on_train_step_end(self, run_context: RunContext) -> None:
        self.seconds.append(self._now() - self._begin)


def measure_precision(
    model: Any, dataset: Any, steps: int = 4, candidate: str = "O2"
) -> PrecisionComparison | None:
    """Time ``steps`` train steps, after a warm-up step, of copies of ``model`` at O0 and at
    its own AMP level (at ``candidate`` when it runs at O0). None when the data set has fewer
    than two batches. The user's model and its weights are left as they are.

    The copies are built as the model is (a :class:`jisu.Model`, compiled in GRAPH_MODE) and
    trained on the data set's first batches without sink mode; each level's median step
    counts, so that one step slowed down by another process does not decide. A copy at a
    level that runs bf16 in software here gives no :class:`~jisu.amp.cpu_bf16.
    SoftwareBf16Warning`: the doctor's advice says it, with this measurement."""
    from ..amp.cpu_bf16 import SoftwareBf16Warning
    from ..train.model import Model

    current = model.amp_level
    other = "O0" if current != "O0" else candidate
    seconds: dict[str, float] = {}
    for level in ("O0", other if current == "O0" else current):
        network, loss_fn, optimizer = plain_copy(model)
        with warnings.catch_warnings():  # the doctor's own choice of level
            warnings.simplefilter("ignore", SoftwareBf16Warning)
            trial = Model(network, loss_fn, optimizer, amp_level=level)
        timer = _StepTimer(trial.device)
        trial.train(1, _first(dataset, steps + 1), callbacks=[timer])
        if len(timer.seconds) < 2:
            return None
        seconds[level] = statistics.median(timer.seconds[1:])
    return PrecisionComparison(
        current=current, other=other, seconds=seconds, device=str(model.device), steps=steps
    )


def epoch_steps(dataset: Any) -> int | None:
    """Batches per epoch of ``dataset`` when known without running it (``len``), else None."""
    try:
        steps = len(dataset)
    except TypeError:  # a stream, a filter, a generator: not known without running
        return None
    return steps if isinstance(steps, int) and steps > 0 else None


@contextlib.contextmanager
def _mode(graph: bool) -> Iterator[None]:
    """GRAPH_MODE (``graph``) or PYNATIVE_MODE while the block runs: a ``Model`` compiles its
    train step or not as the mode is when it is built."""
    from ..context import GRAPH_MODE, PYNATIVE_MODE, get_context, set_context

    previous = get_context("mode"), get_context("graph_compile")
    # measured as compiled from the first step, whatever the run's rule would choose
    set_context(mode=GRAPH_MODE if graph else PYNATIVE_MODE, graph_compile="always")
    try:
        yield
    finally:
        set_context(mode=previous[0], graph_compile=previous[1])


def _compile_error(message: str) -> str:
    """The exception's "Type: first line" from the train step's compile-failed warning."""
    text = message[len(COMPILE_FAILED) :].strip()
    text = text.removesuffix("; running eagerly").strip()
    return text[1:-1] if text.startswith("(") and text.endswith(")") else text


def _timed_copy(model: Any, batches: Any, graph: bool) -> tuple[list[float], str | None]:
    """Seconds of each train step of a copy of ``model`` at its AMP level, eager or compiled
    (``graph``), over ``batches``; and the first line of ``torch.compile``'s error when the
    compiled step fell back to eager (None otherwise). Other warnings are shown as usual."""
    from ..train.model import Model
    from ..train.steps import CompiledStep

    network, loss_fn, optimizer = plain_copy(model)
    with _mode(graph):
        trial = Model(network, loss_fn, optimizer, amp_level=model.amp_level)
    timer = _StepTimer(trial.device)
    with warnings.catch_warnings(record=True) as held:  # the user's filters apply
        trial.train(1, batches, callbacks=[timer])
    error = None
    for w in held:
        if str(w.message).startswith(COMPILE_FAILED):
            error = _compile_error(str(w.message))
            continue  # said in the advice
        warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
    step = trial.train_network
    if graph and error is None and isinstance(step, CompiledStep) and not step.is_compiled:
        error = "the compiled step fell back to eager"
    return timer.seconds, error


def measure_graph_mode(model: Any, dataset: Any, steps: int = 4) -> GraphModeComparison | None:
    """Time ``steps`` train steps of copies of ``model`` eager, after a warm-up step, and
    compiled as GRAPH_MODE compiles them (``torch.compile`` of the forward and backward),
    after the compiling step, at the model's AMP level. The compile time is what the first
    compiled step took beyond the median compiled step. None when the data set has fewer
    than two batches. The user's model and its weights are left as they are.

    A model that already runs in graph mode is measured the same way (its eager copy is
    then the alternative). A compile that fails (no C++ compiler, an unsupported construct)
    gives a comparison with its ``error`` and the eager time only; a step that fails eagerly
    too raises."""
    from ..train.steps import CompiledStep

    current = "graph" if isinstance(model.train_network, CompiledStep) else "eager"
    batches = _first(dataset, steps + 1)
    eager, _ = _timed_copy(model, batches, graph=False)
    if len(eager) < 2:
        return None
    compiled, error = _timed_copy(model, batches, graph=True)
    if len(compiled) < 2:
        return None
    common = {
        "current": current,
        "eager": statistics.median(eager[1:]),
        "device": str(model.device),
        "steps": len(eager) - 1,
        "epoch_steps": epoch_steps(dataset),
    }
    if error is not None:
        return GraphModeComparison(error=error, **common)
    step = statistics.median(compiled[1:])
    return GraphModeComparison(
        compiled=step, compile_seconds=max(0.0, compiled[0] - step), **common
    )
