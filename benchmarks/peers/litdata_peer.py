"""LitData's side of ``s3_peers.py``: write a source folder as LitData chunks, read them from S3.

Run in the LitData venv (``setup.sh``)::

    python litdata_peer.py write SOURCE OUT_DIR [--shard-bytes 8000000]
    python litdata_peer.py read s3://BUCKET/PREFIX CACHE_DIR --workers {0,2}

``write`` calls ``litdata.optimize`` (one row = {"data": bytes, "label": int}, stored with
LitData's bytes and int serializers, chunks of at most ``--shard-bytes``) into a local
folder; the driver uploads it. ``read`` uses the recommended pair,
``StreamingDataset(url, cache_dir=..., shuffle=True)`` and
``StreamingDataLoader(batch_size=64, num_workers=W)`` (workers not kept between epochs:
with ``persistent_workers=True`` its second epoch with 2 workers was about 3x slower), with a
collate that keeps the bytes as bytes (``collate``), and prints one JSON line (see
``_common.two_epochs``). The endpoint and credentials come from the environment
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ...): boto3 reads them, and LitData builds its
obstore store (the fast path for chunk downloads) from boto3's client.

The one patch: obstore refuses a plain ``http://`` endpoint unless its client options say
``allow_http``. obstore would read ``AWS_ALLOW_HTTP=true`` from the environment, but LitData
passes its own ``client_options`` (timeouts, pool), which replace the ones from the
environment, and has no setting for it. So ``allow_http`` is added to that module-level
dict (``_allow_http``), at import, which also runs in spawned workers; nothing else changes.
"""

from __future__ import annotations

import argparse
import os

from _common import BATCH, Source, empty, report, two_epochs


def _allow_http() -> None:
    """Let LitData's obstore store talk to an ``http://`` endpoint (see the module's doc)."""
    if os.environ.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        from litdata.streaming import downloader

        downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = True


_allow_http()


class _Rows:
    """``optimize``'s function: row index -> LitData sample (picklable for its workers)."""

    def __init__(self, folder: str) -> None:
        self.source = Source(folder)

    def __call__(self, i: int) -> dict:
        data, label = self.source[i]
        return {"data": data, "label": label}


def write(source: str, out: str, chunk_bytes: int) -> None:
    from litdata import optimize

    rows = _Rows(source)
    optimize(
        rows,
        inputs=list(range(len(rows.source))),
        output_dir=out,
        chunk_bytes=chunk_bytes,
        num_workers=1,
        keep_data_ordered=True,
        verbose=False,
    )


def collate(samples: list[dict]) -> dict:
    """A batch: the rows' bytes as a list, the labels as a tensor.

    LitData hands a bytes field out as a ``memoryview`` of its chunk. torch's default collate
    takes that for a sequence and makes a tensor of every byte, one ``torch.tensor`` call
    each (4 KiB rows: about 240 rows/s instead of 4000), and a memoryview cannot travel back
    from a worker; so each is copied to ``bytes`` once, which is what Streaming hands out.
    """
    import torch

    return {
        "data": [bytes(sample["data"]) for sample in samples],
        "label": torch.tensor([sample["label"] for sample in samples]),
    }


def read(url: str, cache: str, workers: int) -> None:
    from litdata import StreamingDataLoader, StreamingDataset

    empty(cache)

    def open_loader() -> StreamingDataLoader:
        dataset = StreamingDataset(url, cache_dir=cache, shuffle=True)
        return StreamingDataLoader(
            dataset,
            batch_size=BATCH,
            num_workers=workers,
            collate_fn=collate,
        )

    report(two_epochs(open_loader, lambda batch: len(batch["label"])), loader="litdata")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write")
    w.add_argument("source")
    w.add_argument("out")
    w.add_argument("--shard-bytes", type=int, default=8_000_000)
    r = sub.add_parser("read")
    r.add_argument("url")
    r.add_argument("cache")
    r.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    if args.command == "write":
        write(args.source, args.out, args.shard_bytes)
    else:
        read(args.url, args.cache, args.workers)


if __name__ == "__main__":
    main()
