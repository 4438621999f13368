"""AutoTune on the image pipeline: from a poor start (1 worker, prefetch 1) to the best
hand-picked configuration's throughput within the first epoch.

The pipeline and data are benchmarks/image_pipeline.py's (ImageFolderDataset ->
RandomCropDecodeResize(224) -> flip -> Normalize -> HWC2CHW -> batch 64). Measured in one run:
each hand-picked worker count 1..cores for one epoch (the best is the reference), then the
poor start with AutoTune on; rates are over the last third of an epoch (steady state), the
tuned one of its first epoch. Needs scikit-learn and Pillow (for the photos), like
image_pipeline.py.
Usage: python benchmarks/autotune.py [--images 2000] [--dir PATH]
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time

from image_pipeline import jisu_pipeline, make_folder

import jisu.dataset as ds
from jisu.dataset.core.cpus import available_cpus


def epoch_times(root: str, workers: int | None) -> list[tuple[float, int]]:
    """(seconds since start, images) after each batch of one epoch."""
    iterator = jisu_pipeline(root, workers).create_tuple_iterator(num_epochs=1)
    begin, seen, marks = time.perf_counter(), 0, []
    for image, _ in iterator:
        seen += image.shape[0]
        marks.append((time.perf_counter() - begin, seen))
    return marks


def rate(marks: list[tuple[float, int]], start_share: float = 0.0) -> float:
    """Images/s from ``start_share`` of the epoch's batches to its end."""
    first = int(len(marks) * start_share)
    t0, n0 = (0.0, 0) if first == 0 else marks[first - 1]
    t1, n1 = marks[-1]
    return (n1 - n0) / (t1 - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--dir", default=None, help="reuse or create the JPEG folder here")
    args = parser.parse_args()
    cores = available_cpus()
    with tempfile.TemporaryDirectory(prefix="jisu-autotune-") as scratch:
        root = args.dir or os.path.join(scratch, "images")
        if not os.path.isdir(root):
            make_folder(root, args.images)
        epoch_times(root, cores)  # warm the page cache and the code paths
        # steady state against steady state: every rate is over the last third of an epoch
        hand = {w: rate(epoch_times(root, w), 2 / 3) for w in range(1, cores + 1)}
        best = max(hand, key=hand.get)
        logging.basicConfig(level=logging.INFO, format="  %(message)s")
        # the poor start: 1 worker by default (an explicit num_parallel_workers=1 would be a
        # promise AutoTune keeps), prefetch 1
        default_workers = ds.config.get_num_parallel_workers()
        ds.config.set_num_parallel_workers(1)
        ds.config.set_prefetch_size(1)
        ds.config.set_enable_autotune(True, filepath=os.path.join(scratch, "tuned.json"))
        try:
            print("AutoTune from 1 worker (the default), prefetch 1:")
            marks = epoch_times(root, None)
        finally:
            ds.config.set_enable_autotune(False)
            ds.config.set_prefetch_size(16)
            ds.config.set_num_parallel_workers(default_workers)
    for w, r in hand.items():
        print(f"  hand-picked {w} worker(s): {r:6.0f} images/s")
    tuned_end, tuned_all = rate(marks, 2 / 3), rate(marks)
    print(f"  AutoTune, last third of its first epoch: {tuned_end:6.0f} images/s "
          f"(whole first epoch {tuned_all:.0f})")  # fmt: skip
    print(f"  AutoTune / best hand-picked ({best} workers) = {tuned_end / hand[best]:.2f}x "
          "(target >= 0.90x)")  # fmt: skip


if __name__ == "__main__":
    main()
