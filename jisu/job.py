"""``jisu train``: the main job. All three levers on a real (small) data set, measured.

The default data set is scikit-learn's handwritten digits (1,797 8x8 images) upsampled to 32x32
RGB and JPEG-encoded into jisu record files (80 % train, 20 % test). A small CNN trains on them
through the full pipeline — record reader, parallel decode and augmentation, batching — with
mixed precision (O2: bf16 on CPU, fp16 with device-side loss scaling on GPU), sink mode and
graph mode (the train step compiled by ``torch.compile``), and is evaluated after every
epoch. The report gives accuracy, samples/s, the share of time spent waiting for data, and how
jisu compares with a plain PyTorch loop (DataLoader, per-sample decode, fp32, a ``loss.item()``
per step) on the same data in the same run.

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
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import simplejpeg
import torch
from torch import nn

from . import dataset as ds
from .context import GRAPH_MODE, PYNATIVE_MODE, get_context, set_context
from .dataset import transforms, vision
from .dataset.engine.cpus import available_cpus
from .dataset.record.writer import FileWriter
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

SIZE = 32
MEAN, STD = [127.5] * 3, [127.5] * 3


@dataclass
class JobConfig:
    """The main job's settings (``jisu train``'s options).

    Attributes:
        baseline: compare with a plain PyTorch loop (needs ``epochs >= 2``: jisu's first
            epoch includes compilation and is never a timed run).
        baseline_runs: the number of interleaved timed runs (epochs) of each, at most
            ``epochs - 1``.
        out: a folder for ``curves.png`` (created if missing); None writes nothing.
    """

    epochs: int = 10
    batch_size: int = 64
    amp_level: str = "O2"
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


def write_digits_records(folder: str) -> tuple[str, str]:
    """scikit-learn's digits as 32x32 RGB JPEGs in two record data sets (train, test)."""
    from sklearn.datasets import load_digits

    images, labels = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(images))
    cut = int(len(images) * 0.8)
    paths = []
    for name, part in (("digits-train", order[:cut]), ("digits-test", order[cut:])):
        rows = []
        for i in part:
            gray = (images[i].reshape(8, 8) * 16).clip(0, 255).astype(np.uint8)
            gray = cv2.resize(gray, (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)
            rgb = np.ascontiguousarray(np.repeat(gray[..., None], 3, axis=2))
            rows.append({"image": simplejpeg.encode_jpeg(rgb, quality=95), "label": int(labels[i])})
        path = os.path.join(folder, name)
        writer = FileWriter(path)
        writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}})
        writer.write_raw_data(rows)
        writer.commit()
        paths.append(path)
    return paths[0], paths[1]


def _is_image_folder(path: str) -> bool:
    return os.path.isdir(path) and not any(f.endswith(".json") for f in os.listdir(path))


def _source(path: str, shuffle: bool, workers: int) -> ds.Dataset:
    """(encoded image, label) rows of an image folder or of record files."""
    if _is_image_folder(path):
        return ds.ImageFolderDataset(path, shuffle=shuffle, num_parallel_workers=workers)
    return ds.RecordDataset(path, shuffle=shuffle, num_parallel_workers=workers)


#: the most classes ``jisu train`` builds a network for: a record label must be a class id
#: from 0 to ``MAX_CLASSES - 1`` (the head is then at most 64 x 100,000 weights, 26 MB)
MAX_CLASSES = 100_000


def num_classes(path: str) -> int:
    """The folder's classes, or the largest record label + 1, once every label is checked to
    be a plausible class id.

    The class count sizes the network's last layer, so one stray label (5,000,000) would
    build a head of gigabytes. A record label must be an integer (an integer-valued float
    passes) from 0 to ``MAX_CLASSES - 1``, one per row. Labels may be sparse: a subset of a
    large label set (a few classes of ImageNet-21k) keeps its ids, so the count is not
    compared with the number of rows; the cap bounds the head whatever the rows.

    Raises:
        ValueError: a label field that is not a scalar number, a label that is not a class
            id (naming its row, counted from 0 in the files' order), no rows, or a folder of
            more than ``MAX_CLASSES`` classes.
    """
    if _is_image_folder(path):
        count = len(ds.ImageFolderDataset(path).get_class_indexing())
        if count > MAX_CLASSES:
            raise ValueError(
                f"--data '{path}' has {count} class folders, more than the "
                f"{MAX_CLASSES} classes jisu train builds a network for (MAX_CLASSES)"
            )
        return count
    data = ds.RecordDataset(path, columns_list=["label"], shuffle=False)
    field = next(f for f in data.reader.fields if f.name == "label")
    if field.dtype is None or field.dtype.kind not in "iuf" or field.shape:
        kind = field.type + (f" of shape {field.shape}" if field.shape else "")
        raise ValueError(
            f"--data '{path}': its label field is {kind}; it must hold one "
            "integer class id per row (int32 or int64)"
        )
    largest, row = -1, 0
    batches = data.batch(4096).create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        for (labels,) in batches:
            labels = labels.reshape(-1)
            good = (labels >= 0) & (labels < MAX_CLASSES)
            if labels.dtype.kind == "f":
                good &= labels == np.floor(labels)  # NaN fails both
            if not good.all():
                bad = int(np.argmin(good))
                raise ValueError(
                    f"--data '{path}': row {row + bad} has label "
                    f"{labels[bad].item()!r}, which is not a class id: labels must be integers "
                    f"from 0 to {MAX_CLASSES - 1} (MAX_CLASSES = {MAX_CLASSES})"
                )
            largest = max(largest, int(labels.max()))
            row += len(labels)
    finally:
        batches.close()
    if row == 0:
        raise ValueError(f"--data '{path}' has no rows")
    return largest + 1


def pipeline(path: str, train: bool, batch_size: int, workers: int, resize: bool) -> ds.Dataset:
    """Record/folder -> Decode (-> Resize) (-> RandomCrop with padding) -> Normalize -> CHW."""
    data = _source(path, shuffle=train, workers=workers)
    ops: list[Any] = [vision.Decode()]
    if resize:
        ops.append(vision.Resize((SIZE, SIZE)))
    if train:
        ops.append(vision.RandomCrop(SIZE, padding=2))
    ops += [vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    data = data.map(ops, "image", num_parallel_workers=workers)
    data = data.map(transforms.TypeCast(torch.int64), "label", num_parallel_workers=workers)
    return data.batch(batch_size if train else 256, drop_remainder=train)


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
    """A plain eager fp32 PyTorch loop on the same data: DataLoader with per-sample decode and
    augmentation, and a ``loss.item()`` per step, as most training scripts log the loss. Its own
    network and optimizer train across its runs; only its speed is used."""

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

    def run(self, max_steps: int | None = None) -> float:
        """One epoch (or its first ``max_steps`` steps); returns its samples/s."""
        samples, begin = 0, time.perf_counter()
        for step, (images, labels) in enumerate(self.loader):
            if max_steps is not None and step == max_steps:
                break
            images, labels = images.to(self.device), labels.to(self.device)
            self.opt.zero_grad()
            loss = self.loss_fn(self.net(images), labels)
            loss.backward()
            self.opt.step()
            loss.item()  # host-device sync: what every plain loop does to log the loss
            samples += images.shape[0]
        return samples / max(time.perf_counter() - begin, 1e-9)


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


def _batches(dataset: ds.Dataset) -> list[tuple[torch.Tensor, ...]]:
    """One epoch of ``dataset`` as a list of batches (an iterable ``Model.eval`` takes)."""
    iterator = dataset.create_tuple_iterator(num_epochs=1)
    try:
        return [tuple(batch) for batch in iterator]
    finally:
        iterator.close()


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
        if epoch in self.epochs:
            self.jisu.append(self.throughput.epochs[-1]["samples_per_second"])
            self.plain_rates.append(self.plain.run())
            self.plain_epochs.append(epoch)


def plot_curves(
    values: dict[str, Sequence[float | None]],
    path: str,
    plain: Sequence[tuple[int, float]] = (),
    accuracy_of: str = "test",
) -> str:
    """Draw the per-epoch ``values`` (``loss``, ``accuracy``, ``samples_per_second``, epoch 1
    first; an accuracy of None is not drawn) side by side into the PNG ``path``; returns
    ``path``.

    Args:
        plain: the plain loop's runs as ``(epoch it followed, samples/s)``, drawn as points
            and their median as a dashed line on the speed panel.
        accuracy_of: what the accuracy was measured on ("test", "training").

    Uses matplotlib's Agg canvas directly (no pyplot: the caller's backend and figures are
    left alone).
    """
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


def run(cfg: JobConfig) -> dict[str, Any]:
    """Train, evaluate and measure; returns the figures the command prints."""
    previous = {k: get_context(k) for k in ("mode", "device_target")}
    set_context(device_target=cfg.device, mode=GRAPH_MODE if cfg.graph else PYNATIVE_MODE)
    try:
        return _run(cfg)
    finally:
        set_context(**previous)


def _run(cfg: JobConfig) -> dict[str, Any]:
    device = torch.device({"CPU": "cpu", "GPU": "cuda", "Ascend": "npu"}[cfg.device])
    workers = cfg.workers or available_cpus()
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
        model = Model(net, nn.CrossEntropyLoss(), opt, metrics={"acc"}, amp_level=cfg.amp_level)
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
        "comparison": comparison,
        "curves": curves.values,
        "curves_png": png,
        "where_the_time_went": profiler.report(rate=False),  # one throughput figure: the above
        "rate_epochs": (steady[0]["epoch"], steady[-1]["epoch"]),
        "seconds": time.perf_counter() - begin,
        "workers": workers,
        "steps_per_epoch": steps,
        "device": str(device),
    }
