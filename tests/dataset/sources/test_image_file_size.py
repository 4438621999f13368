"""A cap on one image file's size, checked from ``stat`` before the file is read (issue 47,
item 15): a sparse 60 GiB ``.jpg`` (no disk used) in an image folder is refused at once, named
with the cap and how to raise it, by ``jisu convert`` and by ``ImageFolderDataset``; never a
``malloc`` of 60 GiB that names no file."""

from __future__ import annotations

import os
import time
from pathlib import Path

import fsspec
import numpy as np
import pytest
import simplejpeg

import jisu.dataset as ds
from jisu.cli import main
from jisu.dataset.record import convert as convert_module
from jisu.dataset.record.convert import convert
from jisu.dataset.sources import image_files
from jisu.dataset.sources.image_files import MAX_FILE_SIZE, file_size_cap
from jisu.dataset.sources.image_folder import ImageFolderDataset

JPEG = simplejpeg.encode_jpeg(np.zeros((8, 8, 3), np.uint8), quality=90)
SMALL = JPEG + bytes(2048 - len(JPEG))  # 2 KiB: an 8x8 JPEG and zeros after its end


def folder(root: Path, huge: bool = True) -> Path:
    """``a/small.jpg`` (2 KiB) and, with ``huge``, ``b/zz.jpg``: sparse, 60 GiB."""
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "small.jpg").write_bytes(SMALL)
    (root / "b" / "ok.jpg").write_bytes(SMALL)
    if huge:
        with open(root / "b" / "zz.jpg", "wb") as f:
            f.truncate(60 << 30)
    return root


def rows(data) -> list:
    return [r[0] for r in data.create_tuple_iterator(output_numpy=True)]


def test_the_default_cap_is_one_gib_and_sizes_read_as_documented():
    assert MAX_FILE_SIZE == 1 << 30
    cases = {None: 1 << 30, 5: 5, "4GiB": 4 << 30, "500M": 500 << 20, "2g": 2 << 30, "1 KiB": 1024}
    for value, cap in cases.items():
        assert file_size_cap(value, "op") == cap
    for bad in ["0", "-1", "x", "4GiBs", "12i", 0, -3]:
        with pytest.raises(ValueError, match=r"op: max_file_size must be a positive number"):
            file_size_cap(bad, "op")
    for bad in [True, 1.5, [1]]:
        with pytest.raises(TypeError, match=r"op: max_file_size must be an int"):
            file_size_cap(bad, "op")


def test_jisu_convert_refuses_a_sparse_60_gib_jpg_at_once(tmp_path, capsys):
    src = folder(tmp_path / "images")
    (tmp_path / "out").mkdir()
    start = time.monotonic()
    assert main(["convert", str(src), str(tmp_path / "out" / "data")]) == 1
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert f"'{src / 'b' / 'zz.jpg'}' is 64424509440 bytes (60.0 GiB)" in err
    assert "over the cap of 1073741824 bytes on one image file" in err
    assert "add --max-file-size SIZE" in err
    assert os.listdir(tmp_path / "out") == []


@pytest.mark.parametrize("reencode", [False, True])
def test_convert_takes_max_file_size(tmp_path, reencode):
    src = folder(tmp_path / "images", huge=False)
    options = {"max_size": 64} if reencode else {}
    with pytest.raises(ValueError, match=r"small.jpg' is 2048 bytes .* over the cap of 1024"):
        convert(str(src), str(tmp_path / "r1"), max_file_size="1KiB", progress=False, **options)
    assert not list(tmp_path.glob("r1*"))
    convert(str(src), str(tmp_path / "r2"), max_file_size=2048, progress=False, **options)
    assert len(rows(ds.RecordDataset(str(tmp_path / "r2"), shuffle=False))) == 2


def test_the_cli_flag_raises_the_cap(tmp_path, capsys):
    src = folder(tmp_path / "images", huge=False)
    assert main(["convert", str(src), str(tmp_path / "r1"), "--max-file-size", "1000"]) == 1
    assert "over the cap of 1000 bytes" in capsys.readouterr().err
    assert main(["convert", str(src), str(tmp_path / "r2"), "--max-file-size", "2KiB"]) == 0
    npy = tmp_path / "a.npy"
    np.save(npy, np.arange(3))
    assert main(["convert", str(npy), str(tmp_path / "r3"), "--max-file-size", "2KiB"]) == 1
    assert "max_file_size applies to image folders only" in capsys.readouterr().err


def test_a_file_that_grows_past_the_cap_while_converted_is_refused(tmp_path, monkeypatch):
    src = folder(tmp_path / "images", huge=False)
    monkeypatch.setattr(convert_module, "check_sizes", lambda paths, cap: None)  # grew since
    with pytest.raises(ValueError, match=r"small.jpg' is 2048 bytes"):
        convert(str(src), str(tmp_path / "r"), max_file_size=2000, progress=False)


@pytest.mark.parametrize("decode", [False, True])
def test_image_folder_dataset_refuses_a_sparse_60_gib_jpg_at_once(tmp_path, decode):
    src = folder(tmp_path / "images")
    data = ImageFolderDataset(str(src), shuffle=False, decode=decode, num_parallel_workers=1)
    start = time.monotonic()
    with pytest.raises(ValueError) as info:
        rows(data)
    assert time.monotonic() - start < 10
    text = str(info.value)
    assert f"'{src / 'b' / 'zz.jpg'}' is 64424509440 bytes" in text
    assert "over the cap of 1073741824 bytes" in text
    assert "pass ImageFolderDataset(..., max_file_size=)" in text


def test_image_folder_dataset_takes_max_file_size(tmp_path, monkeypatch):
    src = folder(tmp_path / "images", huge=False)
    data = ImageFolderDataset(str(src), shuffle=False, max_file_size=4096)
    assert [bytes(r) for r in rows(data)] == [SMALL, SMALL]
    with pytest.raises(ValueError, match=r"small.jpg' is 2048 bytes .* over the cap of 1000"):
        rows(ImageFolderDataset(str(src), shuffle=False, max_file_size=1000))
    with pytest.raises(ValueError, match=r"ImageFolderDataset: max_file_size must be a positive"):
        ImageFolderDataset(str(src), max_file_size="big")
    monkeypatch.setattr(image_files, "MAX_FILE_SIZE", 1000)  # the process-wide default
    with pytest.raises(ValueError, match=r"over the cap of 1000"):
        rows(ImageFolderDataset(str(src), shuffle=False))


def test_a_decrypted_folder_checks_the_file_before_decrypt(tmp_path):
    src = folder(tmp_path / "images")
    called = []

    def decrypt(path: str) -> bytes:
        called.append(path)
        return Path(path).read_bytes()[:4096]

    data = ImageFolderDataset(str(src), shuffle=False, decrypt=decrypt)
    with pytest.raises(ValueError, match=r"zz.jpg' is 64424509440 bytes"):
        rows(data)
    assert not any(p.endswith("zz.jpg") for p in called)


def test_a_remote_folder_requests_at_most_the_cap(tmp_path):
    fs = fsspec.filesystem("memory")
    root = "memory://jisu-cap-test/images"
    fs.pipe({f"{root}/a/small.jpg": SMALL, f"{root}/b/big.jpg": SMALL * 3})
    try:
        data = ImageFolderDataset(root, shuffle=False, max_file_size=4096)
        with pytest.raises(ValueError, match=r"big.jpg' is 4097 bytes .* over the cap of 4096"):
            rows(data)  # 4097: the bytes asked for, one over the cap, not the whole file
        assert len(rows(ImageFolderDataset(root, shuffle=False, max_file_size=8192))) == 2
    finally:
        fs.rm("/jisu-cap-test", recursive=True)
