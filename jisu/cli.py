"""The ``jisu`` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ._version import __version__


def _train(args: argparse.Namespace) -> int:
    from .job import JobConfig, run

    cfg = JobConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        amp_level=args.amp_level,
        sink=args.sink,
        graph=args.graph,
        workers=args.workers,
        device=args.device,
        data=args.data,
        lr=args.lr,
        baseline=not args.no_baseline,
    )
    what = args.data or "scikit-learn digits (32x32 RGB JPEG records, 80/20 split)"
    print(
        f"jisu train: {what}; small CNN, {cfg.epochs} epochs, batch {cfg.batch_size}, "
        f"amp {cfg.amp_level}, sink mode {'on' if cfg.sink else 'off'}, graph mode "
        f"{'on' if cfg.graph else 'off'}, device {cfg.device}"
    )
    figures = run(cfg)
    where = "training" if args.data else "test"
    print(f"{where} accuracy: {figures['accuracy']:.2%}")
    print(
        f"training speed: {figures['samples_per_second']:.0f} samples/s "
        f"({figures['workers']} pipeline workers), waiting for data "
        f"{figures['data_wait_share']:.0%} of the time"
    )
    plain = figures["plain_samples_per_second"]
    if plain:
        print(
            f"plain PyTorch loop (DataLoader, fp32, loss.item() per step): {plain:.0f} "
            f"samples/s -> jisu is {figures['samples_per_second'] / plain:.2f}x"
        )
    print(figures["where_the_time_went"])
    print(f"total time: {figures['seconds']:.1f} s")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from .profiler import doctor

    if (args.pipeline is None) == (args.train is None):
        print("jisu doctor: give exactly one of --pipeline and --train", file=sys.stderr)
        return 2
    from .dataset.datasets import Dataset
    from .profiler.report import write_report

    pipeline = profiler = None
    if args.pipeline is not None:
        dataset = doctor.load_callable(args.pipeline)()
    else:
        model, dataset = doctor.load_callable(args.train)()
    if isinstance(dataset, Dataset):
        pipeline = doctor.diagnose_pipeline(
            dataset, args.batches, args.seconds, min_seconds=args.min_seconds
        )
    if args.train is not None:
        profiler = doctor.diagnose_training(model, dataset, args.steps, args.sink)
        if pipeline is not None:
            doctor.relate(pipeline, profiler, dataset.get_batch_size())
    # the figures first, then one verdict for the whole run (the same as the report's)
    if pipeline is not None:
        print(doctor.pipeline_text(pipeline, verdict=False))
    if profiler is not None:
        print(profiler.report(verdict=False))
    verdict = doctor.final_verdict(pipeline, profiler)
    print(f"verdict: {verdict}")
    print(f"report: {write_report(args.report, pipeline, profiler, verdict)}")
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
    removed = summary["removed"]
    if removed:
        names = ", ".join(os.path.basename(path) for path, _ in removed)
        freed = sum(size for _, size in removed) / (1 << 20)
        print(
            f"removed {len(removed)} file(s) left by killed writers of {args.dst} "
            f"({freed:.1f} MiB freed): {names}"
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
    train = commands.add_parser(
        "train",
        help="train a small CNN through the full pipeline with AMP and sink mode, and report",
        description="The main job: scikit-learn's digits as JPEG records (or your own images "
        "with --data), a small CNN, mixed precision and sink mode; prints accuracy, "
        "samples/s, the data-wait share and the speed-up over a plain PyTorch loop.",
    )
    train.add_argument("--epochs", type=int, default=10)
    train.add_argument("--batch-size", type=int, default=64)
    train.add_argument("--amp-level", default="O2", choices=["O0", "O1", "O2", "O3"])
    train.add_argument(
        "--sink", action=argparse.BooleanOptionalAction, default=True, help="sink mode"
    )
    train.add_argument(
        "--graph",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="graph mode: compile the train step with torch.compile",
    )
    train.add_argument("--workers", type=int, default=None, help="pipeline workers (all CPUs)")
    train.add_argument("--device", default="CPU", choices=["CPU", "GPU", "Ascend"])
    train.add_argument(
        "--data", default=None, help="an image folder (class per subfolder) or record files"
    )
    train.add_argument("--lr", type=float, default=0.1, help="peak learning rate (cosine)")
    train.add_argument(
        "--no-baseline", action="store_true", help="skip the plain PyTorch comparison"
    )
    train.set_defaults(run=_train)
    doctor = commands.add_parser(
        "doctor",
        help="measure a pipeline or a training run and say which lever to pull first",
        description="Run your pipeline (--pipeline module:function returning a jisu dataset) "
        "or training (--train module:function returning (model, dataset)) for a short, "
        "bounded time and print where the time goes, the bottleneck and the change to make. "
        "module may be a path to a .py file (its folder goes first on sys.path, so it can "
        "import the modules next to it). The pipeline is read for at least --batches batches "
        "and at least --min-seconds, and at most --seconds; a training run also times a few "
        "steps of copies of the model at O0 and at its AMP level (O2 when it runs at O0).",
    )
    doctor.add_argument("--pipeline", default=None, metavar="MODULE:FUNCTION")
    doctor.add_argument("--train", default=None, metavar="MODULE:FUNCTION")
    doctor.add_argument(
        "--batches", type=int, default=50, help="pipeline: read at least this many batches"
    )
    doctor.add_argument(
        "--min-seconds",
        type=float,
        default=2.0,
        help="pipeline: and read for at least this long, so that the output queue's behaviour "
        "shows (a fast pipeline reads 50 batches in a few hundredths of a second)",
    )
    doctor.add_argument(
        "--seconds", type=float, default=30.0, help="pipeline: but never read longer than this"
    )
    doctor.add_argument("--steps", type=int, default=20, help="training: steps per epoch (x3)")
    doctor.add_argument("--sink", action="store_true", help="training: in sink mode")
    doctor.add_argument(
        "--report", default="jisu-doctor-report.html", help="where to write the HTML report"
    )
    doctor.set_defaults(run=_doctor)
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
