"""Conversion: image folders, NumPy arrays, MindRecord and any pipeline into record shards."""

from __future__ import annotations

import os
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
import simplejpeg

import jisu.dataset as ds
from jisu.cli import main
from jisu.dataset import vision
from tests.conftest import rows_of
from tests.dataset.test_skip_mode import FifoWithWriter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mindrecord"


@pytest.fixture
def image_folder(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "images"
    files = {}
    for label, name in enumerate(["cat", "dog"]):
        (root / name).mkdir(parents=True)
        for k in range(3):
            image = rng.integers(0, 256, (40 + k, 60, 3), dtype=np.uint8)
            if k == 2:
                path = root / name / f"{k}.png"
                cv2.imwrite(str(path), image[..., ::-1])
            else:
                path = root / name / f"{k}.jpg"
                path.write_bytes(simplejpeg.encode_jpeg(image, quality=90, colorspace="RGB"))
            files[f"{name}/{path.name}"] = (path.read_bytes(), label)
        (root / name / "notes.txt").write_text("not an image")
    return root, files


def test_image_folder_keeps_the_bytes_and_labels(tmp_path, image_folder):
    root, files = image_folder
    summary = ds.record.convert.convert(
        str(root), str(tmp_path / "img.rec"), shards=2, workers=2, progress=False
    )
    assert summary["rows"] == 6 and len(summary["files"]) == 2
    data = ds.RecordDataset(str(tmp_path / "img.rec"), shuffle=False)
    assert data.get_col_names() == ["image", "label", "file_name"]
    for image, label, name in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        raw, expected_label = files[str(name)]
        assert image.tobytes() == raw and int(label) == expected_label
    decoded = data.map(vision.Decode(), "image")
    shapes = sorted(tuple(r[0].shape) for r in decoded.create_tuple_iterator(output_numpy=True))
    assert shapes == sorted([(40, 60, 3), (41, 60, 3), (42, 60, 3)] * 2)


def test_reencoding_shrinks_to_max_size(tmp_path, image_folder):
    root, _ = image_folder
    ds.record.convert.convert(
        str(root), str(tmp_path / "small.rec"), max_size=30, quality=80, progress=False
    )
    data = ds.RecordDataset(str(tmp_path / "small.rec"), shuffle=False).map(
        vision.Decode(), "image"
    )
    for image, *_ in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        assert max(image.shape[:2]) == 30 and image.shape[1] == 30


def test_numpy_and_mindrecord_sources(tmp_path):
    np.savez(
        tmp_path / "arrays.npz",
        x=np.arange(12, dtype=np.float32).reshape(4, 3),
        y=np.array([1, 2, 3, 4], np.int64),
    )
    ds.record.convert.convert(
        str(tmp_path / "arrays.npz"), str(tmp_path / "np.rec"), progress=False
    )
    data = ds.RecordDataset(str(tmp_path / "np.rec"), shuffle=False)
    assert rows_of(data, None) == [
        [[0.0, 1.0, 2.0], 1],
        [[3.0, 4.0, 5.0], 2],
        [[6.0, 7.0, 8.0], 3],
        [[9.0, 10.0, 11.0], 4],
    ]
    ds.record.convert.convert(
        str(FIXTURES / "raw_only.mindrecord0"), str(tmp_path / "mr.rec"), shards=3, progress=False
    )
    converted = rows_of(ds.RecordDataset(str(tmp_path / "mr.rec"), shuffle=False), None)
    original = rows_of(ds.MindDataset(str(FIXTURES / "raw_only.mindrecord0"), shuffle=False), None)
    assert converted == original


def test_save_writes_any_pipeline(tmp_path):
    data = ds.NumpySlicesDataset(
        {
            "image": np.arange(2 * 8 * 8 * 3, dtype=np.uint8).reshape(2, 8, 8, 3).repeat(5, axis=0),
            "name": [f"n{i}" for i in range(10)],
        },
        shuffle=False,
    )
    data = data.map(vision.RandomHorizontalFlip(0.5), "image")
    expected = rows_of(data, None)
    summary = data.save(str(tmp_path / "saved.rec"), num_files=2)
    assert summary["rows"] == 10
    back = ds.RecordDataset(str(tmp_path / "saved.rec"), shuffle=False)
    assert back.output_types()[0] == np.uint8 and back.output_shapes()[0] == [8, 8, 3]
    assert rows_of(back, None) == expected


def test_interrupted_conversion_leaves_nothing(tmp_path):
    def gen():
        for i in range(1000):
            if i == 700:
                raise KeyboardInterrupt
            yield (np.full(16, i, np.float32),)

    with pytest.raises(KeyboardInterrupt):
        ds.GeneratorDataset(gen, ["x"]).save(str(tmp_path / "partial.rec"))
    assert os.listdir(tmp_path) == []


def test_cli_convert(tmp_path, image_folder, capsys):
    root, _ = image_folder
    assert main(["convert", str(root), str(tmp_path / "cli.rec"), "--shards", "2"]) == 0
    assert "wrote 6 rows" in capsys.readouterr().out
    with pytest.raises(FileExistsError):
        main(["convert", str(root), str(tmp_path / "cli.rec")])
    assert main(["convert", str(root), str(tmp_path / "cli.rec"), "--overwrite"]) == 0


def test_save_keeps_rows_whose_first_axis_varies(tmp_path):
    def gen():
        for i in range(6):
            yield np.arange(i + 1, dtype=np.int16), np.frombuffer(bytes(range(i)), np.uint8)

    data = ds.GeneratorDataset(gen, ["ids", "blob"])
    data.save(str(tmp_path / "ragged.rec"))
    back = ds.RecordDataset(str(tmp_path / "ragged.rec"), shuffle=False)
    assert rows_of(back, None) == [[list(range(i + 1)), list(range(i))] for i in range(6)]
    assert back.output_types()[0] == np.int16


@pytest.mark.parametrize("reencode", [False, True], ids=["bytes-as-stored", "reencoded"])
def test_fifo_in_an_image_folder_fails_the_conversion_naming_it(tmp_path, image_folder, reencode):
    """Opened blocking, a FIFO named like an image would hang the conversion forever."""
    root, _ = image_folder
    options = {"max_size": 30} if reencode else {}
    with FifoWithWriter(root / "cat" / "3.jpg") as fifo:
        refused = re.escape(f"'{fifo}': is not a regular file")
        # bytes as stored: read by convert itself; reencoded: read in a pipeline (RuntimeError)
        with pytest.raises(ds.MalformedFileError, match=refused) as info:
            ds.record.convert.convert(
                str(root), str(tmp_path / "out.rec"), workers=2, progress=False, **options
            )
    assert info.value.path == str(fifo)
    assert not list(tmp_path.glob("out.rec*"))  # all or nothing: no data set was published
