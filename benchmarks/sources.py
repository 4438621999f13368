"""File sources against a torch DataLoader and MindSpore 2.10: MNIST, CIFAR-10, TFRecord.

Writes synthetic files in the published layouts — 60,000 MNIST images (idx files), 60,000
CIFAR-10 records (the binary batches), 100,000 small ``tf.train.Example`` records (an int64
label, three floats, 8 bytes) — then reads one shuffled epoch of each, batched by 256, in:

- jisu (``ds.MnistDataset`` / ``ds.Cifar10Dataset`` / ``ds.TFRecordDataset`` → ``batch``);
- plain PyTorch: a ``DataLoader`` (batch 256, shuffled) over what a PyTorch user writes —
  for MNIST/CIFAR a map-style dataset over the arrays read into memory (as torchvision's
  datasets do), for TFRecord the ``tfrecord`` package's ``TFRecordDataset`` — best of
  ``num_workers`` 0, 1 and 2;
- MindSpore 2.10 (``--mindspore PYTHON``: a Python with MindSpore installed, e.g. a
  throwaway venv), in a subprocess on the same files.

Rows/s are medians of ``--repeats`` epochs; ratios are within this one run.

Usage: python benchmarks/sources.py [--mindspore /tmp/msvenv/bin/python] [--repeats 3]
(needs ``pip install tfrecord`` for the PyTorch side of the TFRecord case)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import jisu.dataset as ds

BATCH = 256


def write_files(folder: str) -> dict[str, str]:
    rng = np.random.default_rng(0)
    mnist = os.path.join(folder, "mnist")
    os.makedirs(mnist)
    for split, n in [("train", 50_000), ("t10k", 10_000)]:
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        with open(f"{mnist}/{split}-images-idx3-ubyte", "wb") as f:
            f.write(struct.pack(">IIII", 0x803, n, 28, 28) + images.tobytes())
        with open(f"{mnist}/{split}-labels-idx1-ubyte", "wb") as f:
            f.write(struct.pack(">II", 0x801, n) + rng.integers(0, 10, n, dtype=np.uint8).tobytes())
    cifar = os.path.join(folder, "cifar10")
    os.makedirs(cifar)
    names = [f"data_batch_{k}.bin" for k in range(1, 6)] + ["test_batch.bin"]
    for name in names:  # 10,000 records each, as MindSpore requires
        records = rng.integers(0, 256, (10_000, 3073), dtype=np.uint8)
        records[:, 0] %= 10
        records.tofile(os.path.join(cifar, name))
    tfrecord_path = os.path.join(folder, "small.tfrecord")
    from tfrecord import TFRecordWriter

    writer = TFRecordWriter(tfrecord_path)
    for i in range(100_000):
        writer.write(
            {
                "label": (i % 10, "int"),
                "values": (rng.random(3).tolist(), "float"),
                "blob": (bytes(rng.integers(0, 256, 8, dtype=np.uint8)), "byte"),
            }
        )
    writer.close()
    return {"mnist": mnist, "cifar10": cifar, "tfrecord": tfrecord_path}


def rate(make_batches, rows: int, repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        begin = time.perf_counter()
        count = sum(len(batch[0]) for batch in make_batches())
        rates.append(count / (time.perf_counter() - begin))
        assert count == rows, (count, rows)
    return statistics.median(rates)


def jisu_rate(name: str, path: str, rows: int, repeats: int) -> float:
    if name == "mnist":
        data = ds.MnistDataset(path)
    elif name == "cifar10":
        data = ds.Cifar10Dataset(path)
    else:
        data = ds.TFRecordDataset(path)
    data = data.batch(BATCH)

    def batches():
        return data.create_tuple_iterator(num_epochs=1, output_numpy=True)

    return rate(batches, rows, repeats)


class ArraysDataset(Dataset):
    """What a PyTorch user writes for MNIST/CIFAR (as torchvision does): arrays in memory."""

    def __init__(self, images: np.ndarray, labels: np.ndarray) -> None:
        self.images, self.labels = torch.from_numpy(images), torch.from_numpy(labels)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return self.images[index], self.labels[index]


def torch_source(name: str, path: str):
    if name == "mnist":
        parts = []
        for split in ("t10k", "train"):
            with open(f"{path}/{split}-images-idx3-ubyte", "rb") as f:
                images = np.frombuffer(f.read()[16:], np.uint8).reshape(-1, 28, 28, 1)
            with open(f"{path}/{split}-labels-idx1-ubyte", "rb") as f:
                labels = np.frombuffer(f.read()[8:], np.uint8).astype(np.int64)
            parts.append((images, labels))
        return ArraysDataset(
            np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        )
    if name == "cifar10":
        records = np.concatenate(
            [
                np.fromfile(os.path.join(path, n), np.uint8).reshape(-1, 3073)
                for n in sorted(os.listdir(path))
            ]
        )
        images = np.ascontiguousarray(records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        return ArraysDataset(images, records[:, 0].astype(np.int64))
    from tfrecord.torch.dataset import TFRecordDataset

    return TFRecordDataset(
        path, None, {"label": "int", "values": "float", "blob": "byte"}, shuffle_queue_size=1024
    )


def torch_rate(name: str, path: str, rows: int, repeats: int) -> tuple[float, int]:
    best, best_workers = 0.0, 0
    source = torch_source(name, path)
    iterable = isinstance(source, torch.utils.data.IterableDataset)
    for workers in (0, 1, 2):
        if iterable and workers > 1:
            continue  # the iterable would be read once per worker (duplicated rows)
        loader = DataLoader(
            source,
            batch_size=BATCH,
            shuffle=None if iterable else True,
            num_workers=workers,
            persistent_workers=False,
        )

        def batches(loader=loader):
            for batch in loader:
                yield batch if not isinstance(batch, dict) else [batch["label"]]

        got = rate(batches, rows, repeats)
        if got > best:
            best, best_workers = got, workers
    return best, best_workers


MINDSPORE_SCRIPT = """
import json, statistics, sys, time
import mindspore.dataset as ds
name, path, rows, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if name == "mnist":
    data = ds.MnistDataset(path)
elif name == "cifar10":
    data = ds.Cifar10Dataset(path)
else:
    data = ds.TFRecordDataset(path)
data = data.batch(256)
rates = []
for _ in range(repeats):
    begin = time.perf_counter()
    count = sum(len(b[0]) for b in data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    rates.append(count / (time.perf_counter() - begin))
    assert count == rows, (count, rows)
print(json.dumps(statistics.median(rates)))
"""


def mindspore_rate(python: str, name: str, path: str, rows: int, repeats: int) -> float:
    out = subprocess.run(
        [python, "-c", MINDSPORE_SCRIPT, name, path, str(rows), str(repeats)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),  # not the repository: MindSpore's own import only
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mindspore", help="a Python with MindSpore 2.10 installed")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = {"mnist": 60_000, "cifar10": 60_000, "tfrecord": 100_000}
    with tempfile.TemporaryDirectory() as folder:
        paths = write_files(folder)
        print(f"{'source':<10} {'jisu':>12} {'DataLoader':>16} {'MindSpore':>12}  jisu/DL  jisu/MS")
        for name, path in paths.items():
            ours = jisu_rate(name, path, rows[name], args.repeats)
            theirs, workers = torch_rate(name, path, rows[name], args.repeats)
            ms = (
                mindspore_rate(args.mindspore, name, path, rows[name], args.repeats)
                if args.mindspore
                else float("nan")
            )
            print(
                f"{name:<10} {ours:>12,.0f} {theirs:>12,.0f} (w{workers}) {ms:>12,.0f}  "
                f"{ours / theirs:>6.2f}x  {ours / ms:>6.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    sys.exit(main())
