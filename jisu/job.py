"""``jisu train``: the main job. All three levers on a real (small) data set, measured.

The default data set is the handwritten digits embedded in jisu (UCI, 1,797 8x8 images)
upsampled to 32x32 RGB and JPEG-encoded into jisu record files (80 % train, 20 % test). A small
CNN trains on them through the full pipeline — record reader, parallel decode and augmentation,
batching — with mixed precision (O2: bf16 on CPU, fp16 with device-side loss scaling on GPU; O0
on a CPU without bf16 instructions, where bf16 runs in software), sink mode and graph mode (the
train step compiled by ``torch.compile``), and is evaluated after every epoch. The report gives
accuracy, samples/s, the share of time spent waiting for data, and how jisu compares with a
plain PyTorch loop (DataLoader, per-sample decode, fp32, a ``loss.item()`` per step) on the same
data in the same run.

The comparison interleaves: after jisu's first epoch (compilation, warm-up) the plain loop warms
up; then, after each of up to ``baseline_runs`` jisu epochs spread over the run, the plain loop
runs one epoch of its own. Each jisu epoch and the plain epoch right after it make a pair (the
same machine state, give or take a second), and the headline is the median of the pairs' ratios
with their range (:func:`compare_speeds`): a single pair of runs on a shared machine said 1.75x,
7.87x and 1.29x on three tries. The plain epochs run between jisu's epochs, outside the time
that jisu's monitors measure.

With ``out``, the curves (mean training loss, accuracy and samples/s per epoch) go to
``out/curves.png``.

``--data`` trains on the user's own images instead (a class-per-subfolder image folder, or
jisu/MindRecord record files with "image" and "label" fields); the accuracy is then measured on
the training data, once, after the last epoch (an evaluation per epoch would cost a pass over
the training data each time).

The job's parts: this module holds the settings, the network and the training run (and the
plain PyTorch loop it is compared with); :mod:`.job_data` prepares the data and
:mod:`.job_report` measures and draws what is reported. Their names stay importable from here.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import torch
from torch import nn

from .context import GRAPH_MODE, PYNATIVE_MODE, set_context, stored_settings
from .dataset.core.cpus import available_cpus
from .job_data import MAX_CLASSES as MAX_CLASSES  # re-exported: defined here before
from .job_data import MEAN as MEAN  # re-exported: defined here before
from .job_data import SIZE, _batches, _source, num_classes, pipeline, write_digits_records
from .job_data import STD as STD  # re-exported: defined here before
from .job_report import COMPILE_NOTICE as COMPILE_NOTICE
from .job_report import CompileNotice, EpochCurves, compare_speeds, comparison_epochs, plot_curves
from .job_report import SpeedComparison as SpeedComparison  # re-exported: defined here before
from .profiler import TrainingProfiler
from .train import (
    Callback,
    LearningRateScheduler,
    LossMonitor,
    Model,
    ProgressBar,
    RunContext,
    ThroughputMonitor,
    TimeMonitor,
)
from .train.steps import CompiledStep


@dataclass
class JobConfig:
    """The main job's settings (``jisu train``'s options).

    Attributes:
        amp_level: None: "fastest", the level measured fastest on the first batches
            (:mod:`jisu.train.amp_choice`).
        memory_format: the network's layout, by default measured with the level
            (:mod:`jisu.train.memory_format`).
        baseline: compare with a plain PyTorch loop (needs ``epochs >= 2``: jisu's first
            epoch includes compilation and is never a timed run).
        baseline_runs: the number of interleaved timed runs (epochs) of each, at most
            ``epochs - 1``.
        out: a folder for ``curves.png`` (created if missing); None writes nothing.
    """

    epochs: int = 10
    batch_size: int = 64
    amp_level: str | None = None
    memory_format: str = "fastest"
    sink: bool = True
    graph: bool = True
    workers: int | None = None
    device: str = "CPU"
    data: str | None = None
    lr: float = 0.1
    baseline: bool = True
    verbose: bool = True
    baseline_runs: int = 5
    out: str | None = None


def small_cnn(classes: int) -> nn.Module:
    """Three conv-BN-ReLU blocks and a linear head (~25k parameters)."""

    def block(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]

    return nn.Sequential(
        *block(3, 16), nn.MaxPool2d(2), *block(16, 32), nn.MaxPool2d(2), *block(32, 64),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes),
    )  # fmt: skip


def cosine_lr(peak: float, total_steps: int):
    """Per-step learning rate: cosine decay from ``peak`` to 0 over ``total_steps``."""
    return lambda lr, step: (
        peak * 0.5 * (1 + math.cos(math.pi * min(step, total_steps) / total_steps))
    )


class _PlainImages(torch.utils.data.Dataset):
    """What a plain PyTorch user writes: decode and augment one sample per ``__getitem__``."""

    def __init__(self, rows: list[tuple[np.ndarray, int]]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        encoded, label = self.rows[i]
        image = cv2.imdecode(encoded, cv2.IMREAD_COLOR)[..., ::-1]
        image = cv2.resize(image, (SIZE, SIZE)) if image.shape[:2] != (SIZE, SIZE) else image
        padded = np.pad(image, ((2, 2), (2, 2), (0, 0)))
        top, left = np.random.randint(0, 5, size=2)
        crop = padded[top : top + SIZE, left : left + SIZE]
        tensor = torch.from_numpy(np.ascontiguousarray(crop)).permute(2, 0, 1).float()
        return (tensor - 127.5) / 127.5, int(label)


class PlainLoop:
    """A plain eager PyTorch loop on the same data: DataLoader with per-sample decode and
    augmentation, and a ``loss.item()`` per step, as most training scripts log the loss. Its own
    network and optimizer train across its runs; only its speed is used. It runs in fp32 or,
    with ``precision`` "bf16 autocast", under ``torch.autocast`` in bf16 (what a PyTorch user
    writes for mixed precision): :meth:`choose_precision` keeps the faster of the two."""

    PRECISIONS = ("fp32", "bf16 autocast")

    def __init__(self, path: str, cfg: JobConfig, classes: int, device: torch.device) -> None:
        data = _source(path, shuffle=False, workers=1)
        rows = [
            (img, int(lbl))
            for img, lbl in data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        ]
        # its own generators: running between jisu's epochs, it leaves their random state alone
        self.loader = torch.utils.data.DataLoader(
            _PlainImages(rows),
            batch_size=cfg.batch_size,
            shuffle=True,
            drop_last=True,
            generator=torch.Generator().manual_seed(0),
        )
        self.device = device
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            self.net = small_cnn(classes).to(device)
        self.opt = torch.optim.SGD(
            self.net.parameters(), lr=cfg.lr * 0.1, momentum=0.9, nesterov=True
        )
        self.loss_fn = nn.CrossEntropyLoss()
        self.precision = "fp32"

    def choose_precision(self, steps: int = 6, rounds: int = 2) -> None:
        """Time ``steps`` steps in each precision, taking turns for ``rounds`` rounds, and
        keep the faster (the median rate): the baseline gets the precision its author would
        have picked after trying both."""
        rates: dict[str, list[float]] = {p: [] for p in self.PRECISIONS}
        for number in range(rounds):
            for precision in self.PRECISIONS[:: 1 if number % 2 == 0 else -1]:
                self.precision = precision
                rates[precision].append(self.run(max_steps=steps))
        self.precision = max(self.PRECISIONS, key=lambda p: statistics.median(rates[p]))

    def run(self, max_steps: int | None = None) -> float:
        """One epoch (or its first ``max_steps`` steps); returns its samples/s."""
        samples, begin = 0, time.perf_counter()
        for step, (images, labels) in enumerate(self.loader):
            if max_steps is not None and step == max_steps:
                break
            images, labels = images.to(self.device), labels.to(self.device)
            self.opt.zero_grad()
            with torch.autocast(self.device.type, torch.bfloat16, enabled=self.precision != "fp32"):
                loss = self.loss_fn(self.net(images), labels)
            loss.backward()
            self.opt.step()
            loss.item()  # host-device sync: what every plain loop does to log the loss
            samples += images.shape[0]
        return samples / max(time.perf_counter() - begin, 1e-9)


class InterleavedBaseline(Callback):
    """Runs the plain loop between jisu's epochs: a short warm-up after the first epoch, then
    one plain epoch after each epoch of ``epochs``, paired with that jisu epoch's samples/s
    (from ``throughput``, placed before this callback)."""

    def __init__(self, plain: PlainLoop, epochs: list[int], throughput: ThroughputMonitor) -> None:
        self.plain, self.epochs, self.throughput = plain, set(epochs), throughput
        self.jisu: list[float] = []
        self.plain_rates: list[float] = []
        self.plain_epochs: list[int] = []  # the jisu epoch each plain run followed

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        epoch = run_context.original_args().cur_epoch_num
        if epoch == 1 and self.epochs:
            self.plain.run(max_steps=5)  # the plain loop's first steps: allocations, kernels
            self.plain.choose_precision()
        if epoch in self.epochs:
            self.jisu.append(self.throughput.epochs[-1]["samples_per_second"])
            self.plain_rates.append(self.plain.run())
            self.plain_epochs.append(epoch)


def pipeline_workers(device: str, cpus: int) -> int:
    """The pipeline's default worker count: the CPUs this process may use when the step runs
    on an accelerator; a quarter of them (at least one) on the CPU, where the step's own
    threads use every core and each pipeline thread takes a core from them (on 2 cores,
    ``jisu train`` measured 3,380-3,420 samples/s with 1 worker, 3,270-3,560 with 2)."""
    return cpus if device != "CPU" else max(1, cpus // 4)


def run(cfg: JobConfig) -> dict[str, Any]:
    """Train, evaluate and measure; returns the figures the command prints."""
    if cfg.amp_level is None:
        cfg = dataclasses.replace(cfg, amp_level="fastest")
    previous = stored_settings("mode", "device_target")
    set_context(device_target=cfg.device, mode=GRAPH_MODE if cfg.graph else PYNATIVE_MODE)
    try:
        return _run(cfg)
    finally:
        set_context(**previous)


def _run(cfg: JobConfig) -> dict[str, Any]:
    device = torch.device({"CPU": "cpu", "GPU": "cuda", "Ascend": "npu"}[cfg.device])
    workers = cfg.workers or pipeline_workers(cfg.device, available_cpus())
    begin = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="jisu-train-") as scratch:
        if cfg.data is None:
            train_path, test_path = write_digits_records(scratch)
            resize = False
        else:
            train_path = test_path = cfg.data
            resize = True
        classes = num_classes(train_path)  # checks the labels first: they size the network
        train = pipeline(train_path, True, cfg.batch_size, workers, resize)
        test = pipeline(test_path, False, cfg.batch_size, workers, resize)
        steps = train.get_dataset_size()
        if steps == 0:
            raise ValueError(f"jisu train: fewer samples than one batch of {cfg.batch_size}")
        torch.manual_seed(0)
        net = small_cnn(classes)
        opt = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True)
        model = Model(
            net,
            nn.CrossEntropyLoss(),
            opt,
            metrics={"acc"},
            amp_level=cfg.amp_level,
            memory_format=cfg.memory_format,
        )
        throughput = ThroughputMonitor(verbose=False)
        profiler = TrainingProfiler(verbose=False)
        callbacks: list[Callback] = [
            throughput,
            profiler,
            LearningRateScheduler(cosine_lr(cfg.lr, cfg.epochs * steps)),
        ]
        if cfg.verbose:
            callbacks += [TimeMonitor(), LossMonitor(per_print_times=steps)]
        if sys.stderr.isatty():  # Model's own bar would come last, after the work below
            callbacks.append(ProgressBar())
        elif cfg.graph:  # a job's log: the bar's compile notice as a line
            callbacks.append(CompileNotice())
        # after every monitor: what these do at an epoch's end is outside the measured epochs
        every_epoch = cfg.data is None
        # the test set has no random op: read through its pipeline once and kept as batches,
        # its evaluation after every epoch costs only the forward passes (not ~0.3 s of
        # pipeline start-up each time)
        eval_data = _batches(test) if every_epoch else test
        curves = EpochCurves(model, eval_data, throughput, every_epoch)
        callbacks.append(curves)
        windows = comparison_epochs(cfg.epochs, cfg.baseline_runs) if cfg.baseline else []
        baseline = None
        if windows:
            baseline = InterleavedBaseline(
                PlainLoop(train_path, cfg, classes, device), windows, throughput
            )
            callbacks.append(baseline)
        model.train(cfg.epochs, train, callbacks=callbacks, dataset_sink_mode=cfg.sink)
        accuracy = curves.values["accuracy"][-1]
        steady = throughput.epochs[1:] or throughput.epochs
        rate = float(np.mean([e["samples_per_second"] for e in steady]))
        wait = float(np.mean([e["data_wait_share"] for e in steady]))
    comparison = plain = None
    plain_runs: list[tuple[int, float]] = []
    if baseline is not None:
        comparison = compare_speeds(baseline.jisu, baseline.plain_rates)
        plain = statistics.median(baseline.plain_rates)
        plain_runs = list(zip(baseline.plain_epochs, baseline.plain_rates))
    png = None
    if cfg.out is not None:
        os.makedirs(cfg.out, exist_ok=True)
        where = "test" if cfg.data is None else "training"
        png = plot_curves(curves.values, os.path.join(cfg.out, "curves.png"), plain_runs, where)
    return {
        "accuracy": accuracy,
        "samples_per_second": rate,
        "data_wait_share": wait,
        "plain_samples_per_second": plain,
        "plain_precision": baseline.plain.precision if baseline is not None else None,
        "comparison": comparison,
        "curves": curves.values,
        "curves_png": png,
        "where_the_time_went": profiler.report(rate=False),  # one throughput figure: the above
        "rate_epochs": (steady[0]["epoch"], steady[-1]["epoch"]),
        "seconds": time.perf_counter() - begin,
        "workers": workers,
        "steps_per_epoch": steps,
        "device": str(device),
        "amp": model.amp_choice.describe() if model.amp_choice is not None else None,
        "graph_mode": describe_graph_mode(model),
    }


def describe_graph_mode(model: Model) -> str | None:
    """What GRAPH_MODE chose for the run and why (None when the job ran in PYNATIVE_MODE)."""
    step = model.train_network
    return step.describe() if isinstance(step, CompiledStep) else None
