"""jisu's side of ``s3_peers.py``: write a source folder as record shards in S3, read them.

Run with the jisu venv (the driver uses ``sys.executable``, so jisu pays the same process
start as the peers, outside the timed part)::

    python jisu_peer.py write SOURCE s3://BUCKET/PREFIX/train.rec [--shard-bytes 8000000]
    python jisu_peer.py read s3://BUCKET/PREFIX/train.rec CACHE_DIR --workers {0,2} [--ragged]
        [--numpy]

``write`` goes straight to S3 through ``FileWriter`` (schema ``data: bytes``, ``label:
int64``; as many shards as make them about ``--shard-bytes``). ``read`` is
``RecordDataset(url, shuffle=level, num_parallel_workers=W or 1, cache_dir=CACHE)`` (the
default ``verify=True``: with a cache, each shard is downloaded once, in the epoch's order,
checked, then read locally; ``verify=False`` would read by ranges while the cache fills),
then ``batch(64)`` (``batch(64, ragged=["data"])`` for rows of different lengths: a
nested tensor per batch), iterated as torch tensors (``--numpy``: as NumPy arrays, a ragged
column as a ``RaggedArray`` of values and offsets, which needs no torch nested tensor), and
prints one JSON line (see ``_common.two_epochs``). The endpoint and credentials come from the
environment.
"""

from __future__ import annotations

import argparse
import math

from _common import BATCH, Source, empty, report, two_epochs


def write(source: str, url: str, shard_bytes: int) -> None:
    import jisu.dataset as ds

    rows = Source(source)
    shards = max(1, math.ceil(int(rows.offsets[-1]) / shard_bytes))
    writer = ds.FileWriter(url, shard_num=shards, overwrite=True)
    writer.add_schema({"data": {"type": "bytes"}, "label": {"type": "int64"}})
    for start in range(0, len(rows), 1000):
        chunk = range(start, min(start + 1000, len(rows)))
        writer.write_raw_data([dict(zip(("data", "label"), rows[i])) for i in chunk])
    writer.commit()


def read(url: str, cache: str, workers: int, ragged: bool, shuffle: str, numpy: bool) -> None:
    import jisu.dataset as ds

    empty(cache)
    level = True if shuffle == "global" else ds.Shuffle(shuffle)

    def open_loader():
        data = ds.RecordDataset(
            url, shuffle=level, num_parallel_workers=workers or 1, cache_dir=cache
        )
        data = data.batch(BATCH, ragged=["data"] if ragged else None)
        return data.create_tuple_iterator(num_epochs=2, output_numpy=numpy)

    report(two_epochs(open_loader, lambda batch: len(batch[1])), loader="jisu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("source")
    w.add_argument("url")
    w.add_argument("--shard-bytes", type=int, default=8_000_000)
    r = sub.add_parser("read")
    r.add_argument("url")
    r.add_argument("cache")
    r.add_argument("--workers", type=int, default=0)
    r.add_argument("--ragged", action="store_true", help="rows of different lengths")
    r.add_argument("--shuffle", default="global", help="a jisu.dataset.Shuffle level")
    r.add_argument("--numpy", action="store_true", help="NumPy batches instead of torch")
    args = parser.parse_args()
    if args.command == "write":
        write(args.source, args.url, args.shard_bytes)
    else:
        read(args.url, args.cache, args.workers, args.ragged, args.shuffle, args.numpy)


if __name__ == "__main__":
    main()
