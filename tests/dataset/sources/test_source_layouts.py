"""MNIST / CIFAR-10 / CIFAR-100 read the files present, found and ordered as MindSpore 2.10
finds them (tests/fixtures/sources_parity/expected.json, "layouts", made by make_fixtures.py).

Each layout is rebuilt here with the fixture's file names and small files whose records carry
their file's position as label, so the runs of labels read name the files read. MindSpore's
CIFAR files hold 10,000 records (too large to keep); jisu reads files of any whole number of
records (a kept difference), so only the file names and order are compared for CIFAR, and the
row counts against what the test wrote."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds
from tests.conftest import rows_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sources_parity"
LAYOUTS = json.loads((FIXTURES / "expected.json").read_text())["layouts"]
USAGES = ["None", "train", "test", "all"]
CASES = [(cls, name) for cls, layouts in LAYOUTS.items() for name in layouts]


def write_idx(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack(f">I{array.ndim}I", 0x800 | array.ndim, *array.shape))
        f.write(array.astype(np.uint8).tobytes())


def build(folder: Path, cls: str, files: list[str]) -> dict[str, int]:
    """The layout's files (as the fixture script wrote them, CIFAR files with 2 + k records);
    returns the rows each data file holds."""
    rows = {}
    for k, name in enumerate(files):
        path = folder / name
        if cls == "MnistDataset":
            if "images" in name:  # k + 1 images; its labels file comes next
                write_idx(path, np.full((k + 1, 28, 28), k))
                rows[name] = k + 1
            elif "labels" in name:
                write_idx(path, np.full((k,), k - 1))
            else:
                path.write_bytes(b"")
        else:
            label_bytes = 2 if cls == "Cifar100Dataset" else 1
            records = np.zeros((2 + k, label_bytes + 3072), np.uint8)
            records[:, :label_bytes] = k
            records.tofile(path)
            rows[name] = 2 + k
    return rows


def runs(labels: list[int], files: list[str]) -> list[list]:
    out: list[list] = []
    for label in labels:
        if out and out[-1][0] == files[label]:
            out[-1][1] += 1
        else:
            out.append([files[label], 1])
    return out


@pytest.mark.parametrize(("cls", "layout"), CASES)
def test_files_read_and_their_order_match_mindspore(tmp_path, cls, layout):
    spec = LAYOUTS[cls][layout]
    rows = build(tmp_path, cls, spec["files"])
    source = getattr(ds, cls)
    for usage in USAGES:
        want = spec["usage"][usage]
        arg = None if usage == "None" else usage
        if cls == "Cifar100Dataset" and layout == "other_bin" and usage in ("None", "all"):
            # kept on purpose: MindSpore's "all" fails on a .bin file named neither train nor
            # test; jisu leaves it out, as CIFAR-10 does, and reads the test file
            assert want == "error"
            want = [["test.bin", 10_000]]
        if want == "error":
            with pytest.raises(ValueError, match=rf"{cls}: .*usage='{arg or 'all'}'"):
                source(str(tmp_path), usage=arg, shuffle=False)
            continue
        data = source(str(tmp_path), usage=arg, shuffle=False)
        got = rows_of(data, 1)
        got_runs = runs(got, spec["files"])
        assert [name for name, _ in got_runs] == [name for name, _ in want]
        assert [n for _, n in got_runs] == [rows[name] for name, _ in want]
        if cls == "MnistDataset":  # tiny files: MindSpore's counts are the same
            assert got_runs == want
        assert data.get_dataset_size() == len(got)


def test_a_partial_folder_still_reads_whole_files_of_any_size(tmp_path):
    """jisu reads every record of a CIFAR file (MindSpore: the first 10,000, failing on fewer)."""
    records = np.arange(5 * 3073, dtype=np.int64).astype(np.uint8).reshape(5, 3073)
    records.tofile(tmp_path / "data_batch_4.bin")
    got = rows_of(ds.Cifar10Dataset(str(tmp_path), usage="train", shuffle=False), None)
    assert [label for _, label in got] == records[:, 0].tolist()
    want = records[:, 1:].reshape(5, 3, 32, 32).transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(np.array([image for image, _ in got]), want)


def test_a_folder_named_like_a_cifar_file_is_refused_naming_it(tmp_path):
    (tmp_path / "data_batch_9.bin").mkdir()  # MindSpore fails on it too
    with pytest.raises(ValueError, match=r"data_batch_9\.bin' is not a regular file"):
        ds.Cifar10Dataset(str(tmp_path))


def test_mnist_images_without_labels_name_both_lists(tmp_path):
    write_idx(tmp_path / "train-images-idx3-ubyte", np.zeros((2, 28, 28)))
    with pytest.raises(ValueError, match=r"1 images file\(s\) but 0 labels file\(s\)"):
        ds.MnistDataset(str(tmp_path), usage="train")
