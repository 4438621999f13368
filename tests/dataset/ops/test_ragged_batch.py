"""``batch(..., ragged=...)``: variable-length rows batched unpadded, as RaggedArray."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset import RaggedArray
from jisu.dataset.engine.processes.shm import pack, unpack
from jisu.train.feeder import as_tensors

LENGTHS = [3, 0, 5, 2, 7, 1, 4]


def _rows(lengths=LENGTHS, trailing=()):
    return [
        (np.arange(n * int(np.prod(trailing)), dtype=np.int16).reshape(n, *trailing) + 100 * i)
        for i, n in enumerate(lengths)
    ]


def _source(rows, **kwargs):
    return ds.GeneratorDataset(
        lambda: ((r, np.int32(i)) for i, r in enumerate(rows)), ["data", "label"], **kwargs
    )


def _expected_batches(rows, size):
    """Each batch's values and offsets, computed from the rows directly."""
    out = []
    for begin in range(0, len(rows), size):
        group = rows[begin : begin + size]
        offsets = np.concatenate([[0], np.cumsum([len(r) for r in group])])
        out.append((np.concatenate(group), offsets))
    return out


def test_rows_of_different_lengths_become_values_and_offsets():
    rows = _rows()
    data = _source(rows).batch(3, ragged="data")
    batches = list(data.create_dict_iterator(output_numpy=True, num_epochs=1))
    expected = _expected_batches(rows, 3)
    assert len(batches) == len(expected) == 3
    for batch, (values, offsets) in zip(batches, expected):
        assert isinstance(batch["data"], RaggedArray)
        np.testing.assert_array_equal(batch["data"].values, values)
        np.testing.assert_array_equal(batch["data"].offsets, offsets)
        assert batch["data"].dtype == np.int16
        assert isinstance(batch["label"], np.ndarray)  # the other columns stack as before
    assert [len(b["data"]) for b in batches] == [3, 3, 1]
    flat = [row for b in batches for row in b["data"]]
    for got, want in zip(flat, rows, strict=True):
        np.testing.assert_array_equal(got, want)


def test_torch_output_is_a_jagged_nested_tensor_sharing_the_values():
    rows = _rows()
    data = _source(rows).batch(4, ragged=["data"])
    got = []
    for batch in data.create_tuple_iterator(num_epochs=1):
        column = batch[0]
        assert column.is_nested and column.layout == torch.jagged
        assert column.dtype == torch.int16
        got.extend(t.numpy() for t in column.unbind())
    for g, want in zip(got, rows, strict=True):
        np.testing.assert_array_equal(g, want)


def test_rows_with_trailing_dimensions_keep_them():
    rows = _rows([2, 0, 3, 1], trailing=(4,))  # boxes per image: (n, 4)
    batch = next(_source(rows).batch(4, ragged="data").create_tuple_iterator(output_numpy=True))
    column = batch[0]
    assert column.values.shape == (6, 4)
    assert column.shape == (4, None, 4) and column.ndim == 3
    np.testing.assert_array_equal(column.lengths, [2, 0, 3, 1])
    nested = next(_source(rows).batch(4, ragged="data").create_tuple_iterator())[0]
    assert [tuple(t.shape) for t in nested.unbind()] == [(2, 4), (0, 4), (3, 4), (1, 4)]


def test_python_bytes_rows_batch_as_uint8_without_losing_trailing_zeros():
    blobs = [b"\xff\xd8abc\x00\x00", b"", b"\x00", b"xyz" * 50]
    data = ds.GeneratorDataset(lambda: ((b,) for b in blobs), ["raw"]).batch(3, ragged="raw")
    got = [bytes(r) for batch in data.create_tuple_iterator(output_numpy=True) for r in batch[0]]
    assert got == blobs  # np.bytes_ would strip the trailing NULs


@pytest.mark.parametrize("workers", [1, 2])
def test_ragged_batches_cross_from_worker_processes_intact(workers):
    rows = _rows(list(range(40)) * 3)
    data = _source(rows).map(
        lambda x: x * 2,
        input_columns="data",
        num_parallel_workers=workers,
        python_multiprocessing=True,
    )
    data = data.batch(5, ragged="data", num_parallel_workers=workers, python_multiprocessing=True)
    expected = _expected_batches([r * 2 for r in rows], 5)
    batches = list(data.create_tuple_iterator(output_numpy=True, num_epochs=1))
    assert len(batches) == len(expected)
    for (column, _), (values, offsets) in zip(batches, expected):
        np.testing.assert_array_equal(column.values, values)
        np.testing.assert_array_equal(column.offsets, offsets)


def test_shared_memory_layout_round_trip():
    ragged = RaggedArray.from_rows(_rows())
    result = (ragged, np.arange(7, dtype=np.int32))
    _, need = pack(result, None)
    buffer = bytearray(need)
    layout, _ = pack(result, memoryview(buffer))
    import mmap

    mapping = mmap.mmap(-1, need)
    mapping[:] = bytes(buffer)
    released = []
    back = unpack(layout, mapping, lambda: released.append(True))
    assert back[0] == ragged and isinstance(back[0], RaggedArray)
    np.testing.assert_array_equal(back[1], np.arange(7))


def test_raw_records_stream_in_ragged_batches(tmp_path):
    path = str(tmp_path / "blobs.rec")
    writer = ds.FileWriter(path)
    writer.add_schema({"blob": {"type": "bytes"}, "label": {"type": "int64"}})
    blobs = [os.urandom(n) for n in (5, 0, 300, 17, 4096, 1)]
    writer.write_raw_data([{"blob": b, "label": k} for k, b in enumerate(blobs)])
    writer.commit()
    data = ds.RecordDataset(path, shuffle=False).batch(4, ragged="blob")
    got = [
        bytes(r) for batch in data.create_dict_iterator(output_numpy=True) for r in batch["blob"]
    ]
    assert got == blobs


def test_image_folder_raw_bytes_batch(tmp_path):
    payloads = {}
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        for k in range(3):
            payload = b"\xff\xd8\xff\xe0" + os.urandom(10 + 7 * k + len(label))
            (tmp_path / label / f"{k}.jpg").write_bytes(payload)
            payloads[(label, k)] = payload
    data = ds.ImageFolderDataset(str(tmp_path), decode=False, shuffle=False).batch(
        4, ragged="image"
    )
    got = [
        bytes(r) for batch in data.create_dict_iterator(output_numpy=True) for r in batch["image"]
    ]
    assert sorted(got) == sorted(payloads.values())


def test_per_batch_map_output_can_be_ragged():
    def split_words(text, info):
        return ([np.array(list(t.item().split()), dtype="U8") for t in text],)

    texts = ["a b c", "d", "e f", "g h i j"]
    data = ds.GeneratorDataset(lambda: ((np.array(t),) for t in texts), ["text"]).batch(
        2, per_batch_map=split_words, input_columns="text", output_columns="words", ragged="words"
    )
    batches = list(data.create_tuple_iterator(output_numpy=True))
    words = [list(r) for b in batches for r in b[0]]
    assert words == [t.split() for t in texts]
    assert isinstance(batches[0][0], RaggedArray)  # strings stay NumPy (no torch strings)
    assert isinstance(next(data.create_tuple_iterator())[0], RaggedArray)


def test_output_shapes_report_the_ragged_dimension_as_none():
    data = _source(_rows()).batch(2, ragged="data")
    assert data.output_shapes()[0] == [2, None]
    assert data.output_shapes(estimate=True)[0] == [None, None]


def test_the_training_feeder_takes_a_ragged_column():
    batch = (RaggedArray.from_rows(_rows()), np.arange(7))
    tensors = as_tensors(batch)
    assert tensors[0].is_nested and tensors[1].shape == (7,)


# ---------------------------------------------------------------------- errors, at build time
def test_unknown_ragged_column_fails_when_built():
    with pytest.raises(ValueError, match=r"batch: unknown column\(s\) \['nope'\] in ragged"):
        _source(_rows()).batch(2, ragged="nope")


def test_ragged_and_padded_at_once_is_refused():
    with pytest.raises(ValueError, match=r"both ragged and padded"):
        _source(_rows()).batch(2, ragged="data", pad_info={"data": (None, 0)})


def test_bad_ragged_argument_type():
    with pytest.raises(TypeError, match="batch: ragged must be a str or a list of str"):
        _source(_rows()).batch(2, ragged=3)


def test_scalar_rows_cannot_be_ragged():
    data = _source(_rows()).batch(2, ragged=["data", "label"])
    with pytest.raises(ValueError, match=r"column 'label' is ragged but a row is a scalar"):
        list(data.create_tuple_iterator(output_numpy=True))


def test_rows_differing_past_the_first_dimension_are_refused():
    rows = [np.zeros((2, 3)), np.zeros((2, 4))]
    data = ds.GeneratorDataset(lambda: ((r,) for r in rows), ["x"]).batch(2, ragged="x")
    with pytest.raises(ValueError, match=r"only the first dimension may differ"):
        list(data.create_tuple_iterator(output_numpy=True))


def test_unbatchable_rows_suggest_ragged():
    data = _source(_rows()).batch(3)
    with pytest.raises(ValueError, match=r"ragged=\['data'\]"):
        list(data.create_tuple_iterator(output_numpy=True))


# ---------------------------------------------------------------------- RaggedArray itself
def test_indexing_slicing_and_padding():
    rows = _rows()
    ragged = RaggedArray.from_rows(rows)
    np.testing.assert_array_equal(ragged[-1], rows[-1])
    np.testing.assert_array_equal(ragged[2], rows[2])
    with pytest.raises(IndexError):
        ragged[len(rows)]
    part = ragged[2:5]
    assert [list(r) for r in part] == [list(r) for r in rows[2:5]]
    assert [list(r) for r in ragged[::3]] == [list(r) for r in rows[::3]]
    padded, lengths = ragged.to_padded(pad_value=-1)
    assert padded.shape == (len(rows), max(LENGTHS))
    for row, want, n in zip(padded, rows, lengths, strict=True):
        np.testing.assert_array_equal(row[:n], want)
        assert (row[n:] == -1).all()
    with pytest.raises(ValueError, match="longer than length=2"):
        ragged.to_padded(length=2)


def test_pickles_and_refuses_a_silent_array_conversion():
    ragged = RaggedArray.from_rows(_rows())
    assert pickle.loads(pickle.dumps(ragged)) == ragged
    with pytest.raises(TypeError, match="no single array shape"):
        np.asarray(ragged)


@pytest.mark.parametrize(
    "values, offsets, message",
    [
        (np.arange(5), np.array([0, 2, 4]), "end at len"),
        (np.arange(5), np.array([1, 5]), "start at 0"),
        (np.arange(5), np.array([0, 3, 2, 5]), "never decrease"),
        (np.arange(5), np.array([0.0, 5.0]), "integer"),
        (np.array(3), np.array([0, 1]), "at least one dimension"),
    ],
)
def test_inconsistent_offsets_are_refused(values, offsets, message):
    with pytest.raises(ValueError, match=message):
        RaggedArray(values, offsets)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=12),
    st.sampled_from([(), (2,), (1, 3)]),
)
def test_from_rows_then_rows_is_the_identity(lengths, trailing):
    rows = _rows(lengths, trailing)
    ragged = RaggedArray.from_rows(rows)
    assert len(ragged) == len(rows)
    assert ragged.lengths.tolist() == lengths
    for got, want in zip(ragged, rows, strict=True):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    back = [t.numpy() for t in ragged.to_torch().unbind()]
    for got, want in zip(back, rows, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_ragged_column_is_batched_once_with_a_clear_error_after():
    data = _source(_rows()).batch(2, ragged="data")
    for again in (data.batch(2), data.batch(2, ragged="data")):
        with pytest.raises(ValueError, match=r"column 'data' holds ragged batches"):
            list(again.create_tuple_iterator(output_numpy=True))


def test_unsigned_offsets_are_checked_as_numbers_not_wrapped():
    with pytest.raises(ValueError, match="never decrease"):
        RaggedArray(np.arange(3), np.array([0, 3, 1, 3], dtype=np.uint64))


def test_empty_selections():
    ragged = RaggedArray.from_rows(_rows())
    for empty in (ragged[5:0:2], ragged[1:1:2], ragged[3:3], RaggedArray.from_rows([])):
        assert len(empty) == 0 and empty.lengths.tolist() == []


def test_a_torch_iterator_over_a_ragged_batch_warms_torch_nested_early(monkeypatch):
    """torch's first jagged tensor imports ~500 modules (~1 s): started when the iterator is
    made, on a thread, not on the first batch; not at all for NumPy outputs or no ragged."""
    calls = []
    monkeypatch.setattr(RaggedArray, "warm_torch", staticmethod(lambda: calls.append(1)))
    rows = [np.zeros(k % 3 + 1, np.uint8) for k in range(8)]
    data = ds.GeneratorDataset(lambda: ((r,) for r in rows), ["x"]).batch(4, ragged=["x"])
    data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert calls == []
    data.create_tuple_iterator(num_epochs=1)
    assert calls == [1]
    data.map(lambda x: x, "x").create_dict_iterator(num_epochs=1)  # below other nodes too
    assert calls == [1, 1]
    padded = ds.GeneratorDataset(lambda: ((r,) for r in rows), ["x"])
    padded.batch(4, pad_info={"x": (None, 0)}).create_tuple_iterator(num_epochs=1)
    assert calls == [1, 1]
