"""The ``jisu`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__


def _train(args: argparse.Namespace) -> int:
    from .demo import run_pipeline_demo

    print(
        "jisu train: the training loop (Model.train, AMP, sink mode) is not built yet; "
        "running the data-pipeline part of the demo."
    )
    print(
        f"pipeline: {args.samples} synthetic {args.size}x{args.size}x3 images -> "
        f"Rescale+HWC2CHW -> TypeCast -> batch({args.batch_size}), "
        f"{args.workers} workers"
    )
    figures = run_pipeline_demo(args.samples, args.batch_size, args.workers, args.size)
    image_shape, image_dtype, label_shape, label_dtype = figures["shapes"]
    print(
        f"batches: {figures['batches']} of image {image_shape} {image_dtype}, "
        f"label {label_shape} {label_dtype}"
    )
    ratio = figures["jisu_rows_per_s"] / figures["bare_rows_per_s"]
    print(
        f"throughput after the first batch: {figures['jisu_rows_per_s']:.0f} rows/s through "
        f"jisu, {figures['bare_rows_per_s']:.0f} rows/s from the bare generator ({ratio:.2f}x); "
        f"first batch after {figures['first_batch_s'] * 1000:.0f} ms"
    )
    return 0


def _convert(args: argparse.Namespace) -> int:
    from .dataset.record.convert import convert

    summary = convert(
        args.src,
        args.dst,
        shards=args.shards,
        workers=args.workers,
        max_size=args.max_size,
        quality=args.quality,
        overwrite=args.overwrite,
    )
    mib = summary["bytes"] / (1 << 20)
    print(
        f"wrote {summary['rows']} rows, {mib:.1f} MiB in {len(summary['files'])} shard(s) "
        f"in {summary['seconds']:.1f} s ({summary['rows'] / max(summary['seconds'], 1e-9):.0f} "
        f"rows/s): {args.dst}"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jisu",
        description="jisu (极速): deep-learning training at the speed of the hardware.",
    )
    parser.add_argument("--version", action="version", version=f"jisu {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    train = commands.add_parser("train", help="run the demo job (for now: its data pipeline)")
    train.add_argument("--samples", type=int, default=2048, help="rows in the demo data set")
    train.add_argument("--batch-size", type=int, default=32)
    train.add_argument("--workers", type=int, default=4, help="map workers (clamped to CPUs)")
    train.add_argument("--size", type=int, default=224, help="image height and width")
    train.set_defaults(run=_train)
    convert = commands.add_parser(
        "convert",
        help="pack an image folder, MindRecord files or NumPy arrays into record shards",
        description="Convert SRC (a class-per-subfolder image folder, MindRecord files, a "
        ".npz/.npy file or a jisu record data set) into a jisu record data set DST. "
        "All-or-nothing: an interrupted conversion leaves nothing behind.",
    )
    convert.add_argument("src")
    convert.add_argument("dst")
    convert.add_argument("--shards", type=int, default=1, help="number of shard files")
    convert.add_argument("--workers", type=int, default=None, help="reading/encoding threads")
    convert.add_argument(
        "--max-size",
        type=int,
        default=None,
        help="re-encode images so the longer side is at most this",
    )
    convert.add_argument("--quality", type=int, default=None, help="JPEG quality when re-encoding")
    convert.add_argument("--overwrite", action="store_true", help="replace an existing DST")
    convert.set_defaults(run=_convert)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
