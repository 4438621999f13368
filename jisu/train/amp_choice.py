"""``amp_level="fastest"``: the mixed-precision level chosen by timing train steps on the
hardware at hand, for users who ask for it.

Which level pays depends on the machine: O2 runs bf16 in hardware on a CPU with AMX (0.76x
O0's step time measured here) and in software on one without (1.3-4.6x), fp16 on a GPU with
tensor cores, and a small network may not gain at all. ``Model(..., amp_level="fastest")``
trains at O0 until its first ``train``, which times copies of the network at each candidate
level (:data:`CANDIDATES`) on the data set's first batches and then trains at the chosen one:
the fastest level whose losses stayed finite, the more precise level whenever another is
within :data:`MARGIN` of it (noise must not buy lower precision). The user's network,
optimizer and random generators are left as they were; the choice is logged (logger
``jisu.train.amp_choice``), kept in ``model.amp_choice`` and ``model.amp_level`` names it.

The name is jisu's own: MindSpore's ``"auto"`` is a fixed level per device (O2 on GPU, O3 on
Ascend, refused on CPU, in MindSpore 2.0; per-op lists in 2.10), which jisu keeps for ported
scripts (:mod:`jisu.amp`); a measured choice under that name would change their numerics.
Numerics after the choice are those of the chosen level. O3 (everything in the low dtype, no
loss scale) is a candidate only when asked for: finite losses on a few steps do not show that
a network converges without fp32 norms.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import logging
import statistics
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch

from .. import amp
from ..amp.levels import precision_type

__all__ = [
    "CANDIDATES",
    "FASTEST",
    "MARGIN",
    "LevelChoice",
    "LevelTrial",
    "choose_level",
    "first_of",
    "measure_levels",
    "plain_copy",
]

#: the ``amp_level`` that asks for the measured choice
FASTEST = "fastest"
#: the levels timed by default, the most precise first
CANDIDATES = ("O0", "O1", "O2")
#: a level at most this much slower than the fastest counts as as fast (the more precise wins)
MARGIN = 0.05

_log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class LevelTrial:
    """One level's measurement: its median train-step time in seconds, or why it cannot be
    used (``failure``: a loss that was not finite, an error in the step)."""

    level: str
    seconds: float | None = None
    failure: str | None = None


@dataclasses.dataclass(frozen=True)
class LevelChoice:
    """The level chosen, the trials it was chosen from and why (:func:`choose_level`)."""

    level: str
    trials: tuple[LevelTrial, ...]
    reason: str

    def describe(self) -> str:
        """One line: ``amp fastest: O2 (per train step: O0 23.1 ms, O1 25.0 ms, O2 17.2 ms)``."""
        return f"amp {FASTEST}: {self.level} ({self.reason})"


def _figure(trial: LevelTrial) -> str:
    if trial.seconds is None:
        return f"{trial.level} {trial.failure}"
    return f"{trial.level} {trial.seconds * 1e3:.1f} ms"


def choose_level(trials: Sequence[LevelTrial], margin: float = MARGIN) -> LevelChoice:
    """The level to train at, from ``trials`` ordered from the most precise level.

    The fastest level with a time (finite losses, no error) sets the bar; the first level in
    ``trials`` within ``margin`` of it is chosen, so that a less precise level must be clearly
    faster to be taken. When no level has a time, the most precise one is kept (the run then
    meets the same failure as the trial did, with the user's own traceback)."""
    if not trials:
        raise ValueError("choose_level: no trial to choose from")
    timed = [t for t in trials if t.seconds is not None]
    figures = ", ".join(map(_figure, trials))
    if not timed:
        return LevelChoice(trials[0].level, tuple(trials), f"no level ran: {figures}")
    best = min(t.seconds for t in timed)
    chosen = next(t for t in timed if t.seconds <= best * (1 + margin))
    fastest = min(timed, key=lambda t: t.seconds)
    why = f"per train step: {figures}"
    if chosen is not fastest:
        why += f"; {fastest.level} is within {margin:.0%}, so the more precise {chosen.level}"
    return LevelChoice(chosen.level, tuple(trials), why)


_HOOK_TABLES = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
)


def plain_copy(model: Any) -> tuple[Any, Any, Any]:
    """Copies of ``model``'s network, loss function and optimizer (over the copied
    parameters), the network as it was before its AMP conversion: without the conversion's
    mark and hooks, in fp32 when O3 had cast its weights in place, with no optimizer state
    (it may hold low-precision buffers). The user's objects are not touched: a learning-rate
    scheduler's wrapper of ``optimizer.step``, which would step the user's optimizer, is not
    copied."""
    network, loss_fn, optimizer = copy.deepcopy((model.network, model.loss_fn, model.optimizer))
    converted = getattr(model.train_network, "network", None)
    if isinstance(converted, amp.MixedPrecisionNetwork):
        hooks = {handle.id for handle in converted._hooks}
        for module in network.modules():
            for name in _HOOK_TABLES:
                table = getattr(module, name, None) or {}
                for key in hooks & set(table):
                    del table[key]
    network.__dict__.pop("_jisu_amp", None)
    if model.amp_level == "O3":
        network.float()
    optimizer.__dict__.pop("step", None)  # torch pickles an optimizer without it; others may not
    optimizer.state.clear()
    return network, loss_fn, optimizer


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _failure(error: Exception) -> str:
    first = str(error).strip().splitlines()
    return f"failed ({type(error).__name__}: {first[0] if first else ''})"


def _visit(
    model: Any,
    level: str,
    batches: Sequence[Sequence[torch.Tensor]],
    steps: int,
    clock: Callable[[], float],
) -> list[float] | str:
    """Seconds of ``steps`` train steps, after a warm-up step, of a copy of ``model`` at
    ``level`` (its first batches taking turns), or why the level cannot be used."""
    from ..amp.cpu_bf16 import SoftwareBf16Warning
    from ..nn.cell import train_mode

    network, loss_fn, optimizer = plain_copy(model)
    train_mode(network)
    seconds: list[float] = []
    try:
        with warnings.catch_warnings():  # the measurement, not a fixed figure, decides here
            warnings.simplefilter("ignore", SoftwareBf16Warning)
            step = amp.build_train_network(network, optimizer, loss_fn, level=level)
        for index, batch in zip(range(steps + 1), itertools.cycle(batches)):
            begin = clock()
            loss = step(*batch)
            loss = loss[0] if isinstance(loss, (tuple, list)) else loss
            finite = bool(torch.isfinite(loss).all())  # waits for the device's work
            _synchronize(model.device)
            if not finite:
                return f"loss not finite at step {index + 1}"
            if index > 0:
                seconds.append(clock() - begin)
    except (RuntimeError, ValueError, TypeError, NotImplementedError) as error:
        return _failure(error)
    return seconds


def measure_levels(
    model: Any,
    batches: Sequence[Sequence[torch.Tensor]],
    levels: Iterable[str] = CANDIDATES,
    steps: int = 3,
    rounds: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> list[LevelTrial]:
    """Time train steps of copies of ``model`` (a :class:`jisu.Model`) at each level in
    ``levels`` on ``batches`` (on the model's device; each a step's arguments, the label
    last). Each of ``rounds`` rounds visits every level once, the order reversed every other
    round (A B C, C B A: a machine getting busier does not favour one level); a visit copies
    the network and optimizer, runs a warm-up step and times ``steps`` more. A level's time is
    the median of its timed steps; a level whose loss was not finite, or whose step failed,
    is not timed further. Only one copy lives at a time (a large network is copied, not
    duplicated per level)."""
    levels = list(levels)
    for level in levels:
        precision_type(level, "measure_levels", "levels")
    seconds: dict[str, list[float]] = {level: [] for level in levels}
    failures: dict[str, str] = {}
    for number in range(rounds):
        for level in levels if number % 2 == 0 else levels[::-1]:
            if level in failures:
                continue
            outcome = _visit(model, level, batches, steps, clock)
            if isinstance(outcome, str):
                failures[level] = outcome
            else:
                seconds[level].extend(outcome)
    return [
        LevelTrial(level, failure=failures[level])
        if level in failures
        else LevelTrial(level, seconds=statistics.median(seconds[level]))
        for level in levels
    ]


def first_batches(model: Any, dataset: Any, count: int) -> list[list[torch.Tensor]] | None:
    """The first ``count`` batches of ``dataset`` as the train step takes them, on the
    model's device; None when they cannot be read without taking them from the run (a
    one-shot iterator) or there are none. A jisu data set is read by a separate iterator
    (``take``), closed before training starts."""
    from .feeder import BatchSource, as_tensors

    if isinstance(dataset, Iterator):  # its batches would be gone from the run
        return None
    source = BatchSource(first_of(dataset, count))
    try:
        return [
            source.to_device(as_tensors(batch, source), model.device)
            for batch in itertools.islice(source.one_pass(), count)
        ] or None
    finally:
        source.close()


class _FirstBatches:
    """The first ``count`` batches of a re-iterable (a DataLoader, a list), as a re-iterable
    (one "epoch" each)."""

    def __init__(self, dataset: Any, count: int) -> None:
        self.dataset, self.count = dataset, count

    def __iter__(self):
        return itertools.islice(iter(self.dataset), self.count)

    def __len__(self) -> int:
        return self.count


def first_of(dataset: Any, count: int) -> Any:
    """The first ``count`` batches of a jisu dataset (``take``) or of a re-iterable."""
    from ..dataset.core.node import Dataset

    return dataset.take(count) if isinstance(dataset, Dataset) else _FirstBatches(dataset, count)


def choose_for(
    model: Any,
    dataset: Any,
    levels: Iterable[str] = CANDIDATES,
    clock: Callable[[], float] = time.perf_counter,
) -> LevelChoice:
    """Measure ``model`` on ``dataset``'s first batches and choose (see the module). The
    global random generators are restored after the trials, so that the run draws what it
    would have drawn without them."""
    from .checkpoint import capture_rng_state, restore_rng_state

    levels = tuple(levels)
    rng = capture_rng_state()  # reading the batches may draw too (a DataLoader's shuffle)
    try:
        batches = first_batches(model, dataset, 4)
        trials = None if batches is None else measure_levels(model, batches, levels, clock=clock)
    finally:
        restore_rng_state(rng)
    if trials is None:
        unmeasured = tuple(LevelTrial(level, failure="not measured") for level in levels)
        reason = "not measured: the data set is a one-shot iterator or empty; the most precise"
        choice = LevelChoice(levels[0], unmeasured, reason)
    else:
        choice = choose_level(trials)
    _log.info("%s", choice.describe())
    return choice


def is_fastest(level: Any) -> bool:
    """Whether ``level`` asks for the measured choice."""
    return isinstance(level, str) and level == FASTEST
