"""jisu against LitData, MosaicML Streaming and WebDataset, reading the same rows from S3.

Run with the jisu venv, after ``setup.sh`` made the peers' venvs::

    python benchmarks/peers/s3_peers.py [--rows 40000] [--row-bytes 4096] [--images 2000]
        [--rounds 3] [--shard-bytes 8000000] [--peers litdata streaming webdataset]
        [--venvs /tmp/peers] [--jisu-numpy]

1. makes the two data sets' rows once (``_common.write_source``): ``rows``, ``--rows`` rows
   of ``--row-bytes`` random bytes + an int64 label, and ``jpeg``, the raw bytes of the
   ``--images`` JPEGs that ``benchmarks/image_pipeline.py``'s ``make_folder`` makes (375x500,
   about 70 KB each) + their class as label;
2. starts moto's S3 server over HTTP (``scale_out.s3_server``) and writes each data set in
   each library's format with that library's writer: jisu's ``FileWriter`` straight to S3,
   the peers' into a local folder that is then uploaded; shards and chunks of about
   ``--shard-bytes`` for all;
3. runs ``--rounds`` interleaved rounds: in each, every loader x workers (0 and 2) x data set
   reads once, in its own process in its own venv (jisu's is ``sys.executable``), so that
   all pay the same process start and imports, outside the timed part; each run empties its
   cache, then times a first epoch (opening the data set included, every byte from S3) and
   a second (from the filled cache), shuffled, batch 64 (the ``*_peer.py`` scripts);
4. prints per configuration the median rows/s and range over the rounds, and the ratios
   jisu / peer, each side at its best of workers 0 and 2 in that round, per round, then
   their median and range (the goal: >= 1.5x on each).

The loaders' order rotates from round to round, so that no loader always runs first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/, for scale_out and image_pipeline

from _common import write_source  # noqa: E402

BUCKET = "jisu-bench"
WORKERS = (0, 2)
NAMES = {
    "jisu": "jisu",
    "litdata": "LitData",
    "streaming": "Streaming",
    "webdataset": "WebDataset",
}
READ_TIMEOUT_S = 900


def make_sources(scratch: str, rows: int, row_bytes: int, images: int) -> dict[str, str]:
    """The rows of both data sets, as source folders (see ``_common``)."""
    import numpy as np
    from image_pipeline import make_folder

    rng = np.random.default_rng(0)
    sources = {"rows": os.path.join(scratch, "src", "rows")}
    write_source(sources["rows"], ((rng.bytes(row_bytes), i) for i in range(rows)))
    folder = os.path.join(scratch, "images")
    make_folder(folder, images)
    classes = sorted(os.listdir(folder))
    files = [
        (os.path.join(folder, name, file), label)
        for label, name in enumerate(classes)
        for file in sorted(os.listdir(os.path.join(folder, name)))
    ]

    def jpegs():
        for path, label in files:
            with open(path, "rb") as f:
                yield f.read(), label

    sources["jpeg"] = os.path.join(scratch, "src", "jpeg")
    write_source(sources["jpeg"], jpegs())
    return sources


def python_of(loader: str, venvs: str) -> str:
    return sys.executable if loader == "jisu" else os.path.join(venvs, loader, "bin", "python")


def url_of(loader: str, name: str) -> str:
    base = f"s3://{BUCKET}/{loader}/{name}"
    return f"{base}/train.rec" if loader == "jisu" else base


def run(args: list[str], timeout: float = READ_TIMEOUT_S) -> str:
    """Run a command; its stdout, or an error carrying its stderr's tail."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=HERE)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout


def write_all(
    loaders: list[str], sources: dict[str, str], scratch: str, venvs: str, shard_bytes: int
) -> dict:
    """Each data set in each loader's format in S3; per (loader, set): objects and MB."""
    import boto3

    s3 = boto3.client("s3")
    layout = {}
    for loader in loaders:
        for name, source in sources.items():
            script = os.path.join(HERE, f"{loader}_peer.py")
            size = ["--shard-bytes", str(shard_bytes)]
            if loader == "jisu":
                run([sys.executable, script, "write", source, url_of(loader, name), *size])
            else:
                out = os.path.join(scratch, "out", loader, name)
                run([python_of(loader, venvs), script, "write", source, out, *size])
                for file in sorted(os.listdir(out)):
                    s3.upload_file(os.path.join(out, file), BUCKET, f"{loader}/{name}/{file}")
                shutil.rmtree(out)
            listing = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{loader}/{name}/")["Contents"]
            data = [o["Size"] for o in listing if o["Size"] > 64 << 10]
            layout[loader, name] = (len(data), statistics.median(data) / 1e6)
    return layout


def read_once(
    loader: str, name: str, workers: int, scratch: str, venvs: str, rows: int, numpy: bool
) -> dict:
    """One reader run: its JSON line, checked for the row count of both epochs; ``numpy``:
    jisu hands out NumPy batches (no torch nested tensor for the ragged JPEG bytes)."""
    script = os.path.join(HERE, f"{loader}_peer.py")
    cache = os.path.join(scratch, "cache", loader)
    command = [python_of(loader, venvs), script, "read", url_of(loader, name), cache]
    command += ["--workers", str(workers)]
    if loader == "jisu" and name == "jpeg":
        command.append("--ragged")
    if loader == "jisu" and numpy:
        command.append("--numpy")
    result = json.loads(run(command).strip().splitlines()[-1])
    shutil.rmtree(cache, ignore_errors=True)
    if result["rows"] != [rows, rows]:
        raise RuntimeError(f"{' '.join(command)}: rows {result['rows']}, expected {rows} each")
    return result


def spread(values: list[float], digits: int) -> str:
    """``median (low-high)`` of ``values``."""
    if not values:
        return "-"
    f = f"{{:.{digits}f}}"
    med, low, high = (f.format(v) for v in (statistics.median(values), min(values), max(values)))
    return f"{med} ({low}-{high})" if len(values) > 1 else med


def print_tables(results: dict, loaders: list[str], sets: dict, layout: dict, rounds: int) -> None:
    """The per-configuration medians, then the ratios; ``results[set, loader, workers,
    round]`` is a reader's JSON line (missing where that run failed)."""
    epochs = (("epoch1", "epoch 1 (cold cache)"), ("epoch2", "cached epoch"))
    peers = [loader for loader in loaders if loader != "jisu"]
    for name, rows in sets.items():
        print(f"\ndata set '{name}': {rows} rows")
        for loader in loaders:
            count, mb = layout[loader, name]
            print(f"  {NAMES[loader]:<10} {count} objects of about {mb:.1f} MB")
        print(
            f"  {'loader':<10} {'workers':>7}  {'epoch 1 rows/s':>24}  {'cached epoch rows/s':>24}"
        )
        for loader in loaders:
            for w in WORKERS:
                runs = [results[k] for r in range(rounds) if (k := (name, loader, w, r)) in results]
                cells = [spread([run[key] for run in runs], 0) for key, _ in epochs]
                label = "0 (1)" if loader == "jisu" and w == 0 else str(w)
                print(f"  {NAMES[loader]:<10} {label:>7}  {cells[0]:>24}  {cells[1]:>24}")
        print("  jisu / peer, each at its best of workers 0 and 2 in a round (goal >= 1.5x):")
        for key, title in epochs:

            def best(loader: str, r: int, key: str = key, name: str = name) -> float | None:
                runs = [results.get((name, loader, w, r)) for w in WORKERS]
                rates = [run[key] for run in runs if run is not None]
                return max(rates, default=None)

            against = {NAMES[p]: [best(p, r) for r in range(rounds)] for p in peers}
            against["best peer"] = [
                max((v for p in peers if (v := best(p, r)) is not None), default=None)
                for r in range(rounds)
            ]
            mine = [best("jisu", r) for r in range(rounds)]
            for peer, theirs in against.items():
                ratios = [a / b for a, b in zip(mine, theirs) if a is not None and b is not None]
                rounds_text = ", ".join(f"{ratio:.2f}" for ratio in ratios)
                print(f"    {title:<20} vs {peer:<10} {spread(ratios, 2):>17}x   ({rounds_text})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40000)
    parser.add_argument("--row-bytes", type=int, default=4096)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shard-bytes", type=int, default=8_000_000)
    parser.add_argument("--peers", nargs="+", default=list(NAMES)[1:], choices=list(NAMES)[1:])
    parser.add_argument("--venvs", default="/tmp/peers", help="where setup.sh made the venvs")
    parser.add_argument(
        "--jisu-numpy", action="store_true", help="jisu's batches as NumPy, not torch"
    )
    args = parser.parse_args()
    from scale_out import s3_server

    import jisu

    loaders = ["jisu", *args.peers]
    print(f"jisu {jisu.__version__}, {os.cpu_count()} CPUs, peers' venvs in {args.venvs}")
    with tempfile.TemporaryDirectory(prefix="jisu-peers-") as scratch, s3_server() as endpoint:
        os.environ["S3_ENDPOINT_URL"] = endpoint  # Streaming's name for it
        begin = time.perf_counter()
        sources = make_sources(scratch, args.rows, args.row_bytes, args.images)
        layout = write_all(loaders, sources, scratch, args.venvs, args.shard_bytes)
        seconds = time.perf_counter() - begin
        print(f"data sets made and written to moto ({endpoint}) in {seconds:.0f} s")
        sets = {"rows": args.rows, "jpeg": args.images}
        results: dict[tuple, dict] = {}
        errors = []
        for round_ in range(args.rounds):
            order = loaders[round_ % len(loaders) :] + loaders[: round_ % len(loaders)]
            for name, rows in sets.items():
                for loader in order:
                    for w in WORKERS:
                        try:
                            result = read_once(
                                loader, name, w, scratch, args.venvs, rows, args.jisu_numpy
                            )
                        except (RuntimeError, subprocess.TimeoutExpired) as error:
                            errors.append(
                                f"round {round_ + 1}, {name}, {loader}, workers {w}: {error}"
                            )
                            print(errors[-1], file=sys.stderr)
                            continue
                        results[name, loader, w, round_] = result
            print(
                f"round {round_ + 1} of {args.rounds} done at {time.perf_counter() - begin:.0f} s",
                flush=True,
            )
    print_tables(results, loaders, sets, layout, args.rounds)
    if errors:
        print(f"\n{len(errors)} run(s) failed:\n" + "\n".join(errors))
        sys.exit(1)


if __name__ == "__main__":
    main()
