"""GIL-bound Python transforms: jisu worker processes against one process and DataLoader.

A pure-Python per-element transform (~2 ms per sample) over a random-access in-memory source,
shuffled, batch 32: jisu with ``python_multiprocessing=True`` and 2 worker processes, against
the same with 1 worker process, and against ``torch.utils.data.DataLoader(num_workers=2)`` on
the same data. Rates are samples/s over epochs 2-4 (each epoch's start included); the time to
the first batch of epoch 1 and of epoch 2 is reported too (in this process, where only the first
jisu run starts the forkserver).

Start-up in a fresh program: the time from building the pipeline to its first batch, in a new
Python process each time (jisu's forkserver and workers start from nothing, as in a training
script's first run; imports and data generation are not counted), median of ``--fresh`` runs.

Usage: python benchmarks/python_transforms.py [--samples 1024] [--repeats 3] [--fresh 7]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import jisu
import jisu.dataset as ds
from jisu.dataset.core.cpus import available_cpus

SHAPE = (24, 24, 3)


def python_transform(image: np.ndarray) -> np.ndarray:
    """Pure-Python work holding the GIL: a running checksum over every element, 20 times."""
    values = image.ravel().tolist()
    acc = 0
    for _ in range(20):
        for v in values:
            acc = (acc * 31 + v) & 0xFFFF
    out = image.astype(np.float32)
    out[0, 0, 0] = acc
    return out


class TorchSource(Dataset):
    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        return torch.from_numpy(python_transform(self.images[i])), int(self.labels[i])


def epochs(make_iterable, count: int) -> tuple[list[float], float]:
    """Seconds to the first batch of each epoch, and samples/s over epochs 2..count."""
    first = []
    steady_samples, steady_begin = 0, 0.0
    for epoch, iterable in enumerate(make_iterable(count)):
        begin = time.perf_counter()
        if epoch == 1:
            steady_begin = begin
        for k, (image, _label) in enumerate(iterable):
            if k == 0:
                first.append(time.perf_counter() - begin)
            if epoch >= 1:
                steady_samples += image.shape[0]
    return first, steady_samples / (time.perf_counter() - steady_begin)


def jisu_epochs(images, labels, workers):
    def make(count):
        data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=True)
        data = data.map(
            python_transform, "image", num_parallel_workers=workers, python_multiprocessing=True
        ).batch(32, num_parallel_workers=workers)
        it = data.create_tuple_iterator(num_epochs=count)
        try:
            for _ in range(count):
                yield it
        finally:
            it.close()

    return make


def loader_epochs(images, labels, workers, persistent=False):
    def make(count):
        loader = DataLoader(
            TorchSource(images, labels),
            batch_size=32,
            shuffle=True,
            num_workers=workers,
            persistent_workers=persistent,
        )
        for _ in range(count):
            yield loader

    return make


FRESH = {  # start-up variants measured in fresh processes: name -> make(images, labels)(count)
    "jisu, 2 worker processes": lambda images, labels: jisu_epochs(images, labels, 2),
    "DataLoader num_workers=2": lambda images, labels: loader_epochs(images, labels, 2),
}


def first_batch_seconds(name: str, samples: int) -> float:
    """In this (fresh) process: seconds from building variant ``name``'s pipeline to its first
    batch."""
    images, labels = make_data(samples)
    begin = time.perf_counter()
    epochs = FRESH[name](images, labels)(1)
    next(iter(next(epochs)))
    seconds = time.perf_counter() - begin
    epochs.close()
    return seconds


def fresh_first_batch(name: str, samples: int, runs: int) -> list[float]:
    """:func:`first_batch_seconds` of ``name`` in ``runs`` new Python processes."""
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, __file__, "--samples", str(samples), "--first-batch-of", name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        times.append(float(out.split()[-1]))
    return times


def make_data(samples: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (samples, *SHAPE), dtype=np.uint8)
    return images, np.arange(samples) % 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fresh", type=int, default=7, help="fresh processes per start-up")
    parser.add_argument("--first-batch-of", choices=list(FRESH), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_batch_of:  # a child of fresh_first_batch
        print(f"{first_batch_seconds(args.first_batch_of, args.samples):.6f}")
        return
    images, labels = make_data(args.samples)
    begin = time.perf_counter()
    for i in range(64):
        python_transform(images[i])
    per_sample_ms = (time.perf_counter() - begin) / 64 * 1000
    print(
        f"jisu {jisu.__version__}, torch {torch.__version__}, python "
        f"{platform.python_version()}, {available_cpus()} usable CPUs; transform "
        f"{per_sample_ms:.2f} ms per sample; {args.samples} samples, batch 32"
    )
    variants = {
        "jisu, 2 worker processes": jisu_epochs(images, labels, 2),
        "jisu, 1 worker process": jisu_epochs(images, labels, 1),
        "DataLoader num_workers=2": loader_epochs(images, labels, 2),
        "DataLoader, persistent": loader_epochs(images, labels, 2, persistent=True),
    }
    if args.fresh > 0:
        print(f"  first batch in a fresh process (median of {args.fresh}; min-max):")
    for name in FRESH if args.fresh > 0 else ():
        times = fresh_first_batch(name, args.samples, args.fresh)
        print(
            f"    {name:<26} {statistics.median(times) * 1000:5.0f} ms  "
            f"({min(times) * 1000:.0f}-{max(times) * 1000:.0f})"
        )
    results: dict[str, list[tuple[list[float], float]]] = {k: [] for k in variants}
    for _ in range(args.repeats):
        for name, make in variants.items():
            results[name].append(epochs(make, 4))
    ceiling = available_cpus() / (per_sample_ms / 1000)
    print(f"  ceiling: {available_cpus()} cores / transform time = {ceiling:.0f} samples/s")
    summary = {}
    for name, runs in results.items():
        rate = statistics.median(steady for _, steady in runs)
        first_1 = statistics.median(first[0] for first, _ in runs)
        first_2 = statistics.median(first[1] for first, _ in runs)
        summary[name] = rate
        print(
            f"  {name:<26} {rate:6.0f} samples/s ({rate / ceiling:4.0%} of ceiling)  first "
            f"batch: epoch 1 {first_1 * 1000:5.0f} ms, epoch 2 {first_2 * 1000:4.0f} ms "
            "(in this process)"
        )
    two, one = summary["jisu, 2 worker processes"], summary["jisu, 1 worker process"]
    loader = summary["DataLoader num_workers=2"]
    print(f"  2 workers / 1 worker        = {two / one:.2f}x   (target >= 1.7x)")
    print(f"  jisu / DataLoader(2)        = {two / loader:.2f}x   (target >= 1.1x)")


if __name__ == "__main__":
    main()
