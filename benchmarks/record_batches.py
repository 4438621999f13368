"""Batches of record rows by row size: jisu's plan against fixed thread counts and DataLoader.

For each row size (``--sizes``, bytes) a record data set of about ``--megabytes`` MB (rows of
random bytes and an int64 label, 5 shards) is written to a temporary folder, then read in a
global shuffle, batch 64, as torch tensors, epoch after epoch (the first reads the files into
the page cache; the figures are of the later, cached epochs):

1. jisu as planned: ``RecordDataset(path).batch(64)``, the worker count left to jisu (the
   plan runs a stage of small local rows on one thread, larger rows on all cores);
2. jisu with the batch's ``num_parallel_workers`` fixed at 1 and at the core count;
3. the plain-PyTorch equivalent: ``DataLoader(batch_size=64, shuffle=True, num_workers=0)``
   over a map-style Dataset reading each row from the same shards memory-mapped by pyarrow
   (``pa.memory_map`` + ``ipc.open_file``, the rows' bytes copied out as NumPy arrays), the
   default collate stacking them.

Prints rows/s (median of ``--rounds``, each round a fresh iterator of ``--epochs`` epochs, the
best cached epoch of each) and jisu / DataLoader.

Usage: python benchmarks/record_batches.py [--sizes 4096 16384 65536 262144]
    [--megabytes 160] [--rounds 3] [--epochs 3]
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import torch
from torch.utils.data import DataLoader, Dataset

import jisu
import jisu.dataset as ds
from jisu.dataset.core.cpus import available_cpus

BATCH = 64


def write(path: str, rows: int, size: int) -> None:
    rng = np.random.default_rng(0)
    writer = ds.FileWriter(path, shard_num=5, overwrite=True)
    writer.add_schema({"data": {"type": "bytes"}, "label": {"type": "int64"}})
    for start in range(0, rows, 500):
        chunk = range(start, min(rows, start + 500))
        writer.write_raw_data([{"data": rng.bytes(size), "label": k} for k in chunk])
    writer.commit()


class ArrowRows(Dataset):
    """Row ``i`` of the shards, in the manifest's order, from pyarrow's memory maps."""

    def __init__(self, path: str) -> None:
        folder = os.path.dirname(path)
        with open(path + ".manifest.json") as f:
            shards = [s for s in json.load(f)["shards"] if s["rows"]]
        self.tables = [
            pa.ipc.open_file(pa.memory_map(os.path.join(folder, s["file"]))).read_all()
            for s in shards
        ]
        self.starts = [0]
        for table in self.tables:
            self.starts.append(self.starts[-1] + table.num_rows)

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, i: int):
        k = bisect.bisect_right(self.starts, i) - 1
        table, j = self.tables[k], i - self.starts[k]
        data = np.frombuffer(table.column(0)[j].as_py(), np.uint8).copy()
        return torch.from_numpy(data), table.column(1)[j].as_py()


def best_cached(batches_of, epochs: int) -> float:
    """Rows/s of the fastest epoch after the first; ``batches_of()`` gives one epoch's."""
    rates = []
    for _ in range(epochs):
        begin, rows = time.perf_counter(), 0
        for _, labels in batches_of():
            rows += len(labels)
        rates.append(rows / (time.perf_counter() - begin))
    return max(rates[1:])


def jisu_rate(path: str, workers: int | None, epochs: int) -> float:
    data = ds.RecordDataset(path).batch(BATCH, num_parallel_workers=workers)
    iterator = data.create_tuple_iterator(num_epochs=epochs)
    return best_cached(lambda: iterator, epochs)


def loader_rate(path: str, epochs: int) -> float:
    loader = DataLoader(ArrowRows(path), batch_size=BATCH, shuffle=True, num_workers=0)
    return best_cached(lambda: loader, epochs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 16384, 65536, 262144])
    parser.add_argument("--megabytes", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    cores = available_cpus()
    print(f"jisu {jisu.__version__}, torch {torch.__version__}, {cores} usable CPUs")
    header = f"{'row bytes':>9} {'rows':>6}  {'jisu planned':>14}  {'1 thread':>10}"
    print(f"{header}  {f'{cores} threads':>10}  {'DataLoader':>10}  planned / DataLoader")
    with tempfile.TemporaryDirectory(prefix="jisu-record-batches-") as scratch:
        for size in args.sizes:
            rows = max(BATCH, min(40_000, args.megabytes * 1_000_000 // size))
            path = os.path.join(scratch, f"s{size}", "train.rec")
            os.makedirs(os.path.dirname(path))
            write(path, rows, size)
            runs: dict[str, list[float]] = {"plan": [], "1": [], "all": [], "loader": []}
            for _ in range(args.rounds):  # interleaved
                runs["plan"].append(jisu_rate(path, None, args.epochs))
                runs["1"].append(jisu_rate(path, 1, args.epochs))
                runs["all"].append(jisu_rate(path, cores, args.epochs))
                runs["loader"].append(loader_rate(path, args.epochs))
            med = {k: statistics.median(v) for k, v in runs.items()}
            ratios = [a / b for a, b in zip(runs["plan"], runs["loader"])]
            cells = "  ".join(f"{med[k]:>10,.0f}" for k in ("1", "all", "loader"))
            print(
                f"{size:>9} {rows:>6}  {med['plan']:>14,.0f}  {cells}  "
                f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
