"""Resuming in error samples mode "skip": a restored iterator continues on exactly the next row.

A source or map in "skip" mode may drop rows, so the iterator's position (rows delivered) is not
a position in the read order. Each pipeline below is run for two whole epochs, then restored
from the state saved after *every* row (grain's checkpoint test) and must give exactly the rest
of the recorded output, and count the skips of the epochs it ran (the restored epoch from its
start: ``DatasetIterator.skipped_samples``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import transforms

NUM_EPOCHS = 2


class FlakySource:
    """Rows ``(i, 10 * i)``; reading an index in ``bad`` fails, as a corrupt file would."""

    def __init__(self, n: int, bad: tuple[int, ...]) -> None:
        self.n, self.bad = n, bad

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        if index in self.bad:
            raise OSError(f"disk read error at item {index}")
        return np.array(index), np.array(10 * index)


def fails_on_3_and_8(i: np.ndarray) -> np.ndarray:
    """A map op that fails on values 3 and 8 (``i % 5 == 3``)."""
    if int(i) % 5 == 3:
        raise ValueError(f"bad sample {int(i)}")
    return i


def plus_1000(j: np.ndarray) -> np.ndarray:
    return j + 1000


def coin(j_column: str = "j") -> dict:
    """A random map on column j (adds 1000 or not): the same draws after a restore show that
    every row keeps its index in the map's input."""
    return {"operations": transforms.RandomApply([plus_1000], 0.5), "input_columns": j_column}


def in_mode(mode: str, build: Callable[[], ds.Dataset]) -> ds.Dataset:
    """Build a node in error samples ``mode`` (read when a node is built)."""
    ds.config.set_error_samples_mode(mode)
    try:
        return build()
    finally:
        ds.config.set_error_samples_mode("raise")


def flaky_source(n=10, bad=(2, 7), shuffle=False, processes=False) -> ds.Dataset:
    return in_mode(
        "skip",
        lambda: ds.GeneratorDataset(
            FlakySource(n, bad),
            ["i", "j"],
            shuffle=shuffle,
            num_parallel_workers=2,
            python_multiprocessing=processes,
        ),
    )


def skip_map(data: ds.Dataset, processes: bool = False) -> ds.Dataset:
    return in_mode(
        "skip",
        lambda: data.map(
            fails_on_3_and_8, "i", num_parallel_workers=2, python_multiprocessing=processes
        ),
    )


@dataclass
class Case:
    """A pipeline with skips, and what one epoch of it must give (an independent expectation):
    the values of column i (flattened over batches), in order unless ``shuffled``, and the
    samples skipped per epoch."""

    build: Callable[[], ds.Dataset]
    values: list[int] | None
    skips: int | None
    shuffled: bool = False


def numbers(n: int = 10) -> ds.Dataset:
    return ds.NumpySlicesDataset({"i": np.arange(n), "j": 10 * np.arange(n)}, shuffle=False)


CASES = {
    "source": Case(flaky_source, [0, 1, 3, 4, 5, 6, 8, 9], 2),
    "source-shuffled": Case(
        lambda: flaky_source(shuffle=True), [0, 1, 3, 4, 5, 6, 8, 9], 2, shuffled=True
    ),
    # a map that cannot drop rows above a source that can: its restore stays cheap
    "source-raise-map": Case(
        lambda: flaky_source(shuffle=True).map(**coin(), num_parallel_workers=2),
        [0, 1, 3, 4, 5, 6, 8, 9],
        2,
        shuffled=True,
    ),
    "map": Case(lambda: skip_map(numbers()), [0, 1, 2, 4, 5, 6, 7, 9], 2),
    "map-shuffled": Case(
        lambda: skip_map(numbers().shuffle(10)).map(**coin()),
        [0, 1, 2, 4, 5, 6, 7, 9],
        2,
        shuffled=True,
    ),
    "source-map-batch": Case(
        lambda: skip_map(flaky_source(n=12, bad=(2,))).map(**coin()).batch(3),
        [0, 1, 4, 5, 6, 7, 9, 10, 11],
        3,
    ),
    "source-map-batch-shuffled-drop-remainder": Case(
        lambda: skip_map(flaky_source(n=12, bad=(2,), shuffle=True)).batch(2, True),
        None,  # 9 rows survive; which 8 are batched depends on the order
        3,
        shuffled=True,
    ),
    "source-repeat": Case(
        lambda: flaky_source(n=6, bad=(2,)).repeat(2),
        [0, 1, 3, 4, 5, 0, 1, 3, 4, 5],
        2,  # one per pass, counted in the iterator's epoch
    ),
    "source-concat": Case(
        lambda: flaky_source(n=5, bad=(2,)) + numbers(3), [0, 1, 3, 4, 0, 1, 2], 1
    ),
    "map-filter-take": Case(
        lambda: skip_map(flaky_source()).filter(lambda i: i % 2 == 0, "i").take(3),
        [0, 4, 6],
        None,  # take stops reading early: the count depends on how far workers ran ahead
    ),
    "processes": Case(
        lambda: skip_map(flaky_source(n=7, bad=(2,), shuffle=True, processes=True), True),
        [0, 1, 4, 5, 6],
        2,
        shuffled=True,
    ),
}


def as_values(row: list) -> tuple:
    return tuple(np.asarray(v).tolist() for v in row)


def consume(it, first_epoch: int) -> tuple[list, list]:
    """The rest of ``it``'s rows as ``(epoch, values)``, and its state after each of them."""
    rows, states = [], []
    for epoch in range(first_epoch, NUM_EPOCHS):
        for row in it:
            rows.append((epoch, as_values(row)))
            states.append(it.get_state())
    return rows, states


def column_i(rows: list) -> list[int]:
    """Column i of one epoch's rows, flattened over batches."""
    values = []
    for _, row in rows:
        values.extend(np.ravel(row[0]).tolist())
    return values


def check_epoch(case: Case, rows: list) -> None:
    """One epoch's rows against the case's independent expectation."""
    values = column_i(rows)
    if case.values is None:  # drop_remainder: whole batches of distinct surviving rows
        assert len(values) == 8 and len(set(values)) == 8
        assert set(values) <= {0, 1, 4, 5, 6, 7, 9, 10, 11}
    elif case.shuffled:
        assert sorted(values) == sorted(case.values)
    else:
        assert values == case.values
    for _, row in rows:  # column j is 10 * i, plus 1000 where the random map fired
        i, j = np.ravel(row[0]), np.ravel(row[1])
        assert np.all((j == 10 * i) | (j == 10 * i + 1000))


@pytest.mark.parametrize("name", list(CASES))
def test_restoring_at_every_row_gives_exactly_the_rest(name):
    case = CASES[name]
    data = case.build()
    it = data.create_tuple_iterator(num_epochs=NUM_EPOCHS, output_numpy=True)
    initial = it.get_state()
    full, states = consume(it, 0)
    for epoch in range(NUM_EPOCHS):
        check_epoch(case, [r for r in full if r[0] == epoch])
    if case.skips is not None:
        assert it.skipped_samples == NUM_EPOCHS * case.skips
    # every state: before the first row, after each row, and at each epoch's start
    first_of = {e: next(k for k, r in enumerate(full) if r[0] == e) for e in range(NUM_EPOCHS)}
    restore_points = [(initial, 0)] + [(state, k + 1) for k, state in enumerate(states)]
    restore_points += [({**initial, "epoch": e, "position": 0}, first_of[e]) for e in first_of]
    for state, k in restore_points:
        resumed = data.create_tuple_iterator(num_epochs=NUM_EPOCHS, output_numpy=True)
        resumed.set_state(state)
        rest, _ = consume(resumed, state["epoch"])
        assert rest == full[k:], f"restored at {state} (after {k} rows)"
        if case.skips is not None:  # the epochs it ran, the restored one from its start
            assert resumed.skipped_samples == (NUM_EPOCHS - state["epoch"]) * case.skips


def test_set_state_on_the_same_iterator_counts_each_skip_once():
    data = CASES["source-map-batch"].build()  # 3 skips per epoch, 3 rows per batch
    expected, _ = consume(data.create_tuple_iterator(num_epochs=NUM_EPOCHS, output_numpy=True), 0)
    it = data.create_tuple_iterator(num_epochs=NUM_EPOCHS, output_numpy=True)
    head = [(0, as_values(next(it))) for _ in range(2)]  # rows 0..5, past 2 of the skips
    it.set_state(it.get_state())  # replays epoch 0 up to here: its skips are found again
    rest, _ = consume(it, 0)
    assert head + rest == expected
    assert column_i(head + rest) == 2 * CASES["source-map-batch"].values
    assert it.skipped_samples == 2 * 3


def test_close_then_set_state_counts_each_skip_once():
    data = CASES["source"].build()  # source[2] and source[7] fail
    it = data.create_tuple_iterator(num_epochs=NUM_EPOCHS, output_numpy=True)
    head = [int(next(it)[0]) for _ in range(4)]  # 0, 1, 3, 4: past source[2]
    state = it.get_state()
    it.close()
    assert it.skipped_samples >= 1  # the epoch in progress is kept after close
    it.set_state(state)
    rest = [int(r[0]) for _ in range(NUM_EPOCHS) for r in it]
    assert head + rest == 2 * [0, 1, 3, 4, 5, 6, 8, 9]
    assert it.skipped_samples == 2 * 2


@pytest.mark.parametrize(
    "build, per_epoch, rows",
    [
        (lambda: flaky_source(n=6, bad=(2,)).repeat(2), 2, 10),  # a stream source below
        (lambda: skip_map(numbers()).repeat(2), 4, 16),  # a skipping map (a stream stage)
        (lambda: skip_map(numbers(), processes=True).repeat(2), 4, 16),  # ... in processes
        (lambda: skip_map(numbers()).repeat(2).repeat(3), 12, 48),  # nested repeats
        (lambda: skip_map(numbers()).repeat(2).batch(3), 4, 6),  # counted in the batch stage
    ],
    ids=["stream", "fused", "processes", "nested", "batched"],
)
def test_skips_below_a_repeat_count_in_the_iterators_epoch(build, per_epoch, rows):
    """Bad samples: source index 2, or map values 3 and 8 of 0..9; once per pass. ``rows``:
    the good ones per epoch (batches of 3 for the batched case: 16 rows -> 6 batches)."""
    it = build().create_tuple_iterator(num_epochs=NUM_EPOCHS, output_numpy=True)
    for epoch in range(1, NUM_EPOCHS + 1):
        assert len(list(it)) == rows
        assert it.skipped_samples == epoch * per_epoch


class CountingSource:
    """Rows ``(i,)`` of a random-access source that counts its reads."""

    def __init__(self, n: int) -> None:
        self.n, self.reads = n, []

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        self.reads.append(index)
        return (np.array(index),)


def test_a_pipeline_that_cannot_drop_rows_restores_without_replaying():
    """In "raise" mode nothing drops rows: a restore at row 60 reads rows 60..99 only."""
    source = CountingSource(100)
    data = ds.GeneratorDataset(source, ["i"], shuffle=False, num_parallel_workers=2)
    data = data.map(plus_1000, "i", num_parallel_workers=2)
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    for _ in range(60):
        next(it)
    state = it.get_state()
    it.close()
    source.reads.clear()
    restored = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    restored.set_state(state)
    rest = [int(r[0]) for r in restored]
    assert rest == list(range(1060, 1100))
    assert sorted(source.reads) == list(range(60, 100))  # each once, none before the position
