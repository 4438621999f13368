"""MosaicML Streaming's side of ``s3_peers.py``: write a source folder as MDS shards, read
them from S3.

Run in the Streaming venv (``setup.sh``)::

    python streaming_peer.py write SOURCE OUT_DIR [--shard-bytes 8000000]
    python streaming_peer.py read s3://BUCKET/PREFIX CACHE_DIR --workers {0,2}

``write`` uses ``MDSWriter`` (columns ``data: bytes``, ``label: int64``, no compression,
shards of at most ``--shard-bytes``) into a local folder; the driver uploads it. ``read``
uses ``StreamingDataset(remote=url, local=cache, shuffle=True, batch_size=64)`` (its default
shuffle, py1e) under a torch ``DataLoader(batch_size=64, num_workers=W)``, workers kept
between epochs, and prints one JSON line (see ``_common.two_epochs``). Streaming's S3
client is boto3's, with the endpoint from ``S3_ENDPOINT_URL`` (or boto3's own
``AWS_ENDPOINT_URL``) and the credentials from the environment; plain ``http://`` works.

The one patch: ``import streaming`` imports torchvision (for ``streaming.vision``, unused
here). PyPI's torchvision wheels are built against CUDA torch; on the CPU build of torch
their C ops do not load (torchvision warns and goes on), and then the import fails
registering fake kernels for two of those ops, ``nms`` and ``qnms``, which, unlike the
others, it does not skip when the ops are missing. ``_import_torchvision`` declares those
two op schemas first in that case, so torchvision imports, without its ops.
"""

from __future__ import annotations

import argparse
import sys

from _common import BATCH, Source, empty, report, two_epochs


def _import_torchvision() -> None:
    """Import torchvision, declaring ``nms``/``qnms`` if its C ops did not load (above)."""
    import torch

    try:
        import torchvision
    except RuntimeError:  # operator torchvision::nms does not exist
        for name in [name for name in sys.modules if name.split(".")[0] == "torchvision"]:
            del sys.modules[name]
        schema = "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"
        for op in ("nms", "qnms"):
            torch.library.define(f"torchvision::{op}", schema)
        import torchvision  # noqa: F401


_import_torchvision()


def write(source: str, out: str, shard_bytes: int) -> None:
    from streaming import MDSWriter

    columns = {"data": "bytes", "label": "int64"}
    with MDSWriter(out=out, columns=columns, size_limit=shard_bytes) as writer:
        for data, label in Source(source):
            writer.write({"data": data, "label": label})


def read(url: str, cache: str, workers: int) -> None:
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory
    from torch.utils.data import DataLoader

    clean_stale_shared_memory()  # left by a killed run, it would make this one fail
    empty(cache)

    def open_loader() -> DataLoader:
        dataset = StreamingDataset(remote=url, local=cache, shuffle=True, batch_size=BATCH)
        return DataLoader(
            dataset, batch_size=BATCH, num_workers=workers, persistent_workers=workers > 0
        )

    report(two_epochs(open_loader, lambda batch: len(batch["label"])), loader="streaming")


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
