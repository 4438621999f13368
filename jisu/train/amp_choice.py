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

``memory_format="fastest"`` (:mod:`jisu.train.memory_format`) is measured the same way, and
with ``amp_level="fastest"`` together with it: every pair of a level and a layout is a trial,
ordered the most precise level first and, within a level, the contiguous layout first (the
layout changes no precision, but the default must be clearly slower to be left).
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
from .memory_format import CONTIGUOUS, FASTEST, FORMATS, has_image_weights, to_memory_format

__all__ = [
    "CANDIDATES",
    "FASTEST",
    "MARGIN",
    "LevelChoice",
    "LevelTrial",
    "choose_level",
    "first_of",
    "measure_levels",
    "measured_setups",
    "plain_copy",
]

#: the levels timed by default, the most precise first
CANDIDATES = ("O0", "O1", "O2")
#: a level at most this much slower than the fastest counts as as fast (the more precise wins)
MARGIN = 0.05

_log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class LevelTrial:
    """One level's measurement (in one ``memory_format``): its median train-step time in
    seconds, or why it cannot be used (``failure``: a loss that was not finite, an error in
    the step)."""

    level: str
    seconds: float | None = None
    failure: str | None = None
    memory_format: str = CONTIGUOUS

    @property
    def name(self) -> str:
        """The level, and the layout when it is not the default: ``O2 channels_last``."""
        if self.memory_format == CONTIGUOUS:
            return self.level
        return f"{self.level} {self.memory_format}"


@dataclasses.dataclass(frozen=True)
class LevelChoice:
    """The level (and memory format) chosen, the trials it was chosen from and why
    (:func:`choose_level`)."""

    level: str
    trials: tuple[LevelTrial, ...]
    reason: str
    memory_format: str = CONTIGUOUS

    def describe(self) -> str:
        """One line: ``amp fastest: O2 (per train step: O0 23.1 ms, O1 25.0 ms, O2 17.2 ms)``;
        when layouts were measured, ``fastest: O2 channels_last (per train step: ...)``."""
        levels = {t.level for t in self.trials}
        layouts = {t.memory_format for t in self.trials}
        chosen = LevelTrial(self.level, memory_format=self.memory_format).name
        if len(layouts) == 1:
            return f"amp {FASTEST}: {chosen} ({self.reason})"
        what = FASTEST if len(levels) > 1 else f"memory format {FASTEST}"
        if self.memory_format == CONTIGUOUS:
            chosen += f" {CONTIGUOUS}"
        return f"{what}: {chosen} ({self.reason})"


def _figure(trial: LevelTrial) -> str:
    if trial.seconds is None:
        return f"{trial.name} {trial.failure}"
    return f"{trial.name} {trial.seconds * 1e3:.1f} ms"


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
        first = trials[0]
        why = f"no level ran: {figures}"
        return LevelChoice(first.level, tuple(trials), why, first.memory_format)
    best = min(t.seconds for t in timed)
    chosen = next(t for t in timed if t.seconds <= best * (1 + margin))
    fastest = min(timed, key=lambda t: t.seconds)
    why = f"per train step: {figures}"
    if chosen is not fastest:
        if chosen.level != fastest.level:
            why += f"; {fastest.name} is within {margin:.0%}, so the more precise {chosen.name}"
        else:
            why += f"; {fastest.name} is within {margin:.0%}, so the default layout"
    return LevelChoice(chosen.level, tuple(trials), why, chosen.memory_format)


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
    setup: tuple[str, str],
    batches: Sequence[Sequence[torch.Tensor]],
    steps: int,
    clock: Callable[[], float],
) -> list[float] | str:
    """Seconds of ``steps`` train steps, after a warm-up step, of a copy of ``model`` at
    ``setup`` (a level and a memory format; its first batches taking turns), or why it
    cannot be used."""
    from ..amp.cpu_bf16 import SoftwareBf16Warning
    from ..nn.cell import train_mode

    level, memory_format = setup
    network, loss_fn, optimizer = plain_copy(model)
    to_memory_format(network, memory_format)
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
    formats: Iterable[str] = (CONTIGUOUS,),
) -> list[LevelTrial]:
    """Time train steps of copies of ``model`` (a :class:`jisu.Model`) at each level in
    ``levels`` and memory format in ``formats`` (every pair, levels outermost) on
    ``batches`` (on the model's device; each a step's arguments, the label last). Each of
    ``rounds`` rounds visits every pair once, the order reversed every other round (A B C,
    C B A: a machine getting busier does not favour one); a visit copies the network and
    optimizer, lays the copy out in the format, runs a warm-up step and times ``steps`` more.
    A pair's time is the median of its timed steps; a pair whose loss was not finite, or
    whose step failed, is not timed further. Only one copy lives at a time (a large network
    is copied, not duplicated per pair)."""
    levels = list(levels)
    for level in levels:
        precision_type(level, "measure_levels", "levels")
    formats = list(formats)
    for memory_format in formats:
        if memory_format not in FORMATS:
            raise ValueError(
                f"measure_levels: formats must be among {FORMATS}. Received {memory_format!r}"
            )
    setups = [(level, memory_format) for level in levels for memory_format in formats]
    seconds: dict[tuple[str, str], list[float]] = {setup: [] for setup in setups}
    failures: dict[tuple[str, str], str] = {}
    for number in range(rounds):
        for setup in setups if number % 2 == 0 else setups[::-1]:
            if setup in failures:
                continue
            outcome = _visit(model, setup, batches, steps, clock)
            if isinstance(outcome, str):
                failures[setup] = outcome
            else:
                seconds[setup].extend(outcome)
    return [
        LevelTrial(level, failure=failures[(level, fmt)], memory_format=fmt)
        if (level, fmt) in failures
        else LevelTrial(level, statistics.median(seconds[(level, fmt)]), memory_format=fmt)
        for level, fmt in setups
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
    formats: Iterable[str] = (CONTIGUOUS,),
) -> LevelChoice:
    """Measure ``model`` on ``dataset``'s first batches and choose (see the module). The
    global random generators are restored after the trials, so that the run draws what it
    would have drawn without them."""
    from .checkpoint import capture_rng_state, restore_rng_state

    levels, formats = tuple(levels), tuple(formats)
    rng = capture_rng_state()  # reading the batches may draw too (a DataLoader's shuffle)
    try:
        batches = first_batches(model, dataset, 4)
        trials = (
            None
            if batches is None
            else measure_levels(model, batches, levels, clock=clock, formats=formats)
        )
    finally:
        restore_rng_state(rng)
    if trials is None:
        unmeasured = tuple(
            LevelTrial(level, failure="not measured", memory_format=fmt)
            for level in levels
            for fmt in formats
        )
        reason = "not measured: the data set is a one-shot iterator or empty; the most precise"
        choice = LevelChoice(levels[0], unmeasured, reason, formats[0])
    else:
        choice = choose_level(trials)
    _log.info("%s", choice.describe())
    return choice


def measured_setups(
    amp_level: str, memory_format: str, network: torch.nn.Module
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The levels and memory formats to measure for a ``Model``'s ``amp_level`` and
    ``memory_format``: every candidate for one that is "fastest", else the one given; the
    contiguous layout alone for a network without 4-D weights (nothing to lay out)."""
    levels = CANDIDATES if is_fastest(amp_level) else (amp_level,)
    if not is_fastest(memory_format):
        return levels, (memory_format,)
    return levels, FORMATS if has_image_weights(network) else (CONTIGUOUS,)


def is_fastest(level: Any) -> bool:
    """Whether ``level`` asks for the measured choice."""
    return isinstance(level, str) and level == FASTEST
