"""Errors raised during iteration: RuntimeError (MindSpore's contract) of the original type,
naming op, column and sample; results a worker process cannot send back."""

from __future__ import annotations

import pickle
import threading

import cloudpickle
import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.errors import PipelineError, with_context
from tests.conftest import rows_of


def fails_at_5(x):
    if int(x) == 5:
        raise ValueError("sample five is bad")
    return x


@pytest.mark.parametrize("processes", [False, True])
def test_an_op_error_is_both_a_runtime_error_and_of_its_own_type(processes):
    data = ds.NumpySlicesDataset({"v": np.arange(8)}, shuffle=False).map(
        fails_at_5, "v", num_parallel_workers=2, python_multiprocessing=processes
    )
    with pytest.raises(RuntimeError, match=r"fails_at_5 .* sample 5 of epoch 0") as info:
        rows_of(data)
    assert isinstance(info.value, ValueError)  # `except ValueError` still works
    assert type(info.value).__name__ == "ValueError"  # and tracebacks show the familiar name


def test_an_error_in_context_pickles_with_its_types_and_message():
    error = with_context(KeyError("k"), "map: operation f at sample 2")
    for dumps in (pickle.dumps, cloudpickle.dumps):
        copy = pickle.loads(dumps(error))
        assert isinstance(copy, KeyError) and isinstance(copy, PipelineError)
        assert str(copy) == str(error)


def test_a_file_error_in_context_keeps_its_type_and_names_the_file():
    """A MalformedFileError is built from (path, reason); in a pipeline's context it stays one
    (``except ValueError`` and its ``path`` work) and pickles so (a worker process's error)."""
    original = ds.MalformedFileError("/data/a.rec", "is not a regular file")
    error = with_context(original, "ImageFolderDataset: reading source[3] failed")
    for copy in (error, pickle.loads(pickle.dumps(error))):
        assert isinstance(copy, ds.MalformedFileError) and isinstance(copy, RuntimeError)
        assert (copy.path, copy.reason) == ("/data/a.rec", "is not a regular file")
        assert str(copy).endswith("MalformedFileError: '/data/a.rec': is not a regular file")


def returns_lock(x):
    return threading.Lock() if int(x) == 3 else x


def returns_generator(x):
    return (v for v in range(int(x)))


@pytest.mark.parametrize(
    ("op", "kind", "sample"),
    [(returns_lock, "_thread.lock", 3), (returns_generator, "generator", 0)],
)
def test_a_result_that_cannot_be_sent_back_names_op_column_sample_and_type(op, kind, sample):
    data = ds.NumpySlicesDataset({"v": np.arange(8)}, shuffle=False).map(
        op, "v", num_parallel_workers=2, python_multiprocessing=True
    )
    with pytest.raises(TypeError) as info:
        rows_of(data)
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert f"map: operation {op.__name__} returned a value that cannot be sent back" in message
    assert f"a '{kind}' object in column 'v' at sample {sample} of epoch 0" in message
    assert f"cannot pickle '{kind}' object" in message  # the original error
    assert "Traceback in the worker process" in str(info.value.__cause__)


def test_an_unsendable_value_in_a_batch_names_the_batch():
    data = (
        ds.NumpySlicesDataset({"v": np.arange(8)}, shuffle=False)
        .map(returns_lock, "v")
        .batch(4, num_parallel_workers=2, python_multiprocessing=True)
    )
    with pytest.raises(TypeError, match=r"a '_thread.lock' object in column 'v' at batch 0 of"):
        rows_of(data)
