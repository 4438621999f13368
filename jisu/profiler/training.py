"""Where a training run's time goes: waiting for data, copying to the device, the train step
itself, and everything else on the host (callbacks, logging, the loop) — and which of jisu's
three levers to pull first.

:class:`TrainingProfiler` is a callback: it reads the clocks the training loop keeps in
``cb_params`` (``data_wait_seconds``, ``copy_seconds``, ``step_seconds``) at epoch boundaries,
so it works the same with and without sink mode and costs nothing per step. On an
accelerator it also counts the reads of tensor values back to the host (``.item()``,
``bool()``, ``float()``, ``.tolist()``, ``.cpu()``, ``.numpy()``) made during training: each
is a synchronisation that stalls the queue of device work.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from ..amp.cpu_bf16 import software_bf16_advice, software_bf16_note
from ..distributed import is_main_process
from ..train.callback import Callback, RunContext
from .comparison import GRAPH_NOT_MEASURED, SAME_SPEED, GraphModeComparison, PrecisionComparison

__all__ = [
    "BOUND_SHARE",
    "LAUNCH_BOUND",
    "SAME_SPEED",
    "GraphModeComparison",
    "PrecisionComparison",
    "TimeBreakdown",
    "TrainingProfiler",
    "counting_host_reads",
]

_HOST_READS = ("item", "__bool__", "__float__", "__int__", "tolist", "numpy", "cpu")

#: a share of the wall time at or above which a part is the bottleneck
BOUND_SHARE = 0.25

#: a step's launch time over its device time at or above which the step is launch-bound: the
#: device runs each step about as fast as Python launches its kernels
LAUNCH_BOUND = 0.8


@contextlib.contextmanager
def counting_host_reads(accelerator_only: bool = True) -> Iterator[list[int]]:
    """Counts reads of tensor values back to the host (``.item()``, ``bool()``, ``float()``,
    ``int()``, ``.tolist()``, ``.numpy()``, ``.cpu()``) while the block runs, in a
    one-element list updated in place. With ``accelerator_only`` (the default) only reads of
    tensors on an accelerator count: each waits for the device (a sync); CPU reads do not."""
    count = [0]
    originals = {name: getattr(torch.Tensor, name) for name in _HOST_READS}

    def counted(original):
        def method(self, *args, **kwargs):
            if not accelerator_only or self.device.type != "cpu":
                count[0] += 1
            return original(self, *args, **kwargs)

        return method

    for name, original in originals.items():
        setattr(torch.Tensor, name, counted(original))
    try:
        yield count
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)


@dataclass
class TimeBreakdown:
    """Seconds of a stretch of training, by where they went."""

    steps: int = 0
    samples: int = 0
    wall: float = 0.0
    data_wait: float = 0.0
    copy: float = 0.0
    step: float = 0.0
    device_syncs: int = 0
    # sink mode on CUDA: the sinks' device time, their first step calls' host time, the sinks
    sink_device: float = 0.0
    first_launch: float = 0.0
    sinks: int = 0

    @property
    def launch_ratio(self) -> float | None:
        """A step's launch time on the host over its device time (sink mode on CUDA; None
        without sinks): about 1 or more when the device waits for the host's launches."""
        if not self.sinks or not self.steps or self.sink_device <= 0:
            return None
        return (self.first_launch / self.sinks) / (self.sink_device / self.steps)

    @property
    def host(self) -> float:
        """Wall time outside the data wait, the copies and the train step."""
        return max(0.0, self.wall - self.data_wait - self.copy - self.step)

    def shares(self) -> dict[str, float]:
        wall = max(self.wall, 1e-12)
        return {
            "data_wait": self.data_wait / wall,
            "copy": self.copy / wall,
            "step": self.step / wall,
            "host": self.host / wall,
        }


def _faster_step(
    params: dict,
    precision: PrecisionComparison | None = None,
    graph: GraphModeComparison | None = None,
) -> str:
    """What may make a compute-bound train step faster, given how it runs now and, when
    measured, how fast it runs at another AMP level and eager against compiled. Graph mode
    unmeasured is only suggested for a trial ("not measured"): compiling can take longer
    than a short run saves, and a small model's compiled step can be slower."""
    level = params.get("amp_level") or "O0"
    device = params.get("device")
    on_cpu = device is None or torch.device(device).type == "cpu"
    step = params.get("train_network")
    chooser = getattr(step, "chooser", None)  # graph mode auto's (jisu.train.graph_policy)
    compiled = step.is_compiled if chooser is not None else bool(params.get("graph_mode"))
    changes, change = [], False
    # on a CPU without bf16 instructions: the figures of jisu.amp.cpu_bf16's warning
    choice = getattr(params.get("model"), "amp_choice", None)  # amp_level="fastest"'s
    if precision is not None:
        changes.append(precision.advice)
        change = precision.change is not None
    elif choice is not None:
        changes.append(f"keep amp_level='fastest': {level} was measured fastest here")
    elif level == "O0" and (note := software_bf16_note("O2", device or "cpu")) is not None:
        changes.append(f"keep amp_level='O0': {note}")
    elif (advice := software_bf16_advice(level, device or "cpu")) is not None:
        change = True
        changes.append(advice)
    elif level == "O0":
        change = True
        changes.append(
            "try a lower precision (amp_level='O2': fp16 with loss scaling on GPUs, bf16 on "
            "CPUs) and keep it if it is faster: jisu doctor --train measures both"
        )
    elif on_cpu:
        change = True
        changes.append(
            f"measure amp_level='O0' against {level}: whether bf16 is faster than fp32 depends "
            "on the CPU (jisu doctor --train measures both)"
        )
    if graph is not None:
        changes.append(graph.advice)
        change = change or graph.change is not None
    elif chooser is not None and not chooser.measuring:
        how = "compiled" if compiled else "eagerly"
        changes.append(f"keep graph mode auto: it measured the step and runs it {how}")
    elif not compiled:
        change = True
        changes.append(GRAPH_NOT_MEASURED)
    if not change:
        how = "compiled" if compiled else "at its fastest measured setting, eager,"
        changes.append(f"it already runs {how} in {level}: use bigger batches or a smaller model")
    return "; ".join(changes)


class TrainingProfiler(Callback):
    """Breaks the training time down per epoch and gives a verdict at the end.

    ``summary()`` returns the figures over the epochs after the first (the first holds
    compilation and warm-up) when there are several; ``verdict`` is "input-bound",
    "compute-bound" or "host-bound", and ``advice`` says what to change. With ``verbose`` the
    report is printed when training ends (rank 0 only).

    ``clock`` (:func:`time.perf_counter` by default) gives every timestamp the profiler takes
    (the epochs' wall time), in seconds like the training loop's own clocks that it reads from
    ``cb_params``; a test gives a fake clock to make the figures exact.
    """

    acts_on_training = False  # reads only: sink mode need not watch it

    def __init__(
        self,
        verbose: bool = True,
        count_device_syncs: bool = True,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.verbose = verbose
        self.count_device_syncs = count_device_syncs
        self.clock = clock
        self.epochs: list[TimeBreakdown] = []
        self._counter: contextlib.AbstractContextManager | None = None
        self._reads: list[int] = [0]
        self._start: dict[str, float] = {}
        self._params: Any = None
        #: set by ``jisu doctor`` (:func:`~jisu.profiler.measure.measure_precision`): the step
        #: timed at two AMP levels, which the compute-bound advice then follows
        self.precision: PrecisionComparison | None = None
        #: set by ``jisu doctor`` (:func:`~jisu.profiler.measure.measure_graph_mode`): the
        #: step timed eager and compiled; the advice on graph mode follows it (without it,
        #: graph mode is suggested as "not measured", never recommended)
        self.graph: GraphModeComparison | None = None
        #: why graph mode was not measured (turned off, too little data), for the figures
        self.graph_note: str | None = None

    # ------------------------------------------------------------------ hooks
    def on_train_begin(self, run_context: RunContext) -> None:
        self.epochs = []
        self._params = run_context.original_args()
        if self.count_device_syncs:
            self._counter = counting_host_reads()
            self._reads = self._counter.__enter__()

    def _clocks(self) -> dict[str, float]:
        p = self._params
        return {
            "wall": self.clock(),
            "data_wait": p.get("data_wait_seconds", 0.0),
            "copy": p.get("copy_seconds", 0.0),
            "step": p.get("step_seconds", 0.0),
            "steps": p.get("cur_step_num", 0),
            "samples": p.get("samples_seen", 0),
            "reads": self._reads[0],
            "sink_device": p.get("sink_device_seconds", 0.0),
            "first_launch": p.get("sink_first_launch_seconds", 0.0),
            "sinks": p.get("sinks", 0),
        }

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self._sync()
        self._start = self._clocks()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self._sync()
        now, start = self._clocks(), self._start
        self.epochs.append(
            TimeBreakdown(
                steps=int(now["steps"] - start["steps"]),
                samples=int(now["samples"] - start["samples"]),
                wall=now["wall"] - start["wall"],
                data_wait=now["data_wait"] - start["data_wait"],
                copy=now["copy"] - start["copy"],
                step=now["step"] - start["step"],
                device_syncs=int(now["reads"] - start["reads"]),
                sink_device=now["sink_device"] - start["sink_device"],
                first_launch=now["first_launch"] - start["first_launch"],
                sinks=int(now["sinks"] - start["sinks"]),
            )
        )

    def on_train_end(self, run_context: RunContext) -> None:
        if self._counter is not None:
            self._counter.__exit__(None, None, None)
            self._counter = None
        if self.verbose and self.epochs and is_main_process():
            print(self.report(), flush=True)

    def _sync(self) -> None:
        device = self._params.get("device") if self._params is not None else None
        if device is not None and torch.device(device).type == "cuda":
            torch.cuda.synchronize(device)  # the device's queued work belongs to this epoch

    # ------------------------------------------------------------------ results
    def summary(self) -> TimeBreakdown:
        """The epochs after the first summed (all epochs when there is one)."""
        epochs = self.epochs[1:] or self.epochs
        total = TimeBreakdown()
        for e in epochs:
            total.steps += e.steps
            total.samples += e.samples
            total.wall += e.wall
            total.data_wait += e.data_wait
            total.copy += e.copy
            total.step += e.step
            total.device_syncs += e.device_syncs
            total.sink_device += e.sink_device
            total.first_launch += e.first_launch
            total.sinks += e.sinks
        return total

    @property
    def launch_bound(self) -> bool | None:
        """Whether the train step is launch-bound (sink mode on CUDA; None: not measured)."""
        ratio = self.summary().launch_ratio
        return None if ratio is None else ratio >= LAUNCH_BOUND

    def capture_lines(self) -> list[str]:
        """Sink mode's lines: how the step ran (captured as a CUDA graph or why not) and, on
        CUDA, a step's launch time against its device time."""
        params = self._params or {}
        capture = params.get("step_capture")
        if capture is None:
            return []
        lines = [f"step capture: {capture.describe()}"]
        s = self.summary()
        if s.launch_ratio is not None:
            launch, device = s.first_launch / s.sinks, s.sink_device / s.steps
            bound = "launch-bound" if self.launch_bound else "not launch-bound"
            lines.append(
                f"step launch: {1000 * launch:.2f} ms on the host to launch a step, "
                f"{1000 * device:.2f} ms on the device to run one: {bound}"
            )
        return lines

    @property
    def verdict(self) -> str:
        shares = self.summary().shares()
        if shares["data_wait"] + shares["copy"] >= BOUND_SHARE and (
            shares["data_wait"] + shares["copy"] >= shares["host"]
        ):
            return "input-bound"
        if shares["host"] >= BOUND_SHARE:
            return "host-bound"
        return "compute-bound"

    @property
    def advice(self) -> str:
        s = self.summary()
        shares = s.shares()
        reads = s.device_syncs / max(s.steps, 1)
        params = self._params or {}
        if self.verdict == "input-bound":
            return (
                f"the model waited for data {shares['data_wait']:.0%} of the time: give the "
                "slowest map more num_parallel_workers (python_multiprocessing=True for Python "
                "code that holds the GIL), move elementwise ops after batch or offload them "
                "(map(..., offload=True)), and pack many small files into record shards "
                "(jisu convert)"
            )
        if self.verdict == "host-bound":
            sink = "" if params.get("dataset_sink_mode") else "dataset_sink_mode=True, "
            return (
                f"{shares['host']:.0%} of the time went to the host outside the train step "
                f"(callbacks, logging, the loop; {reads:.1f} device syncs per step): use "
                f"{sink}print less often (LossMonitor(per_print_times=...)), avoid "
                ".item()/bool() on tensors in callbacks, or use bigger batches"
            )
        advice = f"the train step takes {shares['step']:.0%} of the time: " + _faster_step(
            params, self.precision, self.graph
        )
        capture = params.get("step_capture")
        if self.launch_bound and capture is not None and capture.kind is None:
            advice += (
                "; the step is launch-bound and was not captured as a CUDA graph "
                f"({capture.reason}): capturing it launches the whole step at once"
            )
        return advice

    def report(self, verdict: bool = True, rate: bool = True) -> str:
        """The figures, the precision and graph-mode measurements when there are (or why
        graph mode was not measured, when the doctor says), and (with ``verdict``)
        the verdict line; ``jisu doctor`` leaves the verdict out to print one for the whole
        run. ``rate=False`` leaves out the samples/s of the profiled steps (``jisu train``
        prints one throughput figure of its own)."""
        s = self.summary()
        shares = s.shares()
        speed = f", {s.samples / max(s.wall, 1e-12):.0f} samples/s" if rate else ""
        lines = [
            f"where the time went ({s.steps} steps{speed}): waiting for data "
            f"{shares['data_wait']:.0%}, copying to the device {shares['copy']:.0%}, train step "
            f"{shares['step']:.0%}, other host work {shares['host']:.0%}; "
            f"{s.device_syncs / max(s.steps, 1):.1f} device syncs per step"
        ]
        p = self.precision
        if p is not None:
            lines.append(
                f"precision ({p.steps} steps each after a warm-up step): "
                + ", ".join(f"{k} {1000 * v:.1f} ms per step" for k, v in p.seconds.items())
            )
        if self.graph is not None:
            lines.append(self.graph.figures_line())
        elif self.graph_note is not None:
            lines.append(f"graph mode: not measured ({self.graph_note})")
        lines.extend(self.capture_lines())
        if verdict:
            lines.append(f"verdict: {self.verdict} — {self.advice}")
        return "\n".join(lines)
