"""Batch iteration as MindSpore loops and torch loops read it.

Rows of 64 float32 values and an int label, in memory, batch 256, read for ``--epochs``
epochs through three loops:

- ``torch``: ``create_tuple_iterator()``, the batches as torch tensors (what torch code reads);
- ``asnumpy``: ``create_dict_iterator()`` calling MindSpore's ``.asnumpy()`` on each column
  (what a ported MindSpore loop does);
- ``numpy``: ``create_dict_iterator(output_numpy=True)``;

against a plain ``torch.utils.data.DataLoader`` over a ``TensorDataset`` with the same batch
size (``num_workers=0``, one epoch; the ratio in the last column). Every variant runs
``--repeats`` times, interleaved, and the median rate is reported.

Run it in two trees (``PYTHONPATH=<tree>``) to compare versions: the issue-29 check that
``asnumpy()`` on every iterator costs batch iteration nothing measurable. On a tree from
before ``asnumpy()`` came with every iterator, the ``asnumpy`` loop calls
``jisu.compat.add_asnumpy()`` first.

Usage: python benchmarks/iterator_outputs.py [--rows 200000] [--epochs 10] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

import jisu
import jisu.dataset as ds

BATCH = 256


def source(rows: int) -> ds.Dataset:
    rng = np.random.default_rng(0)
    data = {
        "x": rng.standard_normal((rows, 64), dtype=np.float32),
        "y": rng.integers(0, 10, rows).astype(np.int64),
    }
    return ds.NumpySlicesDataset(data, shuffle=False).batch(BATCH)


def rate(loop, epochs: int, rows: int) -> float:
    start = time.perf_counter()
    loop(epochs)
    return epochs * rows / (time.perf_counter() - start)


def dataloader_rate(loop, rows: int) -> float:
    start = time.perf_counter()
    loop(1)
    return rows / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if not hasattr(torch.Tensor, "asnumpy"):
        jisu.compat.add_asnumpy()  # an older tree: asnumpy() was opt-in
    data = source(args.rows)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((args.rows, 64), np.float32))
    loader = DataLoader(TensorDataset(x, torch.zeros(args.rows, dtype=torch.int64)), BATCH)

    def torch_loop(epochs: int) -> None:
        it = data.create_tuple_iterator(num_epochs=epochs)
        for _ in range(epochs):
            for _batch in it:
                pass

    def asnumpy_loop(epochs: int) -> None:
        it = data.create_dict_iterator(num_epochs=epochs)
        for _ in range(epochs):
            for row in it:
                row["x"].asnumpy(), row["y"].asnumpy()

    def numpy_loop(epochs: int) -> None:
        it = data.create_dict_iterator(num_epochs=epochs, output_numpy=True)
        for _ in range(epochs):
            for _row in it:
                pass

    def dataloader_loop(epochs: int) -> None:  # one epoch: 25x slower, a rate all the same
        for _batch in loader:
            pass

    loops = {
        "torch": torch_loop,
        "asnumpy": asnumpy_loop,
        "numpy": numpy_loop,
        "DataLoader": dataloader_loop,
    }
    rates: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(args.repeats):
        for name, loop in loops.items():
            if name == "DataLoader":
                rates[name].append(dataloader_rate(loop, args.rows))
            else:
                rates[name].append(rate(loop, args.epochs, args.rows))
    base = statistics.median(rates["DataLoader"])
    print(f"jisu {jisu.__version__}, {args.rows} rows x {args.epochs} epochs, batch {BATCH}")
    print(f"{'loop':<11} {'median rows/s':>14} {'vs DataLoader':>14}   rounds (k rows/s)")
    for name, values in rates.items():
        median = statistics.median(values)
        rounds = ", ".join(f"{v / 1e3:.0f}" for v in values)
        print(f"{name:<11} {median:>14,.0f} {median / base:>13.2f}x   {rounds}")


if __name__ == "__main__":
    main()
