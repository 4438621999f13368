"""Record shards against the files they came from: random-order reads and conversion speed.

Two data sets are made in a temporary folder: a JPEG image folder (a few thousand images of
~300x250 px) and 10,000 small files of 3 KB. Each is converted with ``jisu convert``'s
function into 1 and into 4 shards, timed against a plain copy of the same bytes (every file
read and appended to one file, fsynced). Each is also read in a random order
(``shuffle=True``) through the same jisu pipeline, either from the folder (a random-access
source that opens and reads each file) or from the record shards (``RecordDataset``), with the
same worker count. Reads are raw bytes, no decode; the consumer touches every 4 KiB page of
each row so that mapped rows are really read. All files are fresh, so both sides read from the
page cache: the difference is the per-file cost.

Usage: python benchmarks/record_read.py [--jpegs 2000] [--small 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

import numpy as np
import simplejpeg

import jisu
import jisu.dataset as ds
from jisu.dataset.core.cpus import available_cpus
from jisu.dataset.record.convert import ImageFiles, convert, list_image_folder


def make_jpegs(root: str, count: int) -> None:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:250, 0:300]
    for i in range(count):
        folder = os.path.join(root, f"class{i % 10}")
        os.makedirs(folder, exist_ok=True)
        base = (np.sin(xx / (7 + i % 13)) + np.cos(yy / (5 + i % 11))) * 60 + 128
        image = np.stack([base, base[::-1], base[:, ::-1]], axis=-1)
        image = (image + rng.normal(0, 12, image.shape)).clip(0, 255).astype(np.uint8)
        data = simplejpeg.encode_jpeg(image, quality=85, colorspace="RGB")
        with open(os.path.join(folder, f"{i:06d}.jpg"), "wb") as f:
            f.write(data)


def make_small(root: str, count: int, size: int = 3072) -> None:
    rng = np.random.default_rng(1)
    for i in range(count):
        folder = os.path.join(root, f"class{i % 10}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{i:06d}.jpg"), "wb") as f:
            f.write(rng.integers(0, 256, size, dtype=np.uint8).tobytes())


def plain_copy(root: str, target: str) -> float:
    """Seconds to read every file of the folder and append it to one file (the yardstick)."""
    paths, _, _ = list_image_folder(root)
    begin = time.perf_counter()
    with open(target, "wb") as out:
        for path in paths:
            with open(path, "rb") as f:
                out.write(f.read())
        out.flush()
        os.fsync(out.fileno())
    return time.perf_counter() - begin


def read_rate(data: ds.Dataset) -> float:
    begin = time.perf_counter()
    rows = 0
    touched = 0
    for row in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        touched += int(row[0][::4096].sum())  # read every page of the row's bytes
        rows += 1
    return rows / (time.perf_counter() - begin)


def compare(name: str, root: str, work: str, repeats: int) -> None:
    workers = available_cpus()
    paths, labels, _ = list_image_folder(root)
    total = sum(os.path.getsize(p) for p in paths)
    copy_s = statistics.median(
        plain_copy(root, os.path.join(work, f"{name}.copy")) for _ in range(repeats)
    )
    record = os.path.join(work, f"{name}.rec")
    convert_s = {}
    for shards in (1, 4):  # one shard is the like-for-like comparison with the one-file copy
        runs = [
            convert(root, record, shards=shards, workers=workers, overwrite=True, progress=False)[
                "seconds"
            ]
            for _ in range(repeats)
        ]
        convert_s[shards] = statistics.median(runs)
    folder_rates, record_rates = [], []
    for _ in range(repeats):
        folder = ds.GeneratorDataset(
            ImageFiles(root, paths, labels, names=False),  # the records' columns, no names
            ["image", "label"],
            shuffle=True,
            num_parallel_workers=workers,
        )
        folder_rates.append(read_rate(folder))
        records = ds.RecordDataset(record, shuffle=True, num_parallel_workers=workers)
        record_rates.append(read_rate(records))
    folder_rate, record_rate = statistics.median(folder_rates), statistics.median(record_rates)
    mib = total / (1 << 20)
    print(f"({name}) {len(paths)} files, {mib:.1f} MiB, {workers} workers, median of {repeats}")
    print(f"    random-order read, folder      {folder_rate:10.0f} rows/s")
    print(
        f"    random-order read, record      {record_rate:10.0f} rows/s   "
        f"{record_rate / folder_rate:.2f}x the folder"
    )
    print(f"    plain copy into one file      {mib / copy_s:7.1f} MiB/s")
    for shards, seconds in convert_s.items():
        print(
            f"    conversion into {shards} shard(s)   {mib / seconds:7.1f} MiB/s   "
            f"{copy_s / seconds:.2f}x the copy"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jpegs", type=int, default=2000)
    parser.add_argument("--small", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"jisu {jisu.__version__}, python {platform.python_version()}, "
        f"{available_cpus()} usable CPUs"
    )
    with tempfile.TemporaryDirectory(prefix="jisu-bench-") as work:
        small = os.path.join(work, "small")
        make_small(small, args.small)
        compare("small samples, 3 KB", small, work, args.repeats)
        jpegs = os.path.join(work, "jpegs")
        make_jpegs(jpegs, args.jpegs)
        compare("JPEG folder", jpegs, work, args.repeats)


if __name__ == "__main__":
    main()
