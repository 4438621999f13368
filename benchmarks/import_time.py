"""What importing jisu costs, against importing torch alone (which jisu needs anyway), and
how long a pipeline's first row takes with worker processes (their start) against threads.

Each import is a fresh interpreter (``python -c "import X"``), the statements taking turns over
``--rounds`` rounds; the median wall time of each is printed with its range, and jisu's cost
beyond torch's. ``-X importtime``'s top modules are printed for ``import jisu`` (once).

    python benchmarks/import_time.py --rounds 7
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

STATEMENTS = {
    "python": "pass",
    "import torch": "import torch",
    "import jisu": "import jisu",
    "import jisu.dataset": "import jisu.dataset",
    "import mindspore-style": "import jisu as ms; import jisu.nn as nn; import jisu.dataset as ds",
}

FIRST_ROW = """
import time, numpy as np
import jisu.dataset as ds
begin = time.perf_counter()
data = ds.NumpySlicesDataset(np.arange(64), shuffle=False).map(
    lambda x: x, num_parallel_workers=2, python_multiprocessing={processes})
next(data.create_tuple_iterator(output_numpy=True))
print(time.perf_counter() - begin)
"""


def wall(code: str) -> float:
    begin = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - begin


def inner(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def top_imports(statement: str, count: int = 8) -> list[tuple[float, str]]:
    """``-X importtime``'s slowest modules imported directly by the statement's package
    (cumulative seconds; nested imports are indented two spaces a level)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True
    ).stderr
    rows = []
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2].rstrip()
        if len(name) - len(name.lstrip()) == 3:  # one level below the top: jisu's imports
            rows.append((int(parts[1]) / 1e6, name.strip()))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    rows: dict[str, list[float]] = {"threads": [], "processes": []}
    for r in range(args.rounds):
        names = list(STATEMENTS)
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(wall(STATEMENTS[name]))
        for kind in ("threads", "processes") if r % 2 == 0 else ("processes", "threads"):
            rows[kind].append(inner(FIRST_ROW.format(processes=kind == "processes")))
    print(f"{args.rounds} rounds, fresh interpreters, median (range) of wall time:")
    for name, values in times.items():
        print(
            f"  {name:24} {statistics.median(values):6.2f} s ({min(values):.2f}-{max(values):.2f})"
        )
    torch_s = statistics.median(times["import torch"])
    print(f"  jisu beyond torch: {statistics.median(times['import jisu']) - torch_s:.2f} s")
    for kind, values in rows.items():
        print(
            f"  first row, 2 workers as {kind:9}: {statistics.median(values):6.2f} s "
            f"({min(values):.2f}-{max(values):.2f})"
        )
    print("slowest top-level imports of 'import jisu' (cumulative s, one run):")
    for seconds, module in top_imports("import jisu"):
        print(f"  {seconds:6.2f} {module}")


if __name__ == "__main__":
    main()
