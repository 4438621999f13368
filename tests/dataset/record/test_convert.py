"""Conversion: image folders, NumPy arrays, MindRecord and any pipeline into record shards."""

from __future__ import annotations

import os
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
import simplejpeg
from hypothesis import given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.cli import main
from jisu.dataset import vision
from tests.conftest import rows_of
from tests.dataset.engine.test_skip_mode import FifoWithWriter

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
    # image and label only by default: what Model's rule (inputs, then the label) expects
    assert data.get_col_names() == ["image", "label"]
    rows = [(image.tobytes(), int(label)) for image, label in data.create_tuple_iterator(
        num_epochs=1, output_numpy=True
    )]  # fmt: skip
    assert rows == [files[name] for name in sorted(files)]  # written in sorted file order
    decoded = data.map(vision.Decode(), "image")
    shapes = sorted(tuple(r[0].shape) for r in decoded.create_tuple_iterator(output_numpy=True))
    assert shapes == sorted([(40, 60, 3), (41, 60, 3), (42, 60, 3)] * 2)


@pytest.mark.parametrize("reencode", [False, True], ids=["bytes-as-stored", "reencoded"])
def test_file_names_column_is_opt_in(tmp_path, image_folder, reencode):
    root, files = image_folder
    options = {"max_size": 100} if reencode else {}
    ds.record.convert.convert(
        str(root), str(tmp_path / "named.rec"), file_names=True, progress=False, **options
    )
    data = ds.RecordDataset(str(tmp_path / "named.rec"), shuffle=False)
    assert data.get_col_names() == ["image", "label", "file_name"]
    names = []
    for image, label, name in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
        raw, expected_label = files[str(name)]
        assert int(label) == expected_label
        assert image.tobytes() == raw or reencode
        names.append(str(name))
    assert names == sorted(files)


def test_file_names_needs_an_image_folder(tmp_path, capsys):
    np.savez(tmp_path / "arrays.npz", x=np.arange(4))
    with pytest.raises(ValueError, match="file_names=True applies to image folders only"):
        ds.record.convert.convert(
            str(tmp_path / "arrays.npz"), str(tmp_path / "a.rec"), file_names=True
        )
    args = ["convert", str(tmp_path / "arrays.npz"), str(tmp_path / "a.rec"), "--file-names"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--file-names applies to image folders only" in err and len(err.splitlines()) == 2


@pytest.fixture(scope="module")
def folder_of_480(tmp_path_factory):
    """480 tiny JPEGs in 3 classes; image ``i`` is two flat grey 8x8 blocks, (i % 20) * 12
    over (i // 20) * 10, which survive JPEG re-encoding (see :func:`index_of`)."""
    root = tmp_path_factory.mktemp("many") / "images"
    files = {}
    for i in range(480):
        name = f"c{i % 3}/{i:03d}.jpg"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        pixels = np.zeros((16, 8, 3), np.uint8)
        pixels[:8], pixels[8:] = (i % 20) * 12, (i // 20) * 10
        (root / name).write_bytes(simplejpeg.encode_jpeg(pixels, quality=95, colorspace="RGB"))
        files[name] = ((root / name).read_bytes(), i % 3)
    return root, files


def index_of(encoded: bytes) -> int:
    """The index that :func:`folder_of_480` drew into an image."""
    image = simplejpeg.decode_jpeg(encoded)
    return round(image[:8].mean() / 12) + 20 * round(image[8:].mean() / 10)


def shard_rows(path: Path, shards: int) -> list[int]:
    """Rows per shard, counted by pyarrow's own reader (not jisu's)."""
    import pyarrow.ipc

    return [pyarrow.ipc.open_file(str(path) + str(k)).read_all().num_rows for k in range(shards)]


@pytest.mark.parametrize("shards", [2, 4])
@pytest.mark.parametrize("reencode", [False, True], ids=["bytes-as-stored", "reencoded"])
def test_shards_get_every_row_evenly(tmp_path, folder_of_480, shards, reencode):
    """480 images used to land in shard 0 (one block of up to 1,024 rows), leaving a
    file-level shuffle nothing to shuffle."""
    root, files = folder_of_480
    options = {"max_size": 16, "quality": 95} if reencode else {}
    path = tmp_path / "many.rec"
    ds.record.convert.convert(str(root), str(path), shards=shards, progress=False, **options)
    counts = shard_rows(path, shards)
    assert min(counts) > 0 and max(counts) - min(counts) <= 1 and sum(counts) == 480
    data = ds.RecordDataset(str(path), shuffle=False)
    rows = [(image.tobytes(), int(label)) for image, label in data.create_tuple_iterator(
        num_epochs=1, output_numpy=True
    )]  # fmt: skip
    expected = [files[name] for name in sorted(files)]
    if reencode:  # new bytes: the labels, in order, and 480 distinct images
        assert [label for _, label in rows] == [label for _, label in expected]
        assert [index_of(image) for image, _ in rows] == [index_of(raw) for raw, _ in expected]
        assert sorted(index_of(image) for image, _ in rows) == list(range(480))
    else:  # every row exactly once, in written (sorted file) order
        assert rows == expected
    shuffled = ds.RecordDataset(str(path), shuffle=ds.Shuffle.FILES)
    assert sorted(rows_of(shuffled, 1)) == sorted(label for _, label in expected)


@given(
    rows=st.integers(0, 20_000),
    shards=st.integers(1, 16),
    largest=st.integers(1, 1024),
)
@settings(max_examples=300, deadline=None)
def test_balanced_blocks_deal_rows_evenly(rows, shards, largest):
    """Checked against the reader's layout (block_layout): every shard gets a fair share,
    within one row for small data sets, within 1 % of a shard for large ones."""
    from jisu.dataset.record.reader import block_layout

    block = ds.record.convert.balanced_block_rows(rows, shards, largest)
    assert 1 <= block <= largest
    counts = [sum(sizes) for sizes in block_layout(rows, block, shards)]
    assert ds.record.convert.dealt_rows(rows, block, shards) == counts
    assert sum(counts) == rows
    assert max(counts) - min(counts) <= max(1, rows // shards // 100)
    if rows >= shards:
        assert min(counts) > 0


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
    assert main(["convert", str(root), str(tmp_path / "cli.rec")]) == 1
    err = capsys.readouterr().err.splitlines()
    # the file that exists is named: with 1 shard the data set's file is cli.rec, which the
    # 2-shard run did not write, but its manifest is there
    assert len(err) == 2 and "cli.rec.manifest.json' already exists; add --overwrite" in err[0]
    assert "overwrite=True" not in err[0] and "Traceback" not in "".join(err)
    assert main(["convert", str(root), str(tmp_path / "cli.rec"), "--overwrite"]) == 0


def test_cli_convert_errors_are_short_and_use_flag_names(tmp_path, image_folder, capsys):
    root, _ = image_folder
    assert main(["convert", str(tmp_path / "missing"), str(tmp_path / "x.rec")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "missing' is not an image folder" in err[0]
    assert err[0].startswith("jisu convert: error: ") and "--debug" in err[1]
    for bad in (["--shards", "0"], ["--quality", "101"], ["--workers", "two"]):
        with pytest.raises(SystemExit) as exit_:
            main(["convert", str(root), str(tmp_path / "y.rec"), *bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 2 and err[0].startswith(f"jisu convert: error: argument {bad[0]}: ")
    # --debug (or JISU_DEBUG=1) lets the error through, traceback and all
    with pytest.raises(FileNotFoundError):
        main(["convert", str(tmp_path / "missing"), str(tmp_path / "x.rec"), "--debug"])


def test_cli_convert_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "rows are dealt evenly to all of them (default: 1)" in text
    assert "--file-names" in text and "--overwrite" in text


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
