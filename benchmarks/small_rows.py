"""Small rows one by one (no batch) and in batches, against DataLoader and a bare loop.

Iterating rows unbatched is where a pipeline's per-row machinery shows: each row crosses from
the pipeline's threads to the consumer. Variants, interleaved for ``--rounds`` rounds, each
one epoch of ``--rows`` rows, shuffled:

- NumPy rows: ``NumpySlicesDataset({"label": int64})`` against ``DataLoader(TensorDataset,
  batch_size=None, shuffle=True)`` (PyTorch's unbatched loop; num_workers=0, its best here:
  2 workers ran 729 rows/s, each row a round trip to a worker process) and
  a bare Python loop over a permutation (the ceiling: no pipeline at all);
- record rows of 4 KiB bytes + an int64 label (``FileWriter``, 13 shards, local disk):
  ``RecordDataset`` unbatched and ``batch(64, ragged=["data"])``, against a bare loop that
  reads each row with the reader directly (``RecordDataset(...).reader[i]``).

Usage: python benchmarks/small_rows.py [--rows 200000] [--record-rows 40000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

import jisu.dataset as ds


def rate(rows: Callable[[], object], count: Callable[[object], int] = lambda _: 1) -> float:
    begin = time.perf_counter()
    n = sum(count(row) for row in rows())
    return n / (time.perf_counter() - begin)


def numpy_variants(n: int) -> dict[str, Callable[[], float]]:
    labels = np.arange(n, dtype=np.int64)
    tensors = TensorDataset(torch.from_numpy(labels))

    def jisu_rows():
        data = ds.NumpySlicesDataset({"label": labels}, shuffle=True)
        return data.create_tuple_iterator(num_epochs=1, output_numpy=True)

    def bare():
        order = np.random.default_rng(0).permutation(n)
        return (labels[i : i + 1].reshape(()) for i in order)

    def loader(workers: int):
        return lambda: DataLoader(tensors, batch_size=None, shuffle=True, num_workers=workers)

    return {
        "numpy rows: jisu": lambda: rate(jisu_rows),
        "numpy rows: DataLoader(batch_size=None), 0 workers": lambda: rate(loader(0)),
        "numpy rows: bare loop (ceiling)": lambda: rate(bare),
    }


def record_variants(path: str, n: int) -> dict[str, Callable[[], float]]:
    rng = np.random.default_rng(0)
    writer = ds.FileWriter(path, shard_num=13)
    writer.add_schema({"data": {"type": "bytes"}, "label": {"type": "int64"}})
    for start in range(0, n, 1000):
        writer.write_raw_data([{"data": rng.bytes(4096), "label": start + k} for k in range(1000)])
    writer.commit()

    def rows():
        data = ds.RecordDataset(path, shuffle=True, num_parallel_workers=2)
        return data.create_tuple_iterator(num_epochs=1, output_numpy=True)

    def batches():
        data = ds.RecordDataset(path, shuffle=True, num_parallel_workers=2)
        data = data.batch(64, ragged=["data"])
        return data.create_tuple_iterator(num_epochs=1, output_numpy=True)

    def bare():
        reader = ds.RecordDataset(path, shuffle=False).reader
        return (reader[int(i)] for i in np.random.default_rng(0).permutation(n))

    return {
        "record rows: jisu": lambda: rate(rows),
        "record rows: jisu batch(64, ragged)": lambda: rate(batches, lambda b: len(b[1])),
        "record rows: bare reader loop (ceiling)": lambda: rate(bare),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--record-rows", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, torch {torch.__version__}")
    with tempfile.TemporaryDirectory(prefix="jisu-small-rows-") as scratch:
        variants = numpy_variants(args.rows)
        variants |= record_variants(os.path.join(scratch, "train.rec"), args.record_rows)
        runs: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, measure in variants.items():
                runs[name].append(measure())
    for name, values in runs.items():
        print(f"  {name:<52} {statistics.median(values):>10,.0f} rows/s")

    def ratio(a: str, b: str) -> str:
        values = [x / y for x, y in zip(runs[a], runs[b])]
        rounds = ", ".join(f"{v:.2f}" for v in values)
        return f"{statistics.median(values):.2f}x ({rounds})"

    loaders = [k for k in runs if "DataLoader" in k]
    best = max(loaders, key=lambda k: statistics.median(runs[k]))
    print(f"  numpy rows: jisu / best DataLoader ({best.split(', ')[-1]}) = "
          f"{ratio('numpy rows: jisu', best)}")  # fmt: skip
    bare = "numpy rows: bare loop (ceiling)"
    print(f"  numpy rows: jisu / bare loop = {ratio('numpy rows: jisu', bare)}")
    ceiling = "record rows: bare reader loop (ceiling)"
    print(f"  record rows: jisu / bare reader loop = {ratio('record rows: jisu', ceiling)}")
    print(
        f"  record rows: batch(64, ragged) / bare reader loop = "
        f"{ratio('record rows: jisu batch(64, ragged)', ceiling)}"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
