"""What every peer script shares: the source rows, and the two timed epochs.

Imported by the writers and readers in each peer's venv (next to the script, so on its
``sys.path``), hence the standard library and NumPy only.

The source of a data set is one folder that the driver (``s3_peers.py``) makes once:
``data.bin`` (the rows' bytes back to back), ``offsets.npy`` (int64, rows + 1) and
``labels.npy`` (int64). Every library's writer reads the same rows from it, so all loaders
read the same bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

BATCH = 64


def write_source(folder: str, rows: Iterable[tuple[bytes, int]]) -> None:
    """Store ``rows`` (bytes, label) in ``folder`` in the layout above."""
    os.makedirs(folder, exist_ok=True)
    offsets, labels = [0], []
    with open(os.path.join(folder, "data.bin"), "wb") as f:
        for data, label in rows:
            f.write(data)
            offsets.append(offsets[-1] + len(data))
            labels.append(label)
    np.save(os.path.join(folder, "offsets.npy"), np.asarray(offsets, np.int64))
    np.save(os.path.join(folder, "labels.npy"), np.asarray(labels, np.int64))


class Source:
    """Random access to a source folder's rows: ``source[i] -> (bytes, label)``."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.offsets = np.load(os.path.join(folder, "offsets.npy"))
        self.labels = np.load(os.path.join(folder, "labels.npy"))
        self._data: np.memmap | None = None

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[bytes, int]:
        if self._data is None:  # opened lazily: the object pickles to writer processes
            self._data = np.memmap(os.path.join(self.folder, "data.bin"), np.uint8, "r")
        begin, end = self.offsets[i], self.offsets[i + 1]
        return self._data[begin:end].tobytes(), int(self.labels[i])

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        return (self[i] for i in range(len(self)))

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_data": None}


def two_epochs(open_loader: Callable[[], Iterable[Any]], rows_in: Callable[[Any], int]) -> dict:
    """Rows and rows/s of two passes over the loader that ``open_loader`` returns.

    The first is timed from the call to ``open_loader`` (opening the data set, listing or
    reading its index, starting workers) to its last batch, the second from the start of the
    second pass to its last batch (what a training loop's next epoch costs: workers restart
    where the loader restarts them, the cache is filled).
    """
    begin = time.perf_counter()
    loader = open_loader()
    first = sum(rows_in(batch) for batch in loader)
    middle = time.perf_counter()
    second = sum(rows_in(batch) for batch in loader)
    end = time.perf_counter()
    return {
        "rows": [first, second],
        "epoch1": first / (middle - begin),
        "epoch2": second / (end - middle),
    }


def empty(cache: str) -> None:
    """Remove and recreate ``cache`` so that the first epoch reads everything from S3."""
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(cache)


def report(result: dict, **fields: Any) -> None:
    """The one JSON line a reader prints (the driver reads the last line of its stdout)."""
    print(json.dumps({**fields, **result}), flush=True)
