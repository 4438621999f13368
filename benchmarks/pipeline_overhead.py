"""Pipeline overhead: jisu against the bare generator and torch.utils.data.DataLoader.

(a) The article's pipeline (examples/seed_article.py: a generator of 224x224x3 float32 images,
    Rescale + HWC2CHW, TypeCast, batch 32) in jisu, against the bare generator alone (the
    ceiling: the source is sequential) and the same work in a DataLoader (best of
    num_workers 0/1/2).
(b) A tiny-sample pipeline: in-memory rows of 64 floats, shuffled, batch 256, in jisu against
    a DataLoader over a TensorDataset (best of num_workers 0/1/2).

Every variant runs ``--repeats`` times, interleaved, and the median rate is reported; ratios
are taken between rates measured in this one run on this one machine.

Usage: python benchmarks/pipeline_overhead.py [--samples 3000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, TensorDataset, get_worker_info

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

from seed_article import create_dataset

import jisu
import jisu.dataset as ds
from jisu.dataset.core.cpus import available_cpus


def article_generator(num_samples: int, worker: int = 0, workers: int = 1):
    """The article's generator_func (rows ``worker::workers`` of it)."""
    for i in range(num_samples):
        if i % workers != worker:
            continue
        image = np.random.uniform(0, 255, (224, 224, 3)).astype(np.float32)
        label = np.array(i % 10).astype(np.int32)
        yield image, label


class ArticleIterable(IterableDataset):
    """The article's pipeline written for a DataLoader: generator + the same per-row work.

    With ``split_source`` each DataLoader worker generates every n-th row itself, which a real
    sequential source (a stream, a generator reading a file) cannot do; without it, worker 0
    runs the whole generator, as jisu does.
    """

    def __init__(self, num_samples: int, split_source: bool = False) -> None:
        self.num_samples = num_samples
        self.split_source = split_source

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        if not self.split_source:
            if worker != 0:
                return
            worker, workers = 0, 1
        for image, label in article_generator(self.num_samples, worker, workers):
            image = np.ascontiguousarray((image * np.float32(1 / 255)).transpose(2, 0, 1))
            yield torch.from_numpy(image), torch.tensor(label, dtype=torch.int32)


def rows_per_second(run: Callable[[], int]) -> float:
    begin = time.perf_counter()
    rows = run()
    return rows / (time.perf_counter() - begin)


def run_bare(n: int) -> int:
    return sum(1 for _ in article_generator(n))


def run_jisu_article(n: int) -> int:
    rows = 0
    for image, _label in create_dataset(num_samples=n).create_tuple_iterator(num_epochs=1):
        rows += image.shape[0]
    return rows


def run_loader(loader: DataLoader) -> int:
    return sum(batch[0].shape[0] for batch in loader)


def median_rates(variants: dict[str, Callable[[], int]], repeats: int) -> dict[str, float]:
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, run in variants.items():
            rates[name].append(rows_per_second(run))
    return {name: statistics.median(r) for name, r in rates.items()}


def article(samples: int, repeats: int) -> None:
    variants: dict[str, Callable[[], int]] = {
        "bare generator": lambda: run_bare(samples),
        "jisu": lambda: run_jisu_article(samples),
    }
    for workers in (0, 1, 2):
        kwargs = {"batch_size": 32, "drop_last": True, "num_workers": workers}
        variants[f"DataLoader num_workers={workers}"] = lambda kw=kwargs: run_loader(
            DataLoader(ArticleIterable(samples), **kw)
        )
    variants["DataLoader split source*"] = lambda: run_loader(
        DataLoader(
            ArticleIterable(samples, split_source=True),
            batch_size=32,
            drop_last=True,
            num_workers=2,
        )
    )
    rates = median_rates(variants, repeats)
    bare = rates["bare generator"]
    best_loader = max(v for k, v in rates.items() if k.startswith("DataLoader num_workers"))
    print(f"(a) article pipeline, {samples} samples, median of {repeats}")
    for name, rate in rates.items():
        print(f"    {name:<26} {rate:9.0f} rows/s  {rate / bare:5.2f}x bare generator")
    print(f"    jisu / bare generator     = {rates['jisu'] / bare:.2f}x   (target >= 0.9x)")
    print(f"    jisu / best DataLoader    = {rates['jisu'] / best_loader:.2f}x")
    print("    * 2 workers each generating every 2nd row: the source itself run in parallel,")
    print("      which a sequential source cannot do (not counted as the best DataLoader)")


def tiny(rows: int, repeats: int) -> None:
    features = np.random.default_rng(0).standard_normal((rows, 64), dtype=np.float32)
    labels = np.arange(rows, dtype=np.int64) % 10
    pipeline = ds.NumpySlicesDataset((features, labels), ["x", "y"], shuffle=True).batch(256)

    def run_jisu() -> int:
        return sum(x.shape[0] for x, _y in pipeline.create_tuple_iterator(num_epochs=1))

    tensors = TensorDataset(torch.from_numpy(features), torch.from_numpy(labels))
    variants: dict[str, Callable[[], int]] = {"jisu": run_jisu}
    for workers in (0, 1, 2):
        variants[f"DataLoader num_workers={workers}"] = lambda w=workers: run_loader(
            DataLoader(tensors, batch_size=256, shuffle=True, num_workers=w)
        )
    rates = median_rates(variants, repeats)
    best_loader = max(v for k, v in rates.items() if k.startswith("DataLoader"))
    print(f"(b) tiny rows (64 floats), batch 256, {rows} rows, median of {repeats}")
    for name, rate in rates.items():
        print(f"    {name:<26} {rate:11.0f} rows/s")
    print(f"    jisu / best DataLoader    = {rates['jisu'] / best_loader:.1f}x   (target >= 10x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--samples", type=int, default=3200, help="article rows per run (a multiple of 32)"
    )
    parser.add_argument("--tiny-rows", type=int, default=200_000, help="tiny rows per run")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ds.config.set_seed(0)
    print(
        f"jisu {jisu.__version__}, torch {torch.__version__}, numpy {np.__version__}, "
        f"python {platform.python_version()}, {available_cpus()} usable CPUs, "
        f"{platform.processor() or platform.machine()}"
    )
    article(args.samples, args.repeats)
    tiny(args.tiny_rows, args.repeats)


if __name__ == "__main__":
    main()
