"""Inputs MindSpore 2.10 runs that jisu used to refuse (issue 51), each against MindSpore's
recorded answer in tests/fixtures/ms_input_refusals/expected.json: a JPEG missing its end
marker, ``Decode`` of a one-element bytes array, ``RandomRotation(Inter.ANTIALIAS)`` after
``Decode(to_pil=True)`` in a ``Compose``, ``PadToSize(offset=())``, ``sync_wait('')``, a
sampler with only ``__getitem__``/``__len__``, ``CSVDataset(field_delim=None)``,
``Dataset.save`` as MindSpore's test_save_op.py calls it, and the config setters' answer to
``True`` (a TypeError, as MindSpore)."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

import jisu.dataset as ds
import jisu.dataset.transforms as transforms
import jisu.dataset.vision as vision
from jisu.dataset.vision import Inter

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_input_refusals")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)
BUILTIN = {"ValueError": ValueError, "TypeError": TypeError, "RuntimeError": RuntimeError}


def digest(image) -> str:
    """The recorded form of an image: SHA-256 of its bytes, shape and dtype."""
    array = np.ascontiguousarray(np.asarray(image))
    return hashlib.sha256(array.tobytes()).hexdigest() + f":{array.shape}:{array.dtype}"


def jpeg(name: str) -> bytes:
    with open(os.path.join(FIXTURES, f"{name}.jpg"), "rb") as f:
        return f.read()


def check_outcome(expected, run) -> None:
    """``run()`` gives MindSpore's value, or raises an instance of MindSpore's class."""
    if isinstance(expected, dict) and "error" in expected:
        with pytest.raises(BUILTIN[expected["error"]]):
            run()
    else:
        assert run() == expected


# ------------------------------------------------------------------ JPEG cuts


@pytest.mark.parametrize("case", sorted(EXPECTED["jpeg_cuts"]))
@pytest.mark.parametrize("to_pil", [False, True])
def test_jpeg_cut_decodes_or_is_refused_as_in_mindspore(case, to_pil):
    """A sequential JPEG missing its end marker (or half of it) decodes to the complete
    file's image with MindSpore's C++ decoder, and is refused by its Pillow one; a cut inside
    the image data, or a progressive JPEG without its marker, is refused by both."""
    expected = EXPECTED["jpeg_cuts"][case]
    data = jpeg(case.split("/")[0])[: expected["bytes"]]
    answer = expected["decode_to_pil" if to_pil else "decode"]
    run = lambda: digest(vision.Decode(to_pil=to_pil)(np.frombuffer(data, np.uint8)))  # noqa: E731
    if isinstance(answer, dict) and "crash" in answer:  # MindSpore's process dies: jisu refuses
        with pytest.raises(ValueError, match="cannot decode"):
            run()
        return
    check_outcome(answer, run)


def test_jpeg_without_end_marker_in_an_image_folder(tmp_path):
    """ImageFolderDataset(decode=True) decodes as MindSpore's C++ decoder does."""
    data = jpeg("sequential")
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "a.jpg").write_bytes(data[:-2])
    pipe = ds.ImageFolderDataset(str(tmp_path), decode=True, shuffle=False)
    (row,) = list(pipe.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert digest(row["image"]) == EXPECTED["jpeg_cuts"]["sequential/no_end_marker"]["decode"]


# ------------------------------------------------------------------ Decode of [bytes]


def test_decode_of_a_one_element_bytes_array():
    expected = EXPECTED["decode_one_bytes_array"]
    data = jpeg("sequential")
    assert digest(vision.Decode()(np.array([data]))) == expected["eager"]
    assert digest(vision.Decode(to_pil=True)(np.array([data]))) == expected["eager_to_pil"]


@pytest.mark.parametrize("kind", ["array", "list"])
@pytest.mark.parametrize("to_pil", [False, True])
def test_decode_of_a_source_yielding_bytes_in_a_list(kind, to_pil):
    """MindSpore's test_read_image_decode_op: a source yields ``[f.read()]`` or
    ``np.array([f.read()])``."""
    data = jpeg("sequential")

    class Images:
        def __getitem__(self, index):
            return (np.array([data]) if kind == "array" else [data]), np.array([index])

        def __len__(self):
            return 2

    ops = [vision.Decode(to_pil=to_pil)] + [vision.ToTensor(output_type=np.int32)] * to_pil
    pipe = ds.GeneratorDataset(Images(), ["data", "label"], shuffle=False)
    pipe = pipe.map(operations=ops, input_columns=["data"])
    got = [digest(r[0]) for r in pipe.create_tuple_iterator(output_numpy=True)]
    assert got == EXPECTED["decode_one_bytes_array"][f"pipeline_{kind}_to_pil_{to_pil}"]


def test_decode_still_refuses_arrays_of_several_bytes_values():
    data = jpeg("sequential")
    with pytest.raises(TypeError, match="encoded image bytes"):
        vision.Decode()(np.array([data, data]))


# ------------------------------------------------------------------ vision ops


def test_random_rotation_antialias_after_pil_decode_in_compose():
    """MindSpore's test_random_rotation_op_py_antialias: the PIL image goes on to Pillow."""
    data = jpeg("sequential")
    pipe = ds.GeneratorDataset(
        lambda: iter([(np.frombuffer(data, np.uint8),)] * 3), ["image"], shuffle=False
    )
    rotate = vision.RandomRotation((90, 90), expand=True, resample=Inter.ANTIALIAS)
    compose = transforms.Compose([vision.Decode(True), rotate, vision.ToTensor()])
    pipe = pipe.map(operations=compose, input_columns=["image"])
    got = [digest(r["image"]) for r in pipe.create_dict_iterator(output_numpy=True)]
    assert got == EXPECTED["rotation_antialias_in_compose"]["rows"]


def test_random_rotation_antialias_still_refuses_arrays():
    with pytest.raises(TypeError, match="PIL image"):
        vision.RandomRotation(90, resample=Inter.ANTIALIAS)(np.zeros((4, 4, 3), np.uint8))


@pytest.mark.parametrize("name", ["empty_tuple", "empty_list", "none"])
def test_pad_to_size_with_an_empty_offset_centres_the_image(name):
    offset = {"empty_tuple": (), "empty_list": [], "none": None}[name]
    image = np.zeros((4, 6, 3), np.uint8)
    image[0, 0] = 7
    result = vision.PadToSize((8, 9), offset)(image)
    got = [list(result.shape), np.argwhere(result[..., 0] == 7)[0].tolist()]
    assert got == EXPECTED["pad_to_size_offset"][name]["eager"]
    pipe = ds.NumpySlicesDataset({"image": image[None]}, shuffle=False)
    pipe = pipe.map([vision.PadToSize((8, 9), offset)], ["image"])
    result = next(pipe.create_dict_iterator(output_numpy=True))["image"]
    got = [list(result.shape), np.argwhere(result[..., 0] == 7)[0].tolist()]
    assert got == EXPECTED["pad_to_size_offset"][name]["pipeline"]


# ------------------------------------------------------------------ pipeline


def test_sync_wait_with_an_empty_condition_name():
    pipe = ds.GeneratorDataset(lambda: ((np.array([i]),) for i in range(30)), ["input"])
    pipe = pipe.sync_wait(condition_name="", num_batch=1)
    pipe = pipe.map(input_columns=["input"], operations=[lambda x: x]).batch(10)
    batches = 0
    for _ in pipe.create_dict_iterator(num_epochs=1, output_numpy=True):
        batches += 1
        pipe.sync_update(condition_name="", data={"loss": batches})
    assert batches == EXPECTED["sync_wait_empty_name"]["batches"]


@pytest.mark.parametrize("name", sorted(EXPECTED["getitem_samplers"]))
def test_a_sampler_with_only_getitem_and_len(name):
    """MindSpore's test_sampler_with_getitem_method: indices read anew every epoch."""
    indices = {
        "a_permutation": [3, 8, 7, 2, 0, 9, 11, 4, 5, 1, 6, 10],
        "fewer": [0, 2, 4, 6, 8],
        "more_with_repeats": [3, 4, 3, 2, 0, 11, 5, 5, 5, 9, 1, 11, 11, 11, 11, 8],
    }[name]

    class IndexSampler:
        def __getitem__(self, index):
            return indices[index]

        def __len__(self):
            return len(indices)

    pipe = ds.NumpySlicesDataset(
        list("abcdefghijkl"), column_names=["data"], sampler=IndexSampler()
    )
    iterator = pipe.create_tuple_iterator(num_epochs=3, output_numpy=True)
    epochs = [[str(r[0]) for r in iterator] for _ in range(3)]
    assert {"size": pipe.get_dataset_size(), "epochs": epochs} == EXPECTED["getitem_samplers"][name]


def test_csv_field_delim_none_is_the_default_comma(tmp_path):
    expected = EXPECTED["csv_field_delim_none"]
    path = tmp_path / "rows.csv"
    path.write_text(expected["csv"])
    pipe = ds.CSVDataset(str(path), field_delim=None, column_defaults=["0", 0, 0.0, "0"],
                         column_names=["1", "2", "3", "4"], shuffle=False)  # fmt: skip
    rows = pipe.repeat(2).skip(2).create_dict_iterator(num_epochs=1, output_numpy=True)
    assert [{k: v.item() for k, v in row.items()} for row in rows] == expected["rows"]


@pytest.mark.parametrize("name", sorted(EXPECTED["config_bool"]))
def test_config_setters_refuse_a_bool_with_mindspores_type(name):
    getter = getattr(ds.config, name.replace("set_", "get_"))
    before = getter()
    check_outcome(EXPECTED["config_bool"][name], lambda: getattr(ds.config, name)(True))
    assert getter() == before


# ------------------------------------------------------------------ save


def clear(path: str) -> None:
    """What MindSpore's test_save_op.py removes between saves: the file and its ``.db``."""
    for name in (path, path + ".db"):
        if os.path.exists(name):
            os.remove(name)


def test_save_again_after_the_mindspore_way_of_deleting(tmp_path):
    """test_save_op.py saves to one name again and again, removing ``x`` and ``x.db`` in
    between; the manifest jisu leaves then describes no data and must not block the save."""
    path = str(tmp_path / "auto.mindrecord")
    for dtype in ("uint16", "uint32", "int16", "uint8"):
        clear(path)
        rows = lambda dtype=dtype: ((np.array([i], dtype=dtype),) for i in range(64))  # noqa: E731
        ds.GeneratorDataset(rows, ["data"], shuffle=False).batch(4).repeat(3).save(path)
        read = ds.MindDataset(dataset_files=path, shuffle=False)
        items = [r["data"] for r in read.create_dict_iterator(num_epochs=1, output_numpy=True)]
        expected = EXPECTED["save"][f"repeat_batch_{dtype}"]
        assert len(items) == expected["rows"]
        assert list(items[0].shape) == expected["shape"]
        assert items[-1].tolist() == expected["last"]
        if dtype.startswith("uint") and dtype != "uint8":  # widened as MindSpore widens them
            assert str(items[0].dtype) == expected["dtype"]


def test_save_keeps_a_manifest_whose_data_is_there(tmp_path):
    path = str(tmp_path / "kept.rec")
    ds.NumpySlicesDataset(np.arange(3), shuffle=False).save(path)
    os.remove(path + ".db") if os.path.exists(path + ".db") else None
    with pytest.raises(FileExistsError):
        ds.NumpySlicesDataset(np.arange(3), shuffle=False).save(path)
    read = ds.MindDataset(dataset_files=path, shuffle=False)
    assert [int(r[0]) for r in read.create_tuple_iterator(output_numpy=True)] == [0, 1, 2]


def test_save_refuses_rows_whose_inner_shape_changes(tmp_path):
    """MindSpore refuses them; jisu used to write them reshaped: (5, 2) read back as (10, 1)."""
    rows = lambda: ((np.arange(5 * (1 + (i >= 5))).reshape(5, -1),) for i in range(10))  # noqa: E731
    save = lambda: ds.GeneratorDataset(rows, ["data"], shuffle=False).save(str(tmp_path / "x"))  # noqa: E731
    check_outcome(EXPECTED["save"]["inner_shape_changes"], save)
    with pytest.raises(ValueError, match="only the first axis may vary"):
        save()


def test_save_file_type_is_mindrecord_only(tmp_path):
    pipe = ds.GeneratorDataset(lambda: ((np.array([i]),) for i in range(3)), ["data"])
    check_outcome(
        EXPECTED["save"]["file_type_tfrecord"],
        lambda: pipe.save(str(tmp_path / "t"), 1, "tfrecord"),
    )
    pipe.save(str(tmp_path / "m"), 1, "mindrecord")
