"""ImageFolderDataset's ``decrypt`` and ``PKSampler``, against what MindSpore 2.10 read from the
same folder (tests/fixtures/sources_parity/encrypted: PNGs whose bytes are XORed with 0x5A;
"image_folder" in expected.json, made by make_fixtures.py). Each image is one flat colour,
``10 * i + class`` (a = 0, b = 1, c = 2) for the i-th file of its class, so a pixel names its
file and class."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from tests.conftest import rows_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sources_parity"
ROOT = str(FIXTURES / "encrypted")
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())["image_folder"]
KEY = 0x5A


def decrypt(path: str) -> bytes:
    with open(path, "rb") as f:
        return bytes(b ^ KEY for b in f.read())


def test_decrypted_images_decode_to_mindspores_rows():
    calls = []

    def spy(path):
        calls.append(path)
        return decrypt(path)

    got = rows_of(ds.ImageFolderDataset(ROOT, shuffle=False, decode=True, decrypt=spy), None)
    assert got == EXPECTED["decoded"]
    files = sorted(
        os.path.join(ROOT, c, f) for c in "abc" for f in os.listdir(os.path.join(ROOT, c))
    )
    # called with the file's path for each file read, and once more for the first file when
    # the data set is built (jisu reads the first row then, to check it)
    assert calls[0] == files[0] and sorted(calls[1:]) == files


def test_without_decode_the_image_column_is_the_decrypted_bytes():
    data = ds.ImageFolderDataset(ROOT, shuffle=False, decrypt=decrypt)
    got = rows_of(data, None)
    assert [[len(x), bytes(np.asarray(x[:8], np.uint8)).hex(), lab] for x, lab in got] == [
        [n, head, label] for n, head, _, label in EXPECTED["raw"]
    ]
    raw = list(data.create_tuple_iterator(output_numpy=True, num_epochs=1))
    assert all(x.dtype == np.uint8 for x, _ in raw)


@pytest.mark.parametrize("name", ["str", "bytearray", "ndarray", "none"])
@pytest.mark.parametrize("decode", [False, True])
def test_a_decrypt_that_returns_no_bytes_fails_naming_the_file(name, decode):
    assert EXPECTED["bad_results"][f"{name} decode={decode}"][0] == "error"  # MindSpore too
    result = {
        "str": lambda p: "abc",
        "bytearray": lambda p: bytearray(decrypt(p)),
        "ndarray": lambda p: np.frombuffer(decrypt(p), np.uint8),
        "none": lambda p: None,
    }[name]
    with pytest.raises(TypeError, match=r"decrypt must return .*bytes.*a[/\\]0\.png") as info:
        # the first row is read when the data set is built: the error comes then
        ds.ImageFolderDataset(ROOT, shuffle=False, decode=decode, decrypt=result)
    assert isinstance(info.value, RuntimeError)  # MindSpore's contract: a RuntimeError


def test_a_decrypt_that_raises_keeps_its_error():
    assert EXPECTED["bad_results"]["raises decode=False"][2][0].startswith("ZeroDivisionError")
    with pytest.raises(ZeroDivisionError):
        ds.ImageFolderDataset(ROOT, decrypt=lambda p: 1 / 0)
    calls = []

    def late(path):  # fails on a later file, while iterating
        calls.append(path)
        if len(calls) > 3:
            raise ZeroDivisionError("no key for this file")
        return decrypt(path)

    data = ds.ImageFolderDataset(ROOT, shuffle=False, decrypt=late, num_parallel_workers=1)
    with pytest.raises(ZeroDivisionError, match="no key") as info:
        rows_of(data)
    assert isinstance(info.value, RuntimeError)


def test_empty_decrypted_bytes_are_a_row_or_a_decode_error():
    assert EXPECTED["bad_results"]["empty decode=False"] == ["rows", [0] * 8]
    assert rows_of(ds.ImageFolderDataset(ROOT, shuffle=False, decrypt=lambda p: b"")) == [[]] * 8
    assert EXPECTED["bad_results"]["empty decode=True"][0] == "error"
    with pytest.raises(ValueError, match=r"a[/\\]0\.png"):
        ds.ImageFolderDataset(ROOT, shuffle=False, decode=True, decrypt=lambda p: b"")


def test_decrypt_is_checked_when_built():
    assert EXPECTED["not_callable"][0] == "TypeError"
    with pytest.raises(TypeError, match=r"ImageFolderDataset: decrypt must be a callable"):
        ds.ImageFolderDataset(ROOT, decrypt=5)
    with pytest.raises(ValueError, match=r"ImageFolderDataset: decrypt .* URL dataset_dir"):
        ds.ImageFolderDataset("s3://bucket/train", decrypt=decrypt)
    with pytest.raises(ValueError, match=r"ImageFolderDataset: cache is not supported"):
        ds.ImageFolderDataset(ROOT, cache=object())


@pytest.mark.timeout(120)
def test_decrypt_runs_in_worker_processes():
    data = ds.ImageFolderDataset(
        ROOT,
        shuffle=False,
        decode=True,
        decrypt=decrypt,
        python_multiprocessing=True,
        num_parallel_workers=2,
    )
    pickle.dumps(decrypt)  # a module-level function: what worker processes need
    assert rows_of(data, None) == EXPECTED["decoded"]


@pytest.mark.timeout(60)
def test_a_fifo_named_like_an_image_is_refused_before_decrypt(tmp_path):
    (tmp_path / "a").mkdir()
    os.mkfifo(tmp_path / "a" / "x.png")
    called = []
    with pytest.raises(ValueError, match="not a regular file"):
        ds.ImageFolderDataset(str(tmp_path), decrypt=lambda p: called.append(p) or b"")
    assert called == []


# ----------------------------------------------------------------- PKSampler
@pytest.mark.parametrize(
    ("case", "kwargs"),
    [
        ("pk3", {"sampler": ds.PKSampler(3)}),
        ("pk2_ns5", {"sampler": ds.PKSampler(2, num_samples=5)}),
        ("pk3_class_indexing", {"sampler": ds.PKSampler(3), "class_indexing": {"c": 0, "a": 7}}),
    ],
)
def test_pk_sampler_gives_mindspores_classes_and_counts(case, kwargs):
    want = EXPECTED["pk"][case]
    data = ds.ImageFolderDataset(ROOT, decode=True, decrypt=decrypt, **kwargs)
    assert data.get_dataset_size() == want["size"]
    got = rows_of(data, None)
    assert [label for _, label in got] == want["labels"]
    folder_of = {label: name for name, label in data.get_class_indexing().items()}
    for image, label in got:  # each drawn image belongs to its class (with replacement)
        assert image[0][0][0] % 10 == "abc".index(folder_of[label])
    for pixel, label in zip(want["pixels"], want["labels"], strict=True):  # MindSpore's too
        assert pixel % 10 == "abc".index(folder_of[label])


def test_pk_sampler_shuffle_reorders_the_classes():
    want = EXPECTED["pk"]["pk2_shuffle"]
    assert sorted(want["labels"]) == [0, 0, 1, 1, 2, 2]
    orders = set()
    for seed in range(8):
        ds.config.set_seed(seed)
        labels = rows_of(ds.ImageFolderDataset(ROOT, sampler=ds.PKSampler(2, shuffle=True)), 1)
        assert labels[::2] == labels[1::2] and sorted(labels) == sorted(want["labels"])
        orders.add(tuple(labels[::2]))
    assert len(orders) > 1
