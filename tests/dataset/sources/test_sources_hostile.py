"""The file sources under hostile input (issue 26): links out of a data set's folder, CSV
quotes never closed and absurd widths, ImageFolder trees too deep or too long for the
system, idx headers whose shapes overflow, COCO files that would pad to gigabytes.

The memory recipes run in a child process under an address-space limit
(:func:`run_limited`): a regression fails with a MemoryError there instead of eating the
machine. The fuzzers are in ``test_sources_fuzz.py``.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record.validate import MalformedFileError
from jisu.dataset.sources import coco as coco_module
from jisu.dataset.sources import csv as csv_module
from jisu.dataset.sources import image_files as image_files_module
from jisu.dataset.sources.coco import CocoDataset, PaddedRows
from jisu.dataset.sources.csv import CSVDataset
from jisu.dataset.sources.image_folder import ImageFolderDataset, files_outside
from jisu.dataset.sources.voc import VOCDataset
from tests.conftest import rows_of

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
JPEG = b"\xff\xd8\xff\xe0" + bytes(16)  # the start of a JPEG: enough for decode=False
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="needs /proc and RLIMIT_AS"
)


# ---------------------------------------------------------------------------- helpers
def write_coco(folder, annotations, images=({"id": 1, "file_name": "a.jpg"},), categories=()):
    """A COCO folder: the images named by ``images`` (JPEG-like bytes) and ``ann.json``."""
    root = folder / "coco"
    root.mkdir(exist_ok=True)
    for image in images:
        path = root / image["file_name"]
        if not path.exists() and not path.is_symlink():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(JPEG)
    content = {"images": list(images), "annotations": annotations, "categories": list(categories)}
    annotation_file = root / "ann.json"
    annotation_file.write_text(json.dumps(content))
    return str(root), str(annotation_file)


def write_voc(folder, ids=("000001", "000002")):
    """A VOC folder for task "Detection": one cat per image."""
    root = folder / "voc"
    for sub in ("ImageSets/Main", "JPEGImages", "Annotations", "SegmentationClass"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "ImageSets" / "Main" / "train.txt").write_text("\n".join(ids) + "\n")
    box = "<bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>6</ymax></bndbox>"
    for image_id in ids:
        xml = f"<annotation><object><name>cat</name>{box}</object></annotation>"
        (root / "Annotations" / f"{image_id}.xml").write_text(xml)
        (root / "JPEGImages" / f"{image_id}.jpg").write_bytes(JPEG)
    return root


def outside_file(tmp_path, name="secret.jpg", content=b"not yours"):
    """A file outside every data set folder of the test."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    path = elsewhere / name
    path.write_bytes(content)
    return path


# ---------------------------------------------------------------------------- links: ImageFolder
def test_image_folder_follows_links_and_lists_those_that_lead_out(tmp_path):
    secret = outside_file(tmp_path)
    root = tmp_path / "images"
    (root / "cat").mkdir(parents=True)
    (root / "dog").mkdir()
    (root / "cat" / "a.jpg").write_bytes(JPEG)
    (root / "cat" / "secret.jpg").symlink_to(secret)  # a subset built from links: allowed
    (root / "dog" / "same.jpg").symlink_to(root / "cat" / "a.jpg")  # a link that stays inside
    (root / "dog" / "gone.jpg").symlink_to(tmp_path / "elsewhere" / "missing.jpg")  # dangling
    data = ImageFolderDataset(str(root), shuffle=False)
    # the rule for ImageFolder: links are followed (the file is served) ...
    images = [bytes(image) for image in rows_of(data.project(["image"]).take(2))]
    assert images == [JPEG, b"not yours"]
    # ... and the files that resolve outside the folder are listed, for `jisu convert`
    assert data.files_outside_folder() == [
        (str(root / "cat" / "secret.jpg"), str(secret)),
        (str(root / "dog" / "gone.jpg"), str(tmp_path / "elsewhere" / "missing.jpg")),
    ]


def test_image_folder_root_and_class_folders_may_be_links(tmp_path):
    real = tmp_path / "real"
    (real / "cat").mkdir(parents=True)
    (real / "cat" / "a.jpg").write_bytes(JPEG)
    shared = tmp_path / "shared_dogs"
    shared.mkdir()
    (shared / "b.jpg").write_bytes(JPEG)
    (real / "dog").symlink_to(shared)  # a class folder that is a link out
    root = tmp_path / "link_to_real"
    root.symlink_to(real)  # the root itself a link: its real path is the folder
    data = ImageFolderDataset(str(root), shuffle=False)
    assert data.get_dataset_size() == 2
    assert data.files_outside_folder() == [(str(root / "dog" / "b.jpg"), str(shared / "b.jpg"))]
    assert files_outside(str(root), [str(root / "cat" / "a.jpg")]) == []


# ---------------------------------------------------------------------------- links: COCO, VOC
def test_coco_file_name_through_a_link_out_is_refused_naming_file_and_link(tmp_path):
    secret = outside_file(tmp_path, "passwd")
    root, annotation_file = write_coco(
        tmp_path,
        [{"image_id": 1, "caption": "ok"}, {"image_id": 2, "caption": "leak"}],
        images=[{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "etc/passwd"}],
    )
    os.remove(os.path.join(root, "etc", "passwd"))
    os.rmdir(os.path.join(root, "etc"))
    os.symlink(secret.parent, os.path.join(root, "etc"))  # passes "relative, no '..'"
    data = CocoDataset(root, annotation_file, task="Captioning", shuffle=False)
    with pytest.raises(RuntimeError) as info:
        rows_of(data)
    error = info.value
    assert isinstance(error, MalformedFileError)
    message = str(error)
    assert os.path.join(root, "etc", "passwd") in message  # the file
    assert f"symbolic link '{os.path.join(root, 'etc')}' -> '{secret.parent}'" in message
    assert "outside dataset_dir" in message
    # skip mode leaves it out and counts it, as any unreadable image
    ds.config.set_error_samples_mode("skip")  # read when a pipeline is built
    try:
        data = CocoDataset(root, annotation_file, task="Captioning", shuffle=False)
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        assert [row[1].tolist() for row in it] == [[["ok"]]]
        assert it.skipped_samples == 1
    finally:
        ds.config.set_error_samples_mode("raise")


def test_coco_links_that_stay_inside_and_download_caches_are_read(tmp_path):
    # dataset_dir a link, and a link inside it pointing within it: both fine
    root, annotation_file = write_coco(tmp_path, [{"image_id": 1, "caption": "x"}])
    os.rename(os.path.join(root, "a.jpg"), os.path.join(root, "real.jpg"))
    os.symlink("real.jpg", os.path.join(root, "a.jpg"))
    linked_root = tmp_path / "coco_link"
    linked_root.symlink_to(root)
    assert len(rows_of(CocoDataset(str(linked_root), annotation_file, task="Captioning"))) == 1
    # a Hugging Face snapshot: every file a link into one blobs folder
    blobs = tmp_path / "hub" / "blobs"
    snapshot = tmp_path / "hub" / "snapshots" / "rev"
    (snapshot / "images").mkdir(parents=True)
    blobs.mkdir()
    (blobs / "1111").write_bytes(JPEG)
    (blobs / "2222").write_text(
        json.dumps(
            {
                "images": [{"id": 1, "file_name": "images/a.jpg"}],
                "annotations": [{"image_id": 1, "caption": "hub"}],
            }
        )
    )
    (snapshot / "images" / "a.jpg").symlink_to(blobs / "1111")
    (snapshot / "captions.json").symlink_to(blobs / "2222")
    data = CocoDataset(str(snapshot), str(snapshot / "captions.json"), task="Captioning")
    assert rows_of(data, column=1) == [[["hub"]]]


def test_voc_files_that_lead_out_are_refused(tmp_path):
    secret = outside_file(tmp_path)
    root = write_voc(tmp_path)
    image = root / "JPEGImages" / "000002.jpg"
    image.unlink()
    image.symlink_to(secret)
    data = VOCDataset(str(root), task="Detection", shuffle=False)
    with pytest.raises(MalformedFileError, match=r"000002\.jpg'.*symbolic link.*outside"):
        rows_of(data)
    image.unlink()
    image.write_bytes(JPEG)
    assert len(rows_of(VOCDataset(str(root), task="Detection"))) == 2
    # an annotation read when the data set is built
    xml = root / "Annotations" / "000001.xml"
    outside_xml = outside_file(tmp_path, "x.xml", xml.read_bytes())
    xml.unlink()
    xml.symlink_to(outside_xml)
    with pytest.raises(MalformedFileError, match=r"000001\.xml'.*annotation file resolves"):
        VOCDataset(str(root), task="Detection")
    xml.unlink()
    xml.symlink_to(os.path.relpath(root / "Annotations" / "000002.xml", xml.parent))
    assert len(rows_of(VOCDataset(str(root), task="Detection"))) == 2  # a link kept inside
    # a whole folder that is a link out: refused too (the message says how to fix it)
    images = root / "JPEGImages"
    moved = tmp_path / "elsewhere" / "JPEGImages"
    images.rename(moved)
    images.symlink_to(moved)
    with pytest.raises(MalformedFileError, match="pass the folder the link leads to"):
        rows_of(VOCDataset(str(root), task="Detection"))


# ---------------------------------------------------------------------------- CSV
def test_csv_quote_never_closed_is_an_error_naming_the_line_it_opens(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('id,name\n1,"alice\n2,bob\n3,carol\n')  # would be 1 row holding the rest
    with pytest.raises(MalformedFileError, match=r"q\.csv' line 2: a quoted field opens here"):
        CSVDataset(str(path))
    path.write_text('id,name\n1,"al""ice\nsmith"\n2,"x"y\n')  # closed: escaped and stray quotes
    rows = rows_of(CSVDataset(str(path), shuffle=False), column=None)
    assert rows == [["1", 'al"ice\nsmith'], ["2", "xy"]]


def test_csv_unclosed_quote_is_found_across_scan_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_module, "_QUOTE_SCAN_CHUNK", 7)
    text = 'a,b\n"x,""y""",2\n3,"4\n5,6\n'
    assert csv_module.unclosed_quote(text.encode(), ",") == text.index('"4')
    assert csv_module.unclosed_quote(b'a,b\n"x,""y""",2\n', ",") is None


def test_csv_width_is_capped_and_errors_stay_short(tmp_path, monkeypatch):
    path = tmp_path / "w.csv"
    path.write_text(",".join(f"c{i}" for i in range(9)) + "\n" + ",".join("1" * 9) + "\n")
    assert CSVDataset(str(path)).get_col_names()[-1] == "c8"
    monkeypatch.setattr(csv_module, "MAX_COLUMNS", 8)
    with pytest.raises(MalformedFileError, match=r"w\.csv': the first record has more than 8"):
        CSVDataset(str(path))
    with pytest.raises(ValueError, match="column_names has 9 names; at most 8"):
        CSVDataset(str(path), column_names=[f"c{i}" for i in range(9)])
    monkeypatch.undo()
    # a 1 MB value in an error is quoted in a few hundred characters
    path.write_text("a,b\n1," + "x" * 1_000_000 + "\n")
    with pytest.raises(MalformedFileError, match="column 'b': 'xxx") as info:
        CSVDataset(str(path), column_defaults=[0, 0])
    assert len(str(info.value)) < 600
    path.write_text(",".join(["a"] * 5000) + "\n" + ",".join(["1"] * 5000) + "\n")
    with pytest.raises(MalformedFileError, match=r"duplicate column names: \['a', .*5000 in all"):
        CSVDataset(str(path))


def test_csv_non_ascii_delimiter_is_an_argument_error(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a\u00e9b\n1\u00e92\n")
    with pytest.raises(ValueError, match="field_delim must be a single ASCII character"):
        CSVDataset(str(path), field_delim="\u00e9")


# ---------------------------------------------------------------------------- ImageFolder trees
def _remove_chain(top: str, names: list[str]) -> None:
    """Remove the chain of folders ``top/names[0]/names[1]/...`` and its files, by descriptor
    (the chain may pass PATH_MAX; shutil.rmtree recurses)."""
    fds = [os.open(top, os.O_RDONLY)]
    try:
        for name in names:
            fds.append(os.open(name, os.O_RDONLY, dir_fd=fds[-1]))
        for depth in range(len(names), 0, -1):
            for entry in os.listdir(fds[depth]):
                if entry not in names[depth : depth + 1]:
                    os.unlink(entry, dir_fd=fds[depth])
            os.close(fds.pop())
            os.rmdir(names[depth - 1], dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


def _make_chain(top: str, names: list[str], file_name: str) -> None:
    fd = os.open(top, os.O_RDONLY)
    try:
        for name in names:
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open(file_name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, JPEG)
        os.close(out)
    finally:
        os.close(fd)


def test_image_folder_lists_a_tree_1200_folders_deep(tmp_path):
    root = tmp_path / "deep"
    (root / "cat").mkdir(parents=True)
    names = ["d"] * 1200
    _make_chain(str(root / "cat"), names, "bottom.jpg")
    try:
        data = ImageFolderDataset(str(root), shuffle=False)
        assert data.get_dataset_size() == 1
        assert data.source.paths[0].endswith("/d/d/bottom.jpg")
    finally:
        _remove_chain(str(root / "cat"), names)


def test_image_folder_path_past_path_max_is_an_error_naming_it(tmp_path):
    root = tmp_path / "long"
    (root / "cat").mkdir(parents=True)
    (root / "cat" / "short.jpg").write_bytes(JPEG)
    names = [f"{k:02d}" + "x" * 200 for k in range(image_files_module.PATH_MAX // 200 + 2)]
    _make_chain(str(root / "cat"), names, "far.jpg")
    try:
        with pytest.raises(
            ValueError, match=r"the path '.*00x+.*' is \d+ bytes, at least PATH_MAX"
        ):
            ImageFolderDataset(str(root))
    finally:
        _remove_chain(str(root / "cat"), names)


def test_image_folder_file_past_path_max_is_an_error(tmp_path, monkeypatch):
    root = tmp_path / "f"
    (root / "cat").mkdir(parents=True)
    (root / "cat" / ("y" * 60 + ".jpg")).write_bytes(JPEG)
    monkeypatch.setattr(image_files_module, "PATH_MAX", len(str(root / "cat")) + 20)
    with pytest.raises(ValueError, match=r"yyyy\.jpg' is \d+ bytes, at least PATH_MAX"):
        ImageFolderDataset(str(root))


def test_image_folder_order_is_sorted_os_walk_order(tmp_path):
    root = tmp_path / "order"
    files = ["a.jpg", "a-b/c.jpg", "a/b.jpg", "a/b/c.jpg", "a.b/x.jpg", "A/y.jpg", "z.png"]
    for cls in ("k2", "k1"):
        for name in files:
            path = root / cls / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(JPEG)
    (root / "k1" / "linked").symlink_to(root / "k2" / "a")  # a linked folder: not descended
    expected = [
        os.path.join(folder, name)
        for cls in ("k1", "k2")
        for folder, _, names in sorted(os.walk(root / cls))
        for name in sorted(names)
    ]
    with pytest.warns(UserWarning, match=r"1 link\(s\) to folders .* not read: '.*k1/linked'"):
        data = ImageFolderDataset(str(root), shuffle=False)
    assert [str(p) for p in data.source.paths] == [str(p) for p in expected]
    assert len(expected) == 2 * len(files)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads anything")
def test_image_folder_unreadable_folder_is_an_error_not_a_loss(tmp_path):
    root = tmp_path / "perm"
    (root / "cat" / "locked").mkdir(parents=True)
    (root / "cat" / "a.jpg").write_bytes(JPEG)
    (root / "cat" / "locked" / "b.jpg").write_bytes(JPEG)
    os.chmod(root / "cat" / "locked", 0)
    try:
        with pytest.raises(PermissionError, match=r"cannot list '.*locked'"):
            ImageFolderDataset(str(root))
    finally:
        os.chmod(root / "cat" / "locked", 0o755)


# ---------------------------------------------------------------------------- idx, COCO padding
def test_idx_shapes_that_overflow_int64_are_refused_naming_the_file(tmp_path):
    labels = struct.pack(">II", 0x801, 0)
    for shape in [(2**21, 2**21, 2**22), (0, 2**32 - 1, 2**32 - 1), (2**32 - 1,) * 3]:
        (tmp_path / "train-images-idx3-ubyte").write_bytes(struct.pack(">I3I", 0x803, *shape))
        (tmp_path / "train-labels-idx1-ubyte").write_bytes(labels)
        with pytest.raises(MalformedFileError, match=r"train-images-idx3-ubyte' declares shape"):
            ds.MnistDataset(str(tmp_path), usage="train")


def test_coco_padding_is_lazy_and_capped(tmp_path, monkeypatch):
    polygons = [[1, 2, 3, 4, 5, 6], [], [7, 8]]
    root, annotation_file = write_coco(
        tmp_path,
        [
            {"image_id": 1, "iscrowd": 0, "segmentation": polygons},
            {"image_id": 1, "iscrowd": 0, "segmentation": [[9, 9]]},
        ],
    )
    data = CocoDataset(root, annotation_file, task="Stuff")
    stored = data.source.annotations[0][0]
    assert isinstance(stored, PaddedRows) and stored.values.nbytes == 10 * 4  # no padding kept
    (row,) = rows_of(data, column=1)
    assert row == [[1, 2, 3, 4, 5, 6], [-1] * 6, [7, 8, -1, -1, -1, -1], [9, 9, -1, -1, -1, -1]]
    monkeypatch.setattr(coco_module, "MAX_PADDED_VALUES", 23)  # 4 x 6 = 24 values
    with pytest.raises(
        MalformedFileError,
        match=r"ann\.json': images\[0\] \('a\.jpg'\): its 'segmentation' would be padded to "
        r"\(4, 6\) = 24 values from 10 .*annotations\[0\]'s\); at most 23",
    ):
        CocoDataset(root, annotation_file, task="Stuff")
    captions = [{"image_id": 1, "caption": ""}] * 3 + [{"image_id": 1, "caption": "x" * 6}]
    root, annotation_file = write_coco(tmp_path, captions)
    with pytest.raises(MalformedFileError, match=r"'caption' would be padded to \(4, 6\)"):
        CocoDataset(root, annotation_file, task="Captioning")


# ---------------------------------------------------------------------------- memory recipes
_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import jisu, torch  # the baseline the limit is measured over
    sys.path.insert(0, {repo!r})
    from tests.dataset.sources import test_sources_hostile as probes

    def address_space():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024

    limit = address_space() + {headroom}
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    for name in {names!r}:
        start = time.process_time()  # CPU time: the work done, which load does not stretch
        try:
            result = {{"value": getattr(probes, name)({folder!r})}}
        except BaseException as exc:
            result = {{"error": [k.__name__ for k in type(exc).__mro__], "message": str(exc)}}
        result["cpu_seconds"] = time.process_time() - start
        print(json.dumps([name, result]), flush=True)
    """
)
HEADROOM = 1 << 30  # over `import jisu, torch`; each recipe used to take 1.6-4 GB


def run_limited(folder, names: list[str], headroom: int = HEADROOM) -> dict:
    """Run the probes ``names`` (functions of this module taking a folder) in a child process
    whose address space may grow ``headroom`` bytes past ``import jisu, torch``; their
    results by name: ``{"value": ...}`` or ``{"error": [exception type and bases], "message"}``,
    with ``cpu_seconds`` (the CPU time the probe took: its work, whatever the machine's load)."""
    code = _CHILD.format(repo=REPO, headroom=headroom, names=names, folder=str(folder))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=150, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(line) for line in done.stdout.splitlines() if line.startswith("["))


def probe_control_allocation(folder: str) -> int:
    """More than the headroom: must fail, or the limit is not in force."""
    return int(np.ones(HEADROOM + (256 << 20), dtype=np.uint8).sum())


def probe_control_reads_a_real_set(folder: str) -> int:
    """A normal COCO set read through the pipeline (threads and all) under the limit."""
    root = os.path.join(folder, "small")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "a.jpg"), "wb") as f:
        f.write(JPEG)
    segmentation = [[float(k) for k in range(200)]] * 50
    with open(os.path.join(root, "ann.json"), "w") as f:
        json.dump(
            {
                "images": [{"id": 1, "file_name": "a.jpg"}],
                "annotations": [{"image_id": 1, "iscrowd": 0, "segmentation": segmentation}],
            },
            f,
        )
    data = CocoDataset(root, os.path.join(root, "ann.json"), task="Stuff")
    return sum(row[1].shape[0] for row in data.create_tuple_iterator(output_numpy=True))


def probe_csv_256k_commas(folder: str) -> int:
    path = os.path.join(folder, "commas.csv")
    with open(path, "w") as f:
        f.write("," * (256 << 10) + "\n")
    return CSVDataset(path).get_dataset_size()


def probe_coco_one_long_polygon_and_50k_empty(folder: str) -> int:
    root = os.path.join(folder, "stuff")
    os.makedirs(root, exist_ok=True)
    segmentation = [[1.0] * 10_000] + [[]] * 50_000
    with open(os.path.join(root, "ann.json"), "w") as f:
        json.dump(
            {
                "images": [{"id": 1, "file_name": "a.jpg"}],
                "annotations": [{"image_id": 1, "iscrowd": 0, "segmentation": segmentation}],
            },
            f,
        )
    data = CocoDataset(root, os.path.join(root, "ann.json"), task="Stuff")
    return sum(1 for _ in data.create_tuple_iterator(output_numpy=True))


def probe_coco_5k_empty_captions_and_one_long(folder: str) -> int:
    root = os.path.join(folder, "captions")
    os.makedirs(root, exist_ok=True)
    annotations = [{"image_id": 1, "caption": ""}] * 5000
    annotations.append({"image_id": 1, "caption": "x" * 100_000})
    with open(os.path.join(root, "ann.json"), "w") as f:
        json.dump({"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": annotations}, f)
    data = CocoDataset(root, os.path.join(root, "ann.json"), task="Captioning")
    return sum(1 for _ in data.create_tuple_iterator(output_numpy=True))


def probe_idx_empty_but_huge_rows(folder: str) -> int:
    root = os.path.join(folder, "mnist")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "train-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">I3I", 0x803, 0, 2**32 - 1, 2**32 - 1))
    with open(os.path.join(root, "train-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, 0))
    return ds.MnistDataset(root, usage="train").get_dataset_size()


PROBES = [
    "probe_control_allocation",
    "probe_control_reads_a_real_set",
    "probe_csv_256k_commas",
    "probe_coco_one_long_polygon_and_50k_empty",
    "probe_coco_5k_empty_captions_and_one_long",
    "probe_idx_empty_but_huge_rows",
]


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    return run_limited(tmp_path_factory.mktemp("limited"), PROBES)


@linux_only
@pytest.mark.timeout(200)
def test_the_address_space_limit_is_in_force_and_leaves_room_for_real_work(limited):
    assert "MemoryError" in limited["probe_control_allocation"]["error"]
    assert limited["probe_control_reads_a_real_set"] == {
        "value": 50,
        "cpu_seconds": limited["probe_control_reads_a_real_set"]["cpu_seconds"],
    }


@linux_only
@pytest.mark.timeout(200)
@pytest.mark.parametrize(
    "probe, match",
    [
        ("probe_csv_256k_commas", r"commas\.csv': the first record has more than 16384 fields"),
        (
            "probe_coco_one_long_polygon_and_50k_empty",
            r"images\[0\] \('a\.jpg'\): its 'segmentation' would be padded to \(50001, 10000\)",
        ),
        (
            "probe_coco_5k_empty_captions_and_one_long",
            r"its 'caption' would be padded to \(5001, 100000\) = 500100000 values",
        ),
        ("probe_idx_empty_but_huge_rows", r"train-images-idx3-ubyte' declares shape \(0, "),
    ],
)
def test_small_files_that_asked_for_gigabytes_are_refused_within_the_limit(limited, probe, match):
    import re

    result = limited[probe]
    assert "MalformedFileError" in result.get("error", []), result
    assert re.search(match, result["message"]), result["message"]
    assert len(result["message"]) < 1000
    assert result["cpu_seconds"] < 10  # refused before the work, not after: CPU, not wall time
