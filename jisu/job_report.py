"""What ``jisu train`` reports: the curves per epoch and the comparison with plain PyTorch.

:class:`EpochCurves` records, per epoch, the mean training loss, the accuracy and samples/s,
outside the epochs' measured time; :func:`plot_curves` draws them (and the plain loop's runs)
into a PNG when matplotlib is installed (``jisu[plots]``). :func:`comparison_epochs` spreads the
plain loop's timed runs over the run, and :func:`compare_speeds` pairs each with the jisu epoch
next to it into a :class:`SpeedComparison`, whose headline is no stronger than the pairs' spread
allows. Kept apart from the training run (:mod:`jisu.job`): these only measure and present.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import plots
from .train import Callback, Model, RunContext, ThroughputMonitor
from .train.callbacks.base import report

#: what the main job's log says while graph mode compiles its first step
COMPILE_NOTICE = (
    "compiling the train step (graph mode, torch.compile) in the first step: seconds with a "
    "warm compile cache, a minute or more on a CPU without one (--no-graph skips it)"
)


@dataclass(frozen=True)
class SpeedComparison:
    """jisu's speed over the plain loop's in interleaved pairs of runs: ``ratios[i]`` is
    jisu's samples/s in run ``i`` over the plain loop's in the run next to it."""

    ratios: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    @property
    def low(self) -> float:
        return min(self.ratios)

    @property
    def high(self) -> float:
        return max(self.ratios)

    def headline(self) -> str:
        """One sentence, no stronger than the spread allows: "jisu is 1.9x plain PyTorch"
        only when every pair had jisu faster, "slower" only when every pair had it slower,
        "no clear difference" when the range straddles 1, and a single pair is called one."""
        n = len(self.ratios)
        if n == 1:
            return (
                f"jisu ran at {_x(self.median)} plain PyTorch's speed in a single pair of runs "
                "(no spread to judge by: train 3 or more epochs for several pairs)"
            )
        runs = f"median of {n} interleaved runs; range {_x(self.low, '')}-{_x(self.high)}"
        if self.low > 1:
            return f"jisu is {_x(self.median)} plain PyTorch ({runs})"
        if self.high < 1:
            return f"jisu is slower: {_x(self.median)} plain PyTorch ({runs})"
        return f"no clear difference from plain PyTorch: {_x(self.median)} ({runs})"


def _x(ratio: float, suffix: str = "x") -> str:
    """A ratio with as many digits as it deserves: 0.93x, 1.90x, 12x."""
    return f"{ratio:.2f}{suffix}" if ratio < 10 else f"{ratio:.0f}{suffix}"


def compare_speeds(jisu: Sequence[float], plain: Sequence[float]) -> SpeedComparison:
    """Pair the samples/s of interleaved runs: ``jisu[i]`` was measured next to ``plain[i]``.

    Raises:
        ValueError: no runs, runs of different counts, or a rate that is not positive.
    """
    if not jisu or len(jisu) != len(plain):
        raise ValueError(
            "compare_speeds: needs as many jisu runs as plain runs, at least one. "
            f"Received: {len(jisu)} and {len(plain)}"
        )
    if min(*jisu, *plain) <= 0:
        raise ValueError(
            f"compare_speeds: samples/s must be positive. Received: jisu={list(jisu)}, "
            f"plain={list(plain)}"
        )
    return SpeedComparison(tuple(j / p for j, p in zip(jisu, plain)))


def comparison_epochs(epochs: int, runs: int) -> list[int]:
    """The epochs (1-based) after which the plain loop runs: up to ``runs`` of epochs 2 ..
    ``epochs``, spread evenly (the first includes compilation and warm-up)."""
    candidates = list(range(2, epochs + 1))
    runs = min(runs, len(candidates))
    if runs <= 0:
        return []
    if runs == 1:
        return [candidates[-1]]
    return sorted({candidates[round(k * (len(candidates) - 1) / (runs - 1))] for k in range(runs)})


def _loss_tensor(outputs: Any) -> Any:
    if isinstance(outputs, (tuple, list)) and outputs:
        outputs = outputs[0]
    return outputs.detach().float() if isinstance(outputs, torch.Tensor) else float(outputs)


class EpochCurves(Callback):
    """Per epoch: the mean training loss, the accuracy on ``eval_data`` (a dataset or a list of
    batches) and samples/s (read from ``throughput``, a :class:`ThroughputMonitor` placed
    before this callback).

    The losses add up as tensors (no host-device sync per step); the sum is read at the
    epoch's end, after the monitors have stopped their clocks, as is the evaluation, so the
    figures of the epoch leave both out. ``every_epoch=False`` evaluates after the last epoch
    only (``accuracy`` then holds None for the others).
    """

    acts_on_training = False  # reads only: sink mode need not watch it

    def __init__(
        self, model: Model, eval_data: Any, throughput: ThroughputMonitor, every_epoch: bool
    ) -> None:
        self.model, self.eval_data, self.throughput = model, eval_data, throughput
        self.every_epoch = every_epoch
        self.values: dict[str, list[Any]] = {"loss": [], "accuracy": [], "samples_per_second": []}
        self._sum: Any = 0.0
        self._steps = 0

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._sum, self._steps = 0.0, 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        self._sum = _loss_tensor(run_context.original_args().net_outputs) + self._sum
        self._steps += 1

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        # host-device sync: once per epoch, outside the epoch's measured time
        self.values["loss"].append(float(self._sum) / max(self._steps, 1))
        self.values["samples_per_second"].append(self.throughput.epochs[-1]["samples_per_second"])
        accuracy = None
        if self.every_epoch or params.cur_epoch_num == params.epoch_num:
            accuracy = float(self.model.eval(self.eval_data)["acc"])
            self.model.network.train()
        self.values["accuracy"].append(accuracy)


def plot_curves(
    values: dict[str, Sequence[float | None]],
    path: str,
    plain: Sequence[tuple[int, float]] = (),
    accuracy_of: str = "test",
) -> str | None:
    """Draw the per-epoch ``values`` (``loss``, ``accuracy``, ``samples_per_second``, epoch 1
    first; an accuracy of None is not drawn) side by side into the PNG ``path``; returns
    ``path``, or None without matplotlib (``jisu[plots]``), which draws nothing.

    Args:
        plain: the plain loop's runs as ``(epoch it followed, samples/s)``, drawn as points
            and their median as a dashed line on the speed panel.
        accuracy_of: what the accuracy was measured on ("test", "training").

    Uses matplotlib's Agg canvas directly (no pyplot: the caller's backend and figures are
    left alone).
    """
    if not plots.available():
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 3.6), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    panels = figure.subplots(1, 3)
    titles = {
        "loss": "training loss (epoch mean)",
        "accuracy": f"{accuracy_of} accuracy",
        "samples_per_second": "training speed (samples/s)",
    }
    for axes, (key, title) in zip(panels, titles.items()):
        points = [(e, v) for e, v in enumerate(values[key], start=1) if v is not None]
        if points:
            epochs, ys = zip(*points)
            axes.plot(epochs, ys, marker="o", color="tab:blue", label="jisu")
        axes.set_title(title)
        axes.set_xlabel("epoch")
        axes.grid(alpha=0.3)
    if plain:
        epochs, rates = zip(*plain)
        panels[2].plot(epochs, rates, "s", color="tab:orange", label="plain PyTorch, run after")
        median = statistics.median(rates)
        panels[2].axhline(median, color="tab:orange", ls="--", label="plain PyTorch, median")
        panels[2].legend(loc="best", fontsize="small")
    panels[1].yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    figure.savefig(path, format="png")
    return path


class CompileNotice(Callback):
    """Off a terminal (a job's log), the line a progress bar shows there while graph mode
    compiles the first step: without it a log stays silent for minutes on a CPU."""

    def on_train_compile_begin(self, run_context: RunContext) -> None:
        report(COMPILE_NOTICE)
