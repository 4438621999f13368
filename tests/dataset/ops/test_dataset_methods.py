"""Dataset and iterator methods that ported MindSpore code calls, against what MindSpore 2.10
returned (tests/fixtures/vision_sets/expected.json, "methods"; made by make_fixtures.py)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import jisu
import jisu.dataset as ds
from tests.conftest import rows_of

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "vision_sets")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)
WANT = EXPECTED["methods"]


def ten():
    return ds.NumpySlicesDataset(np.arange(10), ["x"], shuffle=False)


def size_fn(info):
    return info.get_epoch_num() + 1 + info.get_batch_num()


def test_a_callable_batch_size_matches_mindspore_and_resumes():
    data = ten().batch(size_fn)
    with data.create_tuple_iterator(num_epochs=2, output_numpy=True) as it:
        epochs = [[r[0].tolist() for r in it] for _ in range(2)]
    assert epochs == WANT["callable_batch_two_epochs"]
    assert data.get_batch_size() == WANT["callable_batch_size"] == -1
    assert data.get_dataset_size() == WANT["callable_batch_dataset_size"]
    it = ten().batch(size_fn).create_tuple_iterator(num_epochs=2, output_numpy=True)
    next(it), next(it)
    state = it.get_state()
    it.close()
    resumed = ten().batch(size_fn).create_tuple_iterator(num_epochs=2, output_numpy=True)
    resumed.set_state(state)
    rest = [r[0].tolist() for r in resumed] + [r[0].tolist() for r in resumed]
    assert rest == epochs[0][2:] + epochs[1]
    assert "batch#2(size_fn)" in data.explain()


def test_a_callable_batch_size_that_returns_nonsense_is_named():
    data = ten().batch(lambda info: 0 if info.get_batch_num() == 2 else 2)
    with pytest.raises(ValueError, match=r"returned 0 for batch 2 of epoch 0; it must return"):
        rows_of(data)
    dropped = ten().batch(lambda info: 4, drop_remainder=True)
    assert [len(b) for b in rows_of(dropped)] == [4, 4]


def test_get_methods_on_every_node_match_mindspore():
    assert [
        ten().repeat(3).get_repeat_count(),
        ten().repeat(2).repeat(3).get_repeat_count(),
        ten().repeat(2).map(lambda x: x).get_repeat_count(),
        ten().repeat().get_repeat_count(),
        ten().get_repeat_count(),
    ] == WANT["repeat_counts"]
    assert [
        ten().batch(3).get_batch_size(),
        ten().batch(3).repeat(2).get_batch_size(),
        ten().get_batch_size(),
    ] == WANT["batch_sizes"]
    assert ten().get_class_indexing() == WANT["numpy_class_indexing"] == {}
    assert ten().num_classes() is WANT["numpy_num_classes"] is None
    mnist = ds.MnistDataset(os.path.join(FIXTURES, "mnist"))
    assert mnist.batch(2).get_class_indexing() == WANT["mnist_class_indexing"]
    assert ten().reset() is None


def test_class_indexing_is_found_through_the_ops_above_the_source(tmp_path):
    for name in ("cat", "dog"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "0.jpg").write_bytes(b"\xff\xd8\xff")
    folder = ds.ImageFolderDataset(str(tmp_path))
    assert folder.map(lambda x: x, "image").batch(1).get_class_indexing() == {"cat": 0, "dog": 1}
    assert folder.shuffle(4).num_classes() == 2


def test_output_shapes_estimate_marks_the_dimensions_that_vary():
    def ragged():
        for i in range(1, 5):
            yield np.zeros((i, 3), np.float32), np.array(i)

    assert ds.GeneratorDataset(ragged, ["a", "b"]).output_shapes() == WANT["shapes"]
    estimated = ds.GeneratorDataset(ragged, ["a", "b"]).output_shapes(estimate=True)
    assert estimated == WANT["shapes_estimated"] == [[None, 3], []]


@pytest.mark.parametrize("error", [TypeError, ValueError])
def test_map_column_order_is_refused_naming_project_as_mindspore_2_does(error):
    # MindSpore 2.10: a TypeError (tests/fixtures/ds_callbacks_config: errors.map_column_order);
    # MindSpore 2.0.0 (what the zoo was written for): a ValueError naming project
    with pytest.raises(error, match=r"map: column_order was removed.*project\(\['b'\]\)"):
        ten().map(
            lambda x: (x, x * 2), input_columns=["x"], output_columns=["a", "b"], column_order=["b"]
        )
    data = ten().map(lambda x: (x, x * 2), input_columns=["x"], output_columns=["a", "b"])
    assert rows_of(data.project(["b"])) == [2 * i for i in range(10)]


def test_map_takes_column_order_none_and_shows_kwargs_as_mindspore_2_0_does():
    """MindCV's loaders pass ``column_order=None`` when ``map``'s signature has ``**kwargs``
    (MindSpore 2.0's; 2.0.0 accepts None) and a list otherwise (1.x's): jisu must look like
    2.0 to them. Any other keyword is still refused."""
    import inspect

    assert "kwargs" in inspect.signature(ten().map).parameters
    data = ten().map(lambda x: x * 3, input_columns=["x"], column_order=None)
    assert rows_of(data) == [3 * i for i in range(10)]
    with pytest.raises(TypeError, match="unexpected keyword argument 'input_column'"):
        ten().map(lambda x: x, input_column=["x"])


def test_add_asnumpy_gives_torch_tensors_mindspores_method():
    jisu.compat.add_asnumpy()
    row = next(ten().create_tuple_iterator())
    assert isinstance(row[0], torch.Tensor)
    value = row[0].asnumpy()
    assert isinstance(value, np.ndarray) and value.tolist() == 0
    grad = torch.ones(2, requires_grad=True) * 3
    assert grad.asnumpy().tolist() == [3.0, 3.0]  # detached, as MindSpore's would be


LENS = [1, 5, 2, 7, 3, 3, 9, 1, 4, 6, 2, 8]


def sequences():
    for i, n in enumerate(LENS):
        yield np.arange(n, dtype=np.int32) + 10 * i, np.array(i, np.int32)


BUCKET_CASES = {
    "plain": dict(column_names=["seq"], bucket_boundaries=[3, 6], bucket_batch_sizes=[2, 2, 3]),
    "drop_remainder": dict(
        column_names=["seq"],
        bucket_boundaries=[3, 6],
        bucket_batch_sizes=[2, 2, 3],
        drop_remainder=True,
    ),
    "pad_info": dict(
        column_names=["seq"],
        bucket_boundaries=[3, 6],
        bucket_batch_sizes=[2, 2, 3],
        pad_info={"seq": ([10], -1)},
    ),
    "length_function": dict(
        column_names=["seq", "id"],
        bucket_boundaries=[5],
        bucket_batch_sizes=[3, 3],
        element_length_function=lambda s, i: int(i) % 7,
    ),
    "pad_to_boundary": dict(
        column_names=["seq"],
        bucket_boundaries=[3, 6, 10],
        bucket_batch_sizes=[2, 2, 3, 1],
        pad_info={"seq": ([None], -1)},
        pad_to_bucket_boundary=True,
        drop_remainder=True,
    ),
}


@pytest.mark.parametrize("case", sorted(BUCKET_CASES))
@pytest.mark.parametrize("random_access", [False, True])
def test_bucket_batch_by_length_matches_mindspore(case, random_access):
    if random_access:  # the same rows from a random-access source: the same batches
        rows = list(sequences())
        data = ds.GeneratorDataset(rows, ["seq", "id"], shuffle=False)
    else:
        data = ds.GeneratorDataset(sequences, ["seq", "id"], shuffle=False)
    data = data.bucket_batch_by_length(**BUCKET_CASES[case])
    batches = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    got = [[b[0].tolist(), b[1].tolist(), str(b[0].dtype)] for b in batches]
    want = EXPECTED["bucket"][case]
    assert [[g[0], g[1]] for g in got] == [[w[0], w[1]] for w in want]
    assert all(g[2] == "int32" for g in got) and data.get_dataset_size() == len(want)


def test_bucket_batch_by_length_resumes_and_checks_its_arguments():
    def make():
        data = ds.GeneratorDataset(sequences, ["seq", "id"], shuffle=False)
        return data.bucket_batch_by_length(["seq"], [3, 6], [2, 2, 3])

    it = make().create_tuple_iterator(num_epochs=1, output_numpy=True)
    full = [[v.tolist() for v in b] for b in it]
    it = make().create_tuple_iterator(num_epochs=1, output_numpy=True)
    next(it), next(it)
    state = it.get_state()
    it.close()
    resumed = make().create_tuple_iterator(num_epochs=1, output_numpy=True)
    resumed.set_state(state)
    assert [[v.tolist() for v in b] for b in resumed] == full[2:]
    source = ds.GeneratorDataset(sequences, ["seq", "id"], shuffle=False)
    for kwargs, error, match in [
        (dict(bucket_boundaries=[6, 3], bucket_batch_sizes=[2, 2, 3]), ValueError, "increasing"),
        (dict(bucket_boundaries=[3, 6], bucket_batch_sizes=[2, 2]), ValueError, "one element"),
        (dict(bucket_boundaries=[0, 6], bucket_batch_sizes=[2, 2, 3]), ValueError, "positive"),
    ]:
        with pytest.raises(error, match=f"bucket_batch_by_length: .*{match}"):
            source.bucket_batch_by_length(["seq"], **kwargs)
    with pytest.raises(ValueError, match="exactly one column"):
        source.bucket_batch_by_length(["seq", "id"], [3], [2, 2])


class Augment:
    """MindSpore's sync_wait example: an op whose state the training loop updates."""

    def __init__(self):
        self.loss = 0

    def preprocess(self, x):
        return x + self.loss

    def update(self, data):
        self.loss = data["loss"]


def twelve():
    for i in range(12):
        yield (np.array(i),)


@pytest.mark.parametrize(
    ("num_batch", "batch_size", "want"),
    [  # recorded from MindSpore 2.10 (the docs' example, and with num_batch=2)
        (1, 4, [[0, 1, 2, 3], [104, 105, 106, 107], [208, 209, 210, 211]]),
        (2, 2, [[0, 1], [2, 3], [204, 205], [206, 207], [408, 409], [410, 411]]),
    ],
)
def test_sync_wait_lets_rows_through_after_each_update(num_batch, batch_size, want):
    aug = Augment()
    data = ds.GeneratorDataset(twelve, ["input"], shuffle=False)
    data = data.sync_wait("policy", num_batch=num_batch, callback=aug.update)
    data = data.map(aug.preprocess, "input", num_parallel_workers=2).batch(batch_size)
    got = []
    for k, (batch,) in enumerate(data.create_tuple_iterator(num_epochs=1, output_numpy=True)):
        got.append(batch.tolist())
        if (k + 1) % num_batch == 0:
            data.sync_update("policy", data={"loss": 100 * (k + 1)})
    assert got == want


def test_a_waiting_sync_point_does_not_hang_the_iterator_and_names_are_checked():
    data = ds.GeneratorDataset(twelve, ["input"], shuffle=False).sync_wait("c").batch(3)
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert next(it)[0].tolist() == [0, 1, 2]
    it.close()  # rows wait at the point (no update came): closing stops them
    with pytest.raises(ValueError, match="sync_update: no sync_wait point named 'other'"):
        data.sync_update("other")
    with pytest.raises(RuntimeError, match="condition name 'c' already exists"):
        data.sync_wait("c")
