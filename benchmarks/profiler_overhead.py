"""Pipeline profiler overhead: the same tiny-row pipeline with the profiler off and on.

400,000 float32 rows -> map (a Python function, 2 workers) -> batch(32); the two settings
alternate for ``--repeats`` runs each; medians. Usage: python benchmarks/profiler_overhead.py
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
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = np.arange(400_000, dtype=np.float32)
    runs: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.repeats):
        for profiler in (False, True):
            runs[profiler].append(rate(rows, profiler))
    off, on = statistics.median(runs[False]), statistics.median(runs[True])
    print(f"profiler off: {off:,.0f} rows/s; on: {on:,.0f} rows/s; on/off = {on / off:.3f}")


if __name__ == "__main__":
    main()
