"""PaddedDataset: a few rows given as dicts, mostly to pad a data set so that it divides evenly
across shards (``(data + padded).use_sampler(DistributedSampler(...))``)."""

from __future__ import annotations

from .generator import Source
from .options import ReadOptions


class _PaddedRows:
    """Row ``i`` is ``padded_samples[i]``'s values in column order."""

    def __init__(self, samples: list[dict], columns: list[str]) -> None:
        self.samples = samples
        self.columns = columns

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple:
        return tuple(self.samples[index][c] for c in self.columns)


class PaddedDataset(Source):
    """Rows from ``padded_samples``, a non-empty list of dicts (MindSpore's ``PaddedDataset``).

    The columns are the first dict's keys, in their order; every dict must have them (extra
    keys are ignored, as in MindSpore). Values are converted like a :class:`GeneratorDataset`'s
    (Python ints -> int64, floats -> float64, str -> a string array). Rows are read in order
    (not shuffled). Its main use: ``(data + padded).use_sampler(DistributedSampler(n, i,
    shuffle=False))`` deals the joined rows round-robin to the shards.
    """

    builds_indexed_source = True
    serial_reads = False  # reading dicts is thread-safe
    reads_can_fail = False
    default_workers = None

    def __init__(self, padded_samples: list[dict]) -> None:
        op = "PaddedDataset"
        if not isinstance(padded_samples, list):
            raise TypeError(
                f"{op}: padded_samples must be a list of dicts. "
                f"Received: {type(padded_samples).__name__}"
            )
        if not padded_samples:
            raise ValueError(f"{op}: padded_samples cannot be empty")
        for k, sample in enumerate(padded_samples):
            if not isinstance(sample, dict):
                raise TypeError(
                    f"{op}: padded_samples[{k}] must be a dict. Received: {type(sample).__name__}"
                )
        columns = list(padded_samples[0])
        if not columns:
            raise ValueError(f"{op}: padded_samples[0] has no keys; the columns are its keys")
        for k, sample in enumerate(padded_samples[1:], 1):
            missing = [c for c in columns if c not in sample]
            if missing:
                raise ValueError(
                    f"{op}: padded_samples[{k}] lacks key(s) {missing}; every dict needs the "
                    f"columns of padded_samples[0]: {columns}"
                )
        self.padded_samples = padded_samples
        super().__init__(_PaddedRows(padded_samples, columns), columns, ReadOptions(shuffle=False))

    def _sample_name(self, index: int) -> str:
        return f"padded_samples[{index}]"
