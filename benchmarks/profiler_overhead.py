"""Pipeline profiler overhead: the same tiny-row pipeline with the profiler off and on.

400,000 float32 rows -> map (a Python function, 2 workers) -> batch(32); the two settings
alternate for ``--repeats`` runs each, in an order that flips every pair (so that drift in the
machine's speed does not favour one side); reported: the medians of each side and the median
of the per-pair ratios. Usage: python benchmarks/profiler_overhead.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import jisu.dataset as ds


def rate(rows: np.ndarray, profiler: bool) -> float:
    ds.config.set_enable_profiler(profiler)
    try:
        data = ds.NumpySlicesDataset(rows, shuffle=True)
        data = data.map(lambda v: v * 2, num_parallel_workers=2).batch(32)
        iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        begin = time.perf_counter()
        count = sum(len(batch[0]) for batch in iterator)
        return count / (time.perf_counter() - begin)
    finally:
        ds.config.set_enable_profiler(False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    rows = np.arange(400_000, dtype=np.float32)
    runs: dict[bool, list[float]] = {False: [], True: []}
    for k in range(args.repeats):
        for profiler in (False, True) if k % 2 == 0 else (True, False):
            runs[profiler].append(rate(rows, profiler))
    off, on = statistics.median(runs[False]), statistics.median(runs[True])
    ratios = sorted(a / b for a, b in zip(runs[True], runs[False]))
    print(
        f"profiler off: {off:,.0f} rows/s; on: {on:,.0f} rows/s; on/off = {on / off:.3f}; "
        f"per-pair on/off: median {statistics.median(ratios):.3f} "
        f"(range {ratios[0]:.3f}-{ratios[-1]:.3f}, {len(ratios)} pairs)"
    )


if __name__ == "__main__":
    main()
