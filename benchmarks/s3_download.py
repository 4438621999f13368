"""Whole-shard downloads from S3: botocore's blocking client (jisu's path) against s3fs's.

Starts moto's S3 server over HTTP (``scale_out.s3_server``), puts ``--objects`` objects of
``--mb`` MB, then in ``--rounds`` interleaved rounds (after one untimed) reads them all,
``--threads`` at once, with :func:`jisu.dataset.record.storage.read_whole` (the checksum and
cache-fill read: pinned ranged GETs, CRC-32) twice: on botocore's blocking client, a thread
per request (:mod:`jisu.dataset.record.s3_bulk`), and on s3fs's event loop (the path
before). Prints MB/s per round and the median ratio.

Usage: python benchmarks/s3_download.py [--objects 21] [--mb 8] [--threads 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from scale_out import s3_server

from jisu.dataset.record import s3_bulk
from jisu.dataset.record.storage import filesystem, open_remote, read_whole


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=21)
    parser.add_argument("--mb", type=float, default=8.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with s3_server():
        fs, _ = filesystem("s3://jisu-bench/x")
        size = int(args.mb * 1e6)
        urls = [f"s3://jisu-bench/blob{k}" for k in range(args.objects)]
        for url in urls:
            fs.pipe_file(url.removeprefix("s3://"), os.urandom(size))
        files = [open_remote(fs, url.removeprefix("s3://"), url) for url in urls]
        client = s3_bulk.bulk_client
        rates: dict[str, list[float]] = {"botocore": [], "s3fs": []}
        for round_ in range(args.rounds + 1):  # the first warms both (clients, connections)
            for name in rates:
                s3_bulk.bulk_client = client if name == "botocore" else lambda fs, url: None
                begin = time.perf_counter()
                with ThreadPoolExecutor(args.threads) as pool:
                    list(pool.map(read_whole, files))
                if round_:
                    rates[name].append(size * len(files) / (time.perf_counter() - begin) / 1e6)
        s3_bulk.bulk_client = client
    for name, values in rates.items():
        print(f"{name:>8}: median {statistics.median(values):.0f} MB/s, rounds "
              f"{[round(v) for v in values]}")  # fmt: skip
    ratios = [a / b for a, b in zip(rates["botocore"], rates["s3fs"])]
    print(f"botocore / s3fs: median {statistics.median(ratios):.2f}x "
          f"({', '.join(f'{r:.2f}' for r in ratios)})")  # fmt: skip


if __name__ == "__main__":
    main()
