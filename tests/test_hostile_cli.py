"""The ``jisu`` command under hostile input: doctor targets that return the wrong thing,
``.npz`` decompression bombs and lying ``.npy`` headers, record labels that would build a
network of gigabytes, and image folders whose symbolic links lead out of them."""

from __future__ import annotations

import io
import os
import re
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib

import numpy as np
import pytest
import simplejpeg

import jisu.dataset as ds
from jisu import job
from jisu.cli import main
from jisu.dataset.record import array_files
from jisu.dataset.record.writer import FileWriter
from jisu.dataset.sources.image_folder import files_outside

# ------------------------------------------------------------------------------ doctor

DOCTOR_TARGETS = textwrap.dedent(
    """
    import numpy as np
    import torch
    from torch import nn
    import jisu
    import jisu.dataset as ds

    def rows():
        return ds.NumpySlicesDataset({"x": np.zeros((16, 4), np.float32),
                                      "y": np.zeros(16, np.int64)}, shuffle=False).batch(4)

    def model():
        net = nn.Linear(4, 2)
        return jisu.Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))

    def answer():
        return 42

    def nothing():
        return None

    def empty():
        return ds.NumpySlicesDataset(np.arange(8, dtype=np.float32)).filter(lambda x: False)

    def train_answer():
        return 42

    def train_triple():
        return model(), rows(), 3

    def train_module():
        return nn.Linear(4, 2), rows()

    def train_generator():
        return model(), (batch for batch in [(np.zeros((4, 4), np.float32), np.zeros(4))])

    def train_nothing():
        return model(), []

    def never_called():
        raise AssertionError("the doctor measured before checking where the report goes")
    """
)


@pytest.fixture
def targets(tmp_path):
    path = tmp_path / "targets.py"
    path.write_text(DOCTOR_TARGETS)
    return path


def doctor(capsys, targets, flag: str, function: str, report: str | None = None) -> str:
    """Run ``jisu doctor`` on a function of the targets file; returns stderr, after checking
    that the run failed (status 1) with a one-line error and wrote no report."""
    report = report or str(targets.parent / "report.html")
    status = main(["doctor", flag, f"{targets}:{function}", "--report", report])
    out, err = capsys.readouterr()
    assert status == 1, out + err
    assert "verdict" not in out and not os.path.isfile(report)
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("jisu doctor: error: "), err
    return lines[0]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "function, returned",
    [("answer", "42 (of type int)"), ("nothing", "None (of type NoneType)")],
)
def test_doctor_pipeline_must_return_a_dataset(capsys, targets, function, returned):
    """It exited 0 with the verdict "nothing measured"."""
    error = doctor(capsys, targets, "--pipeline", function)
    assert f"--pipeline {targets}:{function} must return a jisu dataset" in error
    assert error.endswith(f"it returned {returned}")


@pytest.mark.timeout(60)
def test_doctor_refuses_to_judge_an_empty_pipeline(capsys, targets):
    error = doctor(capsys, targets, "--pipeline", "empty")
    assert "the pipeline gave no rows (its epoch is empty): nothing to measure" in error


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "function, message",
    [
        ("train_answer", "must return (model, dataset); it returned 42 (of type int)"),
        ("train_triple", "must return (model, dataset); it returned (<jisu"),
        ("train_module", "with a jisu.Model (Model(network, loss_fn, optimizer)); its model is "
                         "Linear(in_features=4, out_features=2, bias=True) (of type Linear)"),
        ("train_nothing", "the training ran no step (its dataset gave no batch): nothing to "
                          "measure"),
        ("train_generator", "not a generator, which runs out after one epoch); its dataset is "
                            "<generator object"),
    ],
)  # fmt: skip
def test_doctor_train_must_return_a_model_and_a_reiterable_dataset(
    capsys, targets, function, message
):
    """A bare int failed with "cannot unpack non-iterable int object", a torch module with
    "Module.train() got an unexpected keyword argument"; a generator runs out after the first
    of the three profiled epochs."""
    assert message in doctor(capsys, targets, "--train", function)


@pytest.mark.timeout(60)
def test_doctor_checks_the_report_path_before_measuring(capsys, targets, tmp_path):
    missing = str(tmp_path / "no-such-folder" / "report.html")
    error = doctor(capsys, targets, "--pipeline", "never_called", report=missing)
    assert (
        f"--report '{missing}': its folder '{tmp_path / 'no-such-folder'}' does not exist" in error
    )
    error = doctor(capsys, targets, "--pipeline", "never_called", report=str(tmp_path))
    assert f"--report '{tmp_path}' is a folder: give the report's file name" in error


# ------------------------------------------------------------------ convert: .npz bombs


def deflated_zeros_npz(path, nbytes: int, member: str = "x.npy") -> None:
    """A valid ``.npz`` holding one deflated uint8 array of ``nbytes`` zeros, written in a
    moment: deflate blocks of zeros that each end with a full flush compress to the same
    bytes, so one block is compressed and repeated (3 GB become 2.9 MB)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": (nbytes,)}
    )
    head = header.getvalue()
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)]
    block = 1 << 24
    full, rest = divmod(nbytes, block)
    if full:
        one = packer.compress(bytes(block)) + packer.flush(zlib.Z_FULL_FLUSH)
        parts.append(one * full)
    parts.append(packer.compress(bytes(rest)) + packer.flush(zlib.Z_FINISH))
    data = b"".join(parts)
    crc = zlib.crc32(head)
    zeros = bytes(1 << 26)
    for _ in range(nbytes // len(zeros)):
        crc = zlib.crc32(zeros, crc)
    crc = zlib.crc32(bytes(nbytes % len(zeros)), crc)
    name = member.encode()
    size = len(head) + nbytes
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(data), size,
                        len(name), 0)  # fmt: skip
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc, len(data),
                          size, len(name), 0, 0, 0, 0, 0, 0)  # fmt: skip
    offset = len(local) + len(name) + len(data)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, len(central) + len(name), offset, 0)
    with open(path, "wb") as f:
        f.write(local + name + data + central + name + end)


def test_the_bomb_builder_makes_a_real_archive(tmp_path):
    """A small one, read by NumPy itself: the archive of the next test is a real bomb."""
    path = tmp_path / "small.npz"
    deflated_zeros_npz(path, (1 << 24) * 2 + 123)
    with np.load(path) as archive:
        array = archive["x"]
    assert array.shape == ((1 << 24) * 2 + 123,) and not array.any()


LIMITED_CONVERT = textwrap.dedent(
    """
    import resource, sys
    import numpy as np
    import jisu, torch
    from jisu.cli import main

    def address_space():
        with open("/proc/self/status") as f:
            line = next(line for line in f if line.startswith("VmSize:"))
        return int(line.split()[1]) * 1024

    limit = address_space() + (2 << 30)  # 2 GiB over what the imports took
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
    try:  # the limit holds: the array the bomb holds does not fit under it
        np.ones(3 * 10**9, np.uint8)
        print("control: allocated")
    except MemoryError:
        print("control: MemoryError")
    sys.exit(main(["convert", sys.argv[1], sys.argv[2]]))
    """
)


@pytest.mark.timeout(300)
def test_convert_refuses_an_npz_bomb_under_an_address_space_limit(tmp_path):
    """2.9 MB deflating to one 3 GB array took 6.7 GB of memory; now the member's sizes are
    read from the zip and the .npy headers and refused before anything is inflated."""
    bomb = tmp_path / "bomb.npz"
    deflated_zeros_npz(bomb, 3 * 10**9)
    assert os.path.getsize(bomb) < 3 << 20
    run = subprocess.run(
        [sys.executable, "-c", LIMITED_CONVERT, str(bomb), str(tmp_path / "out.rec")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert "control: MemoryError" in run.stdout, run.stdout + run.stderr
    assert run.returncode == 1, run.stdout + run.stderr
    first = run.stderr.splitlines()[0]
    assert re.search(
        rf"'{re.escape(str(bomb))}': member 'x.npy' would inflate \d+ bytes to 3000000128 "
        rf"\(\d+x, over the {array_files.NPZ_MAX_RATIO}x allowed",
        first,
    ), run.stderr
    assert not list(tmp_path.glob("out.rec*"))


def npz_with(path, members: dict[str, bytes], method=zipfile.ZIP_STORED) -> str:
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return str(path)


def npy_bytes(array: np.ndarray, shape=None) -> bytes:
    """``array`` as .npy bytes, its header declaring ``shape`` when given (a lie)."""
    out = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(array)
    if shape is not None:
        header["shape"] = shape
    np.lib.format.write_array_header_1_0(out, header)
    out.write(array.tobytes())
    return out.getvalue()


def converted(path) -> list:
    ds.record.convert.convert(str(path), str(path) + ".rec", progress=False)
    data = ds.RecordDataset(str(path) + ".rec", shuffle=False)
    return [r[0].tolist() for r in data.create_tuple_iterator(output_numpy=True)]


@pytest.mark.parametrize(
    "members, message",
    [
        ({"x.npy": npy_bytes(np.zeros(4, np.int64), shape=(10**12,))},
         r"member 'x.npy': its header declares \(1000000000000,\) int64 \(8000000000000 bytes\); "
         "it holds 32"),
        ({"x.npy": npy_bytes(np.zeros(4, np.int64), shape=(2**62, 2**62))}, "its header declares"),
        ({"x.npy": b"\x93NUMPY\x01\x00\x10\x00{'descr': 'q'}"}, "member 'x.npy': not a readable"),
        ({"x.npy": b"not an array"}, "member 'x.npy': not a readable .npy array"),
        ({"x.npy": npy_bytes(np.zeros(2)), "notes.txt": b"hello"},
         "member 'notes.txt' is not a .npy array"),
    ],
)  # fmt: skip
def test_convert_refuses_lying_or_foreign_npz_members(tmp_path, members, message):
    path = npz_with(tmp_path / "bad.npz", members)
    with pytest.raises(ds.MalformedFileError, match=message) as info:
        converted(path)
    assert info.value.path == path


def test_convert_never_unpickles(tmp_path):
    """``np.save`` pickles an array of objects; reading one back runs the pickle's code."""
    objects = np.array([{"a": 1}, None], dtype=object)
    np.savez(tmp_path / "objects.npz", x=objects)
    with pytest.raises(ds.MalformedFileError, match=r"holds Python objects .*refuses to unpickle"):
        converted(tmp_path / "objects.npz")
    np.save(tmp_path / "objects.npy", objects)
    with pytest.raises(ds.MalformedFileError, match="holds Python objects"):
        converted(tmp_path / "objects.npy")


def test_convert_checks_a_npy_header_against_the_file_size(tmp_path):
    path = tmp_path / "lie.npy"
    path.write_bytes(npy_bytes(np.arange(4, dtype=np.float64), shape=(10**11, 10)))
    with pytest.raises(ds.MalformedFileError, match=r"declares \(100000000000, 10\) float64"):
        converted(path)
    path.write_bytes(npy_bytes(np.zeros(0, np.float32)))
    with pytest.raises(ValueError, match=r"an array of shape \(0,\) has no rows"):
        converted(path)
    path.write_bytes(npy_bytes(np.float32(3.0)))
    with pytest.raises(ValueError, match=r"an array of shape \(\) has no rows"):
        converted(path)


def test_convert_caps_what_compressed_arrays_inflate_to(tmp_path, monkeypatch):
    """The caps apply to one member and to the archive as a whole (many members of modest
    size add up); stored arrays are as large on disk as in memory and pass."""
    monkeypatch.setattr(array_files, "NPZ_MAX_INFLATED_BYTES", 1 << 20)
    monkeypatch.setattr(array_files, "NPZ_RATIO_FREE_BYTES", 1 << 16)
    big = npy_bytes(np.zeros((256, 1024)))  # 2 MiB of zeros in 256 rows
    path = npz_with(tmp_path / "big.npz", {"x.npy": big}, zipfile.ZIP_DEFLATED)
    cap = rf"member 'x.npy' would inflate to {len(big)} bytes, over the 1048576-byte cap"
    with pytest.raises(ValueError, match=cap):
        converted(path)
    # each 40 KB of zeros is under the ratio-free size; together they are a bomb
    parts = {f"c{k}.npy": npy_bytes(np.zeros(5000)) for k in range(3)}
    path = npz_with(tmp_path / "parts.npz", parts, zipfile.ZIP_DEFLATED)
    with pytest.raises(ValueError, match=r"its compressed arrays would inflate \d+ bytes to "
                                         r"120384 \(the largest: member 'c\d.npy'"):  # fmt: skip
        converted(path)
    path = npz_with(tmp_path / "stored.npz", {"x.npy": big, "y.npy": big})
    assert len(converted(path)) == 256


def test_real_arrays_still_convert(tmp_path):
    np.savez_compressed(tmp_path / "c.npz", x=np.arange(6.0).reshape(3, 2), y=np.arange(3))
    assert converted(tmp_path / "c.npz") == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    np.save(tmp_path / "f.npy", np.asfortranarray(np.arange(6, dtype=np.int32).reshape(3, 2)))
    assert converted(tmp_path / "f.npy") == [[0, 1], [2, 3], [4, 5]]


# ------------------------------------------------------------- train: implausible labels


def label_records(path, labels, field: dict | None = None) -> str:
    image = simplejpeg.encode_jpeg(np.zeros((8, 8, 3), np.uint8), colorspace="RGB")
    writer = FileWriter(str(path))
    writer.add_schema({"image": {"type": "bytes"}, "label": field or {"type": "int64"}})
    writer.write_raw_data([{"image": image, "label": label} for label in labels])
    writer.commit()
    return str(path)


@pytest.fixture
def no_network(monkeypatch):
    """Fails a test whose job would build a network (the refusal must come first)."""

    def refuse(classes):
        raise AssertionError(f"a network for {classes} classes was built")

    monkeypatch.setattr(job, "small_cnn", refuse)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "labels, field, row, shown",
    [
        ([0, 1] * 5 + [5_000_000], None, 10, "5000000"),
        ([0, 1, -1, 1], None, 2, "-1"),
        ([0, 1, 100_000], None, 2, "100000"),
        ([0.0, 1.0, 1.5], {"type": "float32"}, 2, "1.5"),
        ([0.0, float("nan")], {"type": "float64"}, 1, "nan"),
    ],
)
def test_train_refuses_labels_that_are_not_class_ids(
    tmp_path, capsys, no_network, labels, field, row, shown
):
    """One label of 5,000,000 built Linear(64, 5e6): 8.6 GB."""
    data = label_records(tmp_path / "lab.rec", labels, field)
    assert main(["train", "--data", data, "--epochs", "1", "--no-baseline"]) == 1
    error = capsys.readouterr().err.splitlines()[0]
    assert error == (
        f"jisu train: error: ValueError: --data '{data}': row {row} has label "
        f"{shown}, which is not a class id: labels must be integers from 0 to "
        f"{job.MAX_CLASSES - 1} (MAX_CLASSES = {job.MAX_CLASSES})"
    )


@pytest.mark.timeout(120)
def test_train_refuses_a_label_field_that_holds_no_class_ids(tmp_path, no_network):
    data = label_records(tmp_path / "s.rec", ["cat"], {"type": "string"})
    with pytest.raises(ValueError, match="its label field is string; it must hold one integer"):
        job.num_classes(data)
    data = label_records(tmp_path / "a.rec", [[0, 1]], {"type": "int64", "shape": [2]})
    with pytest.raises(ValueError, match=r"its label field is int64 of shape \[2\]"):
        job.num_classes(data)


def test_sparse_plausible_labels_keep_their_ids(tmp_path):
    """A subset of a large label set keeps its class ids: the count is the largest + 1."""
    assert job.num_classes(label_records(tmp_path / "ok.rec", [3, 0, 99_999])) == 100_000
    assert job.num_classes(label_records(tmp_path / "f.rec", [2.0], {"type": "float32"})) == 3


# ------------------------------------------------------------ convert: symbolic links


@pytest.fixture
def linked_folder(tmp_path):
    """images/{cat,dog}/ with real JPEGs, a file outside the folder and links to it."""
    root = tmp_path / "images"
    jpeg = simplejpeg.encode_jpeg(np.zeros((8, 8, 3), np.uint8), colorspace="RGB")
    for name in ("cat", "dog"):
        (root / name).mkdir(parents=True)
        (root / name / "0.jpg").write_bytes(jpeg)
    secret = tmp_path / "outside" / "shadow.jpg"
    secret.parent.mkdir()
    secret.write_bytes(b"secret bytes that are not the folder's")
    return root, secret


def test_convert_refuses_a_file_linked_from_outside_the_folder(tmp_path, linked_folder, capsys):
    root, secret = linked_folder
    (root / "cat" / "secret.jpg").symlink_to(secret)
    (root / "dog" / "again.jpg").symlink_to(root / "cat" / "0.jpg")  # inside: fine
    out = str(tmp_path / "out.rec")
    assert main(["convert", str(root), out]) == 1
    error = capsys.readouterr().err.splitlines()[0]
    assert error == (
        f"jisu convert: error: ValueError: '{root}/cat/secret.jpg' resolves to '{secret}', "
        f"outside the image folder '{root}', through a symbolic link; convert packs only files "
        "inside its source folder: pass --follow-links (follow_links=True) to pack the files "
        "links lead to"
    )
    assert not list(tmp_path.glob("out.rec*"))
    for options in ({}, {"max_size": 4}):  # bytes as stored, and re-encoded in a pipeline
        with pytest.raises(ValueError, match=r"secret\.jpg' resolves to"):
            ds.record.convert.convert(str(root), out, progress=False, **options)
    assert main(["convert", str(root), out, "--follow-links", "--file-names"]) == 0
    data = ds.RecordDataset(out, shuffle=False).create_tuple_iterator(output_numpy=True)
    rows = {str(r[2]): r[0].tobytes() for r in data}
    assert rows["cat/secret.jpg"] == secret.read_bytes()  # packed, as asked
    assert rows["dog/again.jpg"] == (root / "cat" / "0.jpg").read_bytes()


def test_a_linked_class_folder_counts_every_file_outside(tmp_path, linked_folder):
    root, secret = linked_folder
    (root / "bird").symlink_to(secret.parent, target_is_directory=True)
    (secret.parent / "more.jpg").write_bytes(b"more")
    with pytest.raises(ValueError, match=r"bird/more.jpg' resolves to .* symbolic link \(and 1 "
                                         r"more file\(s\)\)"):  # fmt: skip
        ds.record.convert.convert(str(root), str(tmp_path / "o.rec"), progress=False)
    # a folder that is itself a link is resolved first: its own files are inside it
    link = tmp_path / "link-to-images"
    link.symlink_to(root / "cat", target_is_directory=True)
    assert files_outside(str(tmp_path / "link-to-images"), [str(link / "0.jpg")]) == []


def test_follow_links_applies_to_image_folders_only(tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.arange(3))
    assert main(["convert", str(tmp_path / "a.npy"), str(tmp_path / "o"), "--follow-links"]) == 2
    assert "--follow-links applies to image folders only" in capsys.readouterr().err
