"""The ``jisu`` command: ``jisu train``, ``jisu doctor``, ``jisu convert``, ``jisu port``.

Manners: ``--help`` gives every option a sentence and its default. A mistake in the command
line (an unknown option, a bad number) prints two lines, the error in the command's own flag
names and where to find the options, and exits with status 2; a failure while running (a
missing path, a DST that exists without ``--overwrite``, a corrupt file) prints the error on
one line and exits with status 1. ``--debug`` (or ``JISU_DEBUG=1``) shows the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ._version import __version__
from .plots import missing_note
from .porting.command import add_port_command


class UsageError(Exception):
    """A command line that cannot run as given (found after parsing); exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with two-line errors: the message, then where the options are (instead of the
    whole usage block, which for ``jisu train`` is longer than the error)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n(see '{self.prog} --help')\n")


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults in the help, except where they say nothing: None (the help then says what
    happens) and the False of an on/off flag."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or (action.nargs == 0 and action.default is False):
            return action.help
        return super()._get_help_string(action)


def _number(
    kind: Callable[[str], Any], low: float, high: float | None = None, above: bool = False
) -> Callable[[str], Any]:
    """An argparse ``type``: ``kind`` of the text, at least ``low`` (more than ``low`` when
    ``above``) and at most ``high``; argparse names the option in the error."""
    name = "an integer" if kind is int else "a number"
    allowed = f"from {low} to {high}" if high is not None else f"{'>' if above else '>='} {low}"

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {name} {allowed}; got {text!r}") from None
        fits = (value > low if above else value >= low) and (high is None or value <= high)
        if not fits:  # NaN fits nowhere
            raise argparse.ArgumentTypeError(f"must be {name} {allowed}; got {text}")
        return value

    return parse


_positive_int = _number(int, 1)
_positive_float = _number(float, 0, above=True)


def _debug_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the full traceback of an error (also: environment variable JISU_DEBUG=1)",
    )


def _train(args: argparse.Namespace) -> int:
    data = args.data
    if data is not None and not (os.path.exists(data) or os.path.exists(f"{data}.manifest.json")):
        raise FileNotFoundError(
            f"--data '{args.data}' does not exist: give an image folder (one subfolder "
            "per class) or record files"
        )
    from .job import JobConfig, run

    cfg = JobConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        amp_level=args.amp_level or "fastest",
        sink=args.sink,
        graph=args.graph,
        workers=args.workers,
        device=args.device,
        data=args.data,
        lr=args.lr,
        baseline=not args.no_baseline,
        baseline_runs=args.baseline_runs,
        out=args.out,
    )
    what = args.data or "the embedded digits (32x32 RGB JPEG records, 80/20 split)"
    print(
        f"jisu train: {what}; small CNN, {cfg.epochs} epochs, batch {cfg.batch_size}, "
        f"amp {cfg.amp_level} and memory format {cfg.memory_format} ('fastest': measured at "
        f"the start), sink mode {'on' if cfg.sink else 'off'}, graph mode "
        f"{'auto (compiled only if it pays)' if cfg.graph else 'off'}, device {cfg.device}"
    )
    figures = run(cfg)
    print(f"{'training' if args.data else 'test'} accuracy: {figures['accuracy']:.2%}")
    first, last = figures["rate_epochs"]
    epochs = f"epoch {first}" if first == last else f"epochs {first}-{last}"
    print(
        f"training speed: {figures['samples_per_second']:.0f} samples/s (the mean of {epochs}, "
        f"{figures['workers']} pipeline worker{'s' * (figures['workers'] != 1)}), waiting for data "
        f"{figures['data_wait_share']:.0%} of the time"
    )
    if (comparison := figures["comparison"]) is not None:
        print(
            f"plain PyTorch loop (DataLoader, {figures['plain_precision']}, loss.item() per step): "
            f"{figures['plain_samples_per_second']:.0f} samples/s (median) -> "
            f"{comparison.headline()}"
        )
    elif cfg.baseline:
        print("plain PyTorch loop: not compared (needs --epochs 2 or more)")
    choices = (figures["amp"], figures["graph_mode"], figures["where_the_time_went"])
    print(*filter(None, choices), sep="\n")
    if cfg.out is not None:  # curves drawn only with matplotlib (jisu[plots])
        png, what = figures["curves_png"], "curves (loss, accuracy, samples/s per epoch)"
        print(f"{what}: {png}" if png else missing_note())
    print(f"total time: {figures['seconds']:.1f} s")
    return 0


# ---------------------------------------------------------------------------------- doctor


def _doctor(args: argparse.Namespace) -> int:
    from .profiler import doctor

    if (args.pipeline is None) == (args.train is None):
        raise UsageError("give exactly one of --pipeline and --train")
    from .dataset.core.node import Dataset
    from .profiler.report import write_report

    _check_report_path(args.report)  # before the measurement, not after it
    pipeline = profiler = None
    if args.pipeline is not None:
        dataset = doctor.pipeline_from(args.pipeline)
    else:
        model, dataset = doctor.training_from(args.train)
    if isinstance(dataset, Dataset):
        pipeline = doctor.diagnose_pipeline(
            dataset, args.batches, args.seconds, min_seconds=args.min_seconds
        )
        if pipeline["items"] == 0:  # a verdict on no data would be made up
            raise ValueError("the pipeline gave no rows (its epoch is empty): nothing to measure")
    if args.train is not None:
        graph = 0 if args.skip_graph_mode else 4
        profiler = doctor.diagnose_training(
            model, dataset, args.steps, args.sink, 4, graph, announce=_say_on_stderr
        )
        if profiler.summary().steps == 0:
            raise ValueError(
                "the training ran no step (its dataset gave no batch): nothing to measure"
            )
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


def _say_on_stderr(text: str) -> None:  # a minute's compile: said, in a log too
    print(f"jisu doctor: {text}", file=sys.stderr, flush=True)


def _check_report_path(path: str) -> None:
    """Refuse a ``--report`` that cannot be written (a folder, a file in a missing folder)
    before the run is measured, rather than losing the measurement."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"--report '{path}' is a folder: give the report's file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"--report '{path}': its folder '{folder}' does not exist")


# ---------------------------------------------------------------------------------- convert


def _convert(args: argparse.Namespace) -> int:
    from .dataset.record.convert import convert

    for flag, given in (("--file-names", args.file_names), ("--follow-links", args.follow_links)):
        if given and not os.path.isdir(args.src):
            raise UsageError(f"{flag} applies to image folders only; '{args.src}' is not one")
    try:
        summary = convert(
            args.src,
            args.dst,
            shards=args.shards,
            workers=args.workers,
            max_size=args.max_size,
            quality=args.quality,
            overwrite=args.overwrite,
            file_names=args.file_names,
            follow_links=args.follow_links,
            max_file_size=args.max_file_size,
        )
    except FileExistsError as exc:  # the writer names the file that exists (a shard, the
        # manifest); the flag replaces its keyword argument
        text = str(exc).replace("pass overwrite=True", "add --overwrite")
        raise FileExistsError(text.split(": ", 1)[-1]) from None
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


# ---------------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The ``jisu`` parser and its commands."""
    parser = _Parser(
        prog="jisu",
        description="jisu (极速): deep-learning training at the speed of the hardware.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"jisu {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    train = commands.add_parser(
        "train",
        help="train a small CNN through the full pipeline with AMP and sink mode, and report",
        description="The main job: the embedded digits as JPEG records (or your own images "
        "with --data), a small CNN, mixed precision, sink mode and graph mode; prints accuracy, "
        "samples/s, the data-wait share and how jisu compares with a plain PyTorch loop "
        "(interleaved timed runs of each: the median ratio and its range), and draws the "
        "curves into OUT/curves.png (with jisu[plots]).",
        formatter_class=_HelpFormatter,
    )
    train.add_argument(
        "--epochs", type=_positive_int, default=10, help="passes over the training data"
    )
    train.add_argument(
        "--batch-size", type=_positive_int, default=64, help="samples per training step"
    )
    train.add_argument(
        "--amp-level",
        default=None,
        choices=["O0", "O1", "O2", "O3", "fastest"],
        help="mixed precision: O0 fp32; O1 matmul and conv in low precision; O2 all but the "
        "norm layers; O3 everything (low precision is bf16 on CPU, fp16 on GPU) (default: "
        "fastest: of O0, O1, O2, the one whose train steps are measured fastest here)",
    )
    train.add_argument(
        "--sink",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="sink mode: run an epoch's steps without a host sync, reading the losses once",
    )
    train.add_argument(
        "--graph",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="graph mode: compile the train step with torch.compile (the first epoch then "
        "includes the compilation)",
    )
    train.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="pipeline workers for decoding and augmentation (default: the CPUs this process "
        "may use; a quarter of them on --device CPU, whose step uses every core)",
    )
    train.add_argument(
        "--device",
        default="CPU",
        choices=["CPU", "GPU", "Ascend"],
        help="where to train: CPU, GPU (CUDA) or Ascend (needs torch_npu)",
    )
    train.add_argument(
        "--data",
        default=None,
        metavar="PATH",
        help="train on your own images instead of the digits: an image folder (one subfolder "
        "per class) or jisu/MindRecord record files with 'image' and 'label' fields; accuracy "
        "is then measured on the training data (default: the digits)",
    )
    train.add_argument(
        "--lr", type=_positive_float, default=0.1, help="peak learning rate of the cosine decay"
    )
    train.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the comparison with a plain PyTorch loop (saves its runs' time)",
    )
    train.add_argument(
        "--baseline-runs",
        type=_positive_int,
        default=5,
        metavar="N",
        help="timed runs (epochs) of each of jisu and the plain loop, interleaved; at most "
        "one per epoch after the first",
    )
    train.add_argument(
        "--out",
        default="jisu-train",
        metavar="DIR",
        help="folder (created if missing) for curves.png: loss, accuracy and samples/s per epoch",
    )
    _debug_flag(train)
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
        "steps of copies of the model at O0 and at its AMP level (O2 when it runs at O0), and "
        "eager against compiled (GRAPH_MODE), the compile time included.",
        formatter_class=_HelpFormatter,
    )
    doctor.add_argument(
        "--pipeline",
        default=None,
        metavar="MODULE:FUNCTION",
        help="a function that returns the jisu dataset to measure",
    )
    doctor.add_argument(
        "--train",
        default=None,
        metavar="MODULE:FUNCTION",
        help="a function that returns (model, dataset) to train for a few steps",
    )
    doctor.add_argument(
        "--batches",
        type=_positive_int,
        default=50,
        help="pipeline: read at least this many batches",
    )
    doctor.add_argument(
        "--min-seconds",
        type=_number(float, 0),
        default=2.0,
        help="pipeline: and read for at least this long, so that the output queue's behaviour "
        "shows (a fast pipeline reads 50 batches in a few hundredths of a second)",
    )
    doctor.add_argument(
        "--seconds",
        type=_positive_float,
        default=30.0,
        help="pipeline: but never read longer than this",
    )
    doctor.add_argument(
        "--steps", type=_positive_int, default=20, help="training: steps per epoch (x3)"
    )
    doctor.add_argument("--sink", action="store_true", help="training: in sink mode")
    doctor.add_argument(
        "--skip-graph-mode",
        action="store_true",
        help="training: do not time compiled (GRAPH_MODE) against eager copies of the model, "
        "saving the compile time; the graph-mode advice then says 'not measured'",
    )
    doctor.add_argument(
        "--report", default="jisu-doctor-report.html", help="where to write the HTML report"
    )
    _debug_flag(doctor)
    doctor.set_defaults(run=_doctor)

    convert = commands.add_parser(
        "convert",
        help="pack an image folder, MindRecord files or NumPy arrays into record shards",
        description="Convert SRC (a class-per-subfolder image folder, MindRecord files, a "
        ".npz/.npy file or a jisu record data set) into a jisu record data set DST. An image "
        "folder gives the columns image (the file's bytes) and label (the class's index "
        "among the sorted folder names). All-or-nothing: an interrupted conversion leaves "
        "nothing behind.",
        formatter_class=_HelpFormatter,
    )
    convert.add_argument(
        "src",
        help="what to convert: an image folder (one subfolder per class), MindRecord files, a "
        ".npz/.npy file or a jisu record data set",
    )
    convert.add_argument(
        "dst",
        help="the record data set to write: DST (DST0 .. DST<N-1> with --shards N) and "
        "DST.manifest.json",
    )
    convert.add_argument(
        "--shards",
        type=_positive_int,
        default=1,
        help="number of shard files; rows are dealt evenly to all of them",
    )
    convert.add_argument(
        "--workers",
        type=_positive_int,
        help="reading/encoding threads (default: the CPUs this process may use)",
    )
    convert.add_argument(
        "--max-size",
        type=_positive_int,
        help="re-encode as JPEG, longer side at most this many pixels (default: store files as is)",
    )
    convert.add_argument(
        "--quality",
        type=_number(int, 1, 100),
        help="JPEG quality when re-encoding; giving it re-encodes (default: 90 with --max-size)",
    )
    convert.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing DST (readers see the old one until the new one is complete)",
    )
    convert.add_argument(
        "--file-names",
        action="store_true",
        help="image folders: add a third column file_name (the path relative to SRC); off by "
        "default, as Model feeds every column but the last to the network",
    )
    convert.add_argument(
        "--follow-links",
        action="store_true",
        help="image folders: also pack files that symbolic links lead out of SRC (by default "
        "such a file stops the conversion, naming it: a record file may be shared)",
    )
    convert.add_argument(
        "--max-file-size", help="refuse image files over this size, such as 4GiB (default: 1GiB)"
    )
    _debug_flag(convert)
    convert.set_defaults(run=_convert)
    add_port_command(commands, _HelpFormatter, _debug_flag)
    return parser


def _one_line(error: BaseException, command: str) -> str:
    """The error's message on one line (its first, without a leading ``command: ``), with its
    type, except for an ``OSError`` (a path, a permission, a full disk: the message says what
    went wrong). A ``ValueError`` keeps its type: a bug raises one too ("too many values to
    unpack"), and without the type it would read as a mistake of the user's."""
    text = str(error).strip().splitlines()
    message = text[0].removeprefix(f"{command}: ") if text else ""
    if isinstance(error, (OSError, UsageError)) and message:
        return message + (" (--debug shows the rest)" if len(text) > 1 else "")
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``jisu`` with ``argv`` (default: the process's arguments); returns the exit status:
    0 done, 1 failed while running, 2 a usage error (argparse's own usage errors exit through
    ``SystemExit(2)``, as ``--help`` and ``--version`` exit through ``SystemExit(0)``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    prog = f"jisu {args.command}"
    if not sys.stdout.isatty() and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # a job's log gets each line as printed
    if args.debug or os.environ.get("JISU_DEBUG", "") not in ("", "0"):
        return args.run(args)
    try:
        return args.run(args)
    except UsageError as error:
        print(f"{prog}: error: {error}\n(see '{prog} --help')", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        print(f"{prog}: error: {_one_line(error, args.command)}", file=sys.stderr)
        print(f"(run '{prog} ... --debug' for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
