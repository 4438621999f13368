"""Misuse fails when the pipeline is built; failures inside ops name op, column and sample."""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import vision
from tests.conftest import rows_of


def nums(n=10):
    return ds.NumpySlicesDataset({"x": np.arange(n), "y": np.arange(n)}, shuffle=False)


@pytest.mark.parametrize(
    "build, error, message",
    [
        (
            lambda: nums().map(lambda v: v, input_columns="nope"),
            ValueError,
            r"map: unknown column\(s\) \['nope'\] in input_columns; the dataset has columns "
            r"\['x', 'y'\]",
        ),
        (lambda: nums().map(42), TypeError, r"map: operation 0 is not callable"),
        (lambda: nums().map([]), ValueError, r"map: operations must not be empty"),
        (
            lambda: nums().map(lambda v: v, "x", ["y"]),
            ValueError,
            r"map: the output would have duplicate column names \['y'\]",
        ),
        (
            lambda: nums().map(lambda v: v, num_parallel_workers=0),
            ValueError,
            r"map: num_parallel_workers must be >= 1. Received: num_parallel_workers=0",
        ),
        (
            lambda: nums().batch(0),
            ValueError,
            r"batch: batch_size must be >= 1. "
            r"Received: batch_size=0",
        ),
        (lambda: nums().batch(2.5), TypeError, r"batch: batch_size must be an int"),
        (
            lambda: nums().batch(2, pad_info={"z": (None, 0)}),
            ValueError,
            r"batch: pad_info names unknown column 'z'",
        ),
        (
            lambda: nums().shard(3, 3),
            ValueError,
            r"shard: shard_id must be in \[0, num_shards\). Received: num_shards=3, shard_id=3",
        ),
        (
            lambda: ds.NumpySlicesDataset(np.arange(4), num_shards=2),
            ValueError,
            r"NumpySlicesDataset: num_shards and shard_id must be given together",
        ),
        (lambda: nums().shuffle(1), ValueError, r"shuffle: buffer_size must be >= 2"),
        (lambda: nums().repeat(0), ValueError, r"repeat: count must be -1, None or >= 1"),
        (lambda: nums().project(["x", "q"]), ValueError, r"project: unknown column\(s\) \['q'\]"),
        (lambda: nums().rename(["x"], ["a", "b"]), ValueError, r"rename: .* same length"),
        (
            lambda: nums().filter(lambda x: True, input_columns=["w"]),
            ValueError,
            r"filter: unknown column",
        ),
        (
            lambda: nums() + ds.NumpySlicesDataset(np.arange(3)),
            ValueError,
            r"concat: datasets\[1\] has columns \['column_0'\] but datasets\[0\] has \['x', 'y'\]",
        ),
        (lambda: ds.zip((nums(), nums())), ValueError, r"zip: .*duplicate column names"),
        (lambda: ds.GeneratorDataset(42, ["x"]), TypeError, r"GeneratorDataset: source must be"),
        (
            lambda: ds.GeneratorDataset(lambda: iter([]), []),
            ValueError,
            r"GeneratorDataset: column_names must be a non-empty list",
        ),
        (
            lambda: ds.GeneratorDataset(lambda: iter([]), ["a"], sampler=[0]),
            ValueError,
            r"a sampler needs a random-access source",
        ),
        (
            lambda: nums().create_tuple_iterator(num_epochs=0),
            ValueError,
            r"num_epochs must be -1 \(no limit\) or a positive int",
        ),
        (lambda: vision.Resize(-1), ValueError, r"Resize: size must be positive"),
        (lambda: vision.Normalize([1, 2], [1]), ValueError, r"Normalize: mean and std"),
    ],
)
def test_misuse_fails_at_build_time_naming_op_and_argument(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_random_access_column_mismatch_fails_when_built():
    class Triples:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.array(i), np.array(i), np.array(i)

    with pytest.raises(ValueError, match=r"yielded 3 value\(s\) at index 0 but column_names has 2"):
        ds.GeneratorDataset(Triples(), ["a", "b"])


def test_generator_column_count_mismatch_is_clear():
    def gen():
        yield np.array(1), np.array(2), np.array(3)

    with pytest.raises(ValueError, match=r"yielded 3 value\(s\) at row 0 but column_names has 2"):
        rows_of(ds.GeneratorDataset(gen, ["a", "b"]))


def failing_op(x):
    if int(x) == 7:
        raise KeyError("bad sample")
    return x


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("random_access", [True, False])
def test_failure_in_op_names_op_column_and_sample_and_keeps_traceback(workers, random_access):
    if random_access:
        data = nums(20)
    else:
        data = ds.GeneratorDataset(
            lambda: ((np.array(i), np.array(i)) for i in range(20)), ["x", "y"]
        )
    data = data.map(failing_op, "x", num_parallel_workers=workers).batch(4)
    with pytest.raises(KeyError) as info:
        rows_of(data)
    message = str(info.value)
    assert "failing_op" in message and "['x']" in message and "sample 7" in message
    cause = info.value.__cause__
    assert isinstance(cause, KeyError) and cause.args == ("bad sample",)
    frames = traceback.extract_tb(cause.__traceback__)
    assert frames[-1].name == "failing_op"  # the worker's traceback is kept


def test_rows_before_a_failure_are_delivered_in_order():
    it = (
        nums(20)
        .map(failing_op, "x", num_parallel_workers=2)
        .create_tuple_iterator(output_numpy=True)
    )
    got = []
    with pytest.raises(KeyError):
        for row in it:
            got.append(int(row[0]))
    assert got == list(range(7))


def test_source_failure_names_the_index():
    class Broken:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            if i == 3:
                raise OSError("disk on fire")
            return np.array(i)

    with pytest.raises(OSError, match=r"reading source\[3\] failed: OSError: disk on fire"):
        rows_of(ds.GeneratorDataset(Broken(), ["x"], shuffle=False))


def test_exception_type_without_message_constructor_becomes_pipeline_error():
    class Odd(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    def op(x):
        raise Odd(1, 2)

    with pytest.raises(ds.PipelineError, match="map: operation op") as info:
        rows_of(nums().map(op, "x"))
    assert isinstance(info.value.__cause__, Odd)
