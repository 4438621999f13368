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
        f"throughput: {figures['jisu_rows_per_s']:.0f} rows/s through jisu, "
        f"{figures['bare_rows_per_s']:.0f} rows/s from the bare generator ({ratio:.2f}x)"
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
