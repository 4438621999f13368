"""``jisu train``: the main job. All three levers on a real (small) data set, measured.

The default data set is scikit-learn's handwritten digits (1,797 8x8 images) upsampled to 32x32
RGB and JPEG-encoded into jisu record files (80 % train, 20 % test). A small CNN trains on them
through the full pipeline — record reader, parallel decode and augmentation, batching — with
mixed precision (O2: bf16 on CPU, fp16 with device-side loss scaling on GPU), sink mode and
graph mode (the train step compiled by ``torch.compile``), then is evaluated. The report gives
accuracy, samples/s, the share of time spent waiting for data, and the speed-up over a plain
PyTorch loop (DataLoader, per-sample decode, fp32, a ``loss.item()`` per step) measured in the
same run on the same data.

``--data`` trains on the user's own images instead (a class-per-subfolder image folder, or
jisu/MindRecord record files with "image" and "label" fields); the accuracy is then measured on
the training data.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
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
from .train import LearningRateScheduler, LossMonitor, Model, ThroughputMonitor, TimeMonitor

SIZE = 32
MEAN, STD = [127.5] * 3, [127.5] * 3


@dataclass
class JobConfig:
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


def num_classes(path: str) -> int:
    """The folder's classes, or the largest record label + 1."""
    if _is_image_folder(path):
        return len(ds.ImageFolderDataset(path).get_class_indexing())
    labels = ds.RecordDataset(path, columns_list=["label"]).batch(4096)
    batches = labels.create_tuple_iterator(num_epochs=1, output_numpy=True)
    return max(int(batch[0].max()) for batch in batches) + 1


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


def plain_pytorch_rate(path: str, cfg: JobConfig, classes: int, device: torch.device) -> float:
    """Samples/s of a plain eager fp32 PyTorch loop on the same data (its second epoch: the
    first warms it up, as jisu's rate leaves out its first epoch)."""
    data = _source(path, shuffle=False, workers=1)
    rows = [
        (img, int(lbl)) for img, lbl in data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    ]
    loader = torch.utils.data.DataLoader(
        _PlainImages(rows), batch_size=cfg.batch_size, shuffle=True, drop_last=True
    )
    torch.manual_seed(0)
    net = small_cnn(classes).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=cfg.lr * 0.1, momentum=0.9, nesterov=True)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(2):
        samples, begin = 0, time.perf_counter()
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            opt.zero_grad()
            loss = loss_fn(net(images), labels)
            loss.backward()
            opt.step()
            loss.item()  # what every plain loop does to log the loss
            samples += images.shape[0]
    return samples / (time.perf_counter() - begin)


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
        train = pipeline(train_path, True, cfg.batch_size, workers, resize)
        test = pipeline(test_path, False, cfg.batch_size, workers, resize)
        classes = num_classes(train_path)
        steps = train.get_dataset_size()
        if steps == 0:
            raise ValueError(f"jisu train: fewer samples than one batch of {cfg.batch_size}")
        torch.manual_seed(0)
        net = small_cnn(classes)
        opt = torch.optim.SGD(net.parameters(), lr=cfg.lr, momentum=0.9, nesterov=True)
        model = Model(net, nn.CrossEntropyLoss(), opt, metrics={"acc"}, amp_level=cfg.amp_level)
        throughput = ThroughputMonitor(verbose=False)
        profiler = TrainingProfiler(verbose=False)
        callbacks = [
            throughput,
            profiler,
            LearningRateScheduler(cosine_lr(cfg.lr, cfg.epochs * steps)),
        ]
        if cfg.verbose:
            callbacks += [TimeMonitor(), LossMonitor(per_print_times=steps)]
        model.train(cfg.epochs, train, callbacks=callbacks, dataset_sink_mode=cfg.sink)
        accuracy = model.eval(test)["acc"]
        steady = throughput.epochs[1:] or throughput.epochs
        rate = float(np.mean([e["samples_per_second"] for e in steady]))
        wait = float(np.mean([e["data_wait_share"] for e in steady]))
        plain = plain_pytorch_rate(train_path, cfg, classes, device) if cfg.baseline else None
    return {
        "accuracy": accuracy,
        "samples_per_second": rate,
        "data_wait_share": wait,
        "plain_samples_per_second": plain,
        "where_the_time_went": profiler.report(),
        "seconds": time.perf_counter() - begin,
        "workers": workers,
        "steps_per_epoch": steps,
        "device": str(device),
    }
