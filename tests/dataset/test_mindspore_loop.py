"""A MindSpore-style loop runs unchanged: ``create_dict_iterator()`` + ``.asnumpy()`` with no
setup call, outputs that stay plain ``torch.Tensor`` s, ``except RuntimeError`` around a
failing op, and the iterator's ``dataset``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jisu.dataset as ds

#: Run in a fresh interpreter: other tests may already have given torch.Tensor asnumpy().
LOOP = textwrap.dedent(
    """
    import numpy as np
    import torch
    import jisu.dataset as ds

    # importing jisu (here through jisu.dataset) gives torch.Tensor MindSpore's methods
    assert hasattr(torch.Tensor, "asnumpy"), "no asnumpy after import jisu.dataset"
    data = ds.NumpySlicesDataset(
        {"image": np.arange(24, dtype=np.float32).reshape(6, 4), "label": np.arange(6)},
        shuffle=False,
    ).batch(4)
    seen = []
    for d in data.create_dict_iterator(num_epochs=1):
        assert type(d["image"]) is torch.Tensor, type(d["image"])
        image = d["image"].asnumpy()
        assert isinstance(image, np.ndarray)
        seen.append((image.tolist(), d["label"].asnumpy().tolist()))
    for image, label in data.create_tuple_iterator(num_epochs=1):
        assert isinstance(image.asnumpy(), np.ndarray)
    print(seen)
    """
)


@pytest.mark.timeout(120)
def test_dict_iterator_outputs_have_asnumpy_without_a_setup_call():
    done = subprocess.run(
        [sys.executable, "-c", LOOP], capture_output=True, text=True, timeout=110, check=False
    )
    assert done.returncode == 0, done.stderr
    image = np.arange(24, dtype=np.float32).reshape(6, 4)
    expected = [(image[:4].tolist(), [0, 1, 2, 3]), (image[4:].tolist(), [4, 5])]
    assert done.stdout.strip() == repr(expected)


def test_asnumpy_shares_memory_with_a_cpu_output():
    data = ds.NumpySlicesDataset({"x": np.arange(8, dtype=np.int64)}, shuffle=False).batch(8)
    (row,) = list(data.create_tuple_iterator(num_epochs=1))
    array = row[0].asnumpy()
    assert np.shares_memory(array, row[0].numpy())
    np.testing.assert_array_equal(array, np.arange(8))


def test_output_numpy_gives_arrays():
    data = ds.NumpySlicesDataset({"x": np.arange(3)}, shuffle=False)
    rows = list(data.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert all(isinstance(r["x"], np.ndarray) for r in rows)


def _fails_on_two(x):
    if int(x) == 2:
        raise ValueError("two is not welcome")
    return x


def test_except_runtime_error_catches_an_op_failure_as_in_mindspore():
    data = ds.NumpySlicesDataset({"x": np.arange(4)}, shuffle=False).map(_fails_on_two, ["x"])
    got = []
    with pytest.raises(RuntimeError, match="two is not welcome"):
        try:
            for d in data.create_dict_iterator(num_epochs=1):
                got.append(int(d["x"].asnumpy()))
        except RuntimeError as err:  # what a MindSpore script catches
            assert isinstance(err, ValueError)  # ... and the op's own type is kept
            raise
    assert got == [0, 1]


def test_iterator_dataset_is_the_pipeline_it_runs():
    data = ds.NumpySlicesDataset({"a": np.arange(3), "b": np.arange(3)}, shuffle=False)
    it = data.create_dict_iterator(num_epochs=1)
    assert it.dataset is data
    projected = data.create_tuple_iterator(num_epochs=1, columns=["b"])
    assert projected.dataset.get_col_names() == ["b"]
    assert [int(b) for (b,) in projected] == [0, 1, 2]
