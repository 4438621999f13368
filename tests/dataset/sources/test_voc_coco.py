"""VOCDataset and CocoDataset against what MindSpore 2.10 read from the same files
(tests/fixtures/voc_coco, made by make_fixtures.py), their argument checks, and their parsers
on malformed and hostile annotation files."""

from __future__ import annotations

import copy
import json
import os
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record.validate import MalformedFileError
from jisu.dataset.sources import coco as coco_module
from jisu.dataset.sources import voc as voc_module
from jisu.dataset.sources.coco import CocoDataset, parse_coco
from jisu.dataset.sources.voc import VOCDataset, parse_voc_objects
from tests.conftest import rows_of

FIXTURES = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "voc_coco")
)
VOC = os.path.join(FIXTURES, "voc")
COCO = os.path.join(FIXTURES, "coco")
COCO_IMAGES = os.path.join(COCO, "images")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)


def read(data):
    return list(data.create_tuple_iterator(output_numpy=True, num_epochs=1))


def described(data):
    """The view of ``data`` that make_fixtures.py recorded from MindSpore."""
    got = read(data)
    return {
        "columns": data.get_col_names(),
        "size": data.get_dataset_size(),
        "dtypes": [[str(a.dtype) for a in row] for row in got],
        "shapes": [[list(a.shape) for a in row] for row in got],
        "images": [int(row[0].size) if row[0].ndim == 1 else list(row[0].shape) for row in got],
        "values": [
            [
                {"bytes": int(a.size)} if a.dtype == np.uint8 and a.ndim == 1 else a.tolist()
                for a in row[1:]
            ]
            for row in got
        ],
    }


def assert_matches(data, want):
    got = described(data)
    for key in ("columns", "size", "dtypes", "shapes", "images", "values"):
        assert got[key] == want[key], key
    assert len(read(data)) == want["size"]


# ---------------------------------------------------------------------------- VOC
VOC_CASES = {
    "detection_train": dict(task="Detection", usage="train"),
    "detection_val": dict(task="Detection", usage="val"),
    "detection_class_indexing": dict(
        task="Detection", usage="train", class_indexing={"cat": 3, "dog": 7}
    ),
    "detection_decode": dict(task="Detection", usage="val", decode=True),
    "segmentation_train": dict(task="Segmentation", usage="train"),
    "segmentation_decode": dict(task="Segmentation", usage="train", decode=True),
    "segmentation_default": dict(),
    "detection_meta": dict(task="Detection", extra_metadata=True),
    "detection_shard_1_of_3": dict(task="Detection", num_shards=3, shard_id=1),
    "detection_num_samples_2": dict(task="Detection", num_samples=2),
}


@pytest.mark.parametrize("case", list(VOC_CASES))
def test_voc_rows_match_mindspore(case):
    want = EXPECTED["voc"][case]
    data = VOCDataset(VOC, shuffle=False, **VOC_CASES[case])
    assert_matches(data, want)
    if "class_indexing" in want:
        assert data.get_class_indexing() == want["class_indexing"]


def test_voc_images_and_targets_are_the_files():
    rows = read(VOCDataset(VOC, task="Segmentation", usage="val", shuffle=False))
    with open(os.path.join(VOC, "JPEGImages", "000002.jpg"), "rb") as f:
        assert rows[0][0].tobytes() == f.read()
    with open(os.path.join(VOC, "SegmentationClass", "000002.png"), "rb") as f:
        assert rows[0][1].tobytes() == f.read()


def test_voc_get_class_indexing_needs_detection():
    with pytest.raises(NotImplementedError, match=r"VOCDataset.*Detection"):
        VOCDataset(VOC, task="Segmentation").get_class_indexing()


def test_voc_shuffles_by_default_and_reads_by_index():
    ds.config.set_seed(5)
    data = VOCDataset(VOC, task="Detection", extra_metadata=True)
    names = rows_of(data, 5)
    assert sorted(names) == ["000001", "000002", "000003", "000004", "000005"]
    assert names != sorted(names)  # seed 5 gives another order (deterministic)
    assert data.get_dataset_size() == 5


def test_voc_pk_sampler_is_refused():
    with pytest.raises(ValueError, match="VOCDataset doesn't support PKSampler"):
        VOCDataset(VOC, task="Detection", sampler=ds.PKSampler(1))


def test_voc_decrypt_reads_images_and_targets(tmp_path):
    seen = []

    def decrypt(path):
        seen.append(os.path.basename(path))
        with open(path, "rb") as f:
            return f.read()

    data = VOCDataset(VOC, task="Segmentation", usage="val", shuffle=False, decrypt=decrypt)
    plain = read(VOCDataset(VOC, task="Segmentation", usage="val", shuffle=False))
    for got, want in zip(read(data)[0], plain[0]):
        np.testing.assert_array_equal(got, want)
    assert {"000002.jpg", "000002.png"} <= set(seen)
    with pytest.raises(TypeError, match="decrypt must return bytes"):  # row 0 is read at once
        VOCDataset(VOC, task="Detection", usage="val", decrypt=lambda p: "text")


def copy_voc(tmp_path):
    root = tmp_path / "voc"
    shutil.copytree(VOC, root)
    return root


def test_voc_list_whitespace_blank_lines_and_duplicates(tmp_path):
    # MindSpore takes each line verbatim (an id " x" or "" fails); jisu strips them
    root = copy_voc(tmp_path)
    (root / "ImageSets" / "Main" / "odd.txt").write_bytes(b"  000003 \r\n\n000001\r\n000003\n\n")
    data = VOCDataset(root, task="Detection", usage="odd", shuffle=False, extra_metadata=True)
    assert rows_of(data, 5) == ["000003", "000001", "000003"]  # repeats are kept, as MindSpore


@pytest.mark.parametrize("case", list(EXPECTED["voc_refused"]))
def test_voc_refuses_what_mindspore_refuses(tmp_path, case):
    root = copy_voc(tmp_path)
    xml = root / "Annotations" / "000002.xml"
    xml.write_text(EXPECTED["voc_refused"][case]["xml"])
    with pytest.raises(MalformedFileError) as info:
        VOCDataset(root, task="Detection")
    assert str(xml) in str(info.value)


@pytest.mark.parametrize(
    "xml, match",
    [
        (  # billion laughs: entity declarations are refused before any expansion
            '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY a "aaaaaaaaaa">'
            '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><annotation>&b;</annotation>',
            "entities",
        ),
        (
            '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
            "<annotation><object><name>&e;</name></object></annotation>",
            "entities",
        ),
        ("<annotation><object><name>&undefined;</name></object></annotation>", "XML"),
        ("<annotation>" + "<object>" * 3, "XML"),
        (
            "<annotation><object><name>a</name><difficult>-1</difficult><bndbox><xmin>1</xmin>"
            "<ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object></annotation>",
            "difficult",
        ),
        (
            "<annotation><object><name>a</name><bndbox><xmin>0x10</xmin>"
            "<ymin>1</ymin><xmax>20</xmax><ymax>2</ymax></bndbox></object></annotation>",
            "xmin",
        ),
        (
            "<annotation><object><name>a</name><bndbox><xmin>1</xmin>"
            "<ymin>1</ymin><xmax>1e39</xmax><ymax>2</ymax></bndbox></object></annotation>",
            "xmax",
        ),
    ],
)
def test_voc_refuses_hostile_and_sloppy_annotations(tmp_path, xml, match):
    root = copy_voc(tmp_path)
    path = root / "Annotations" / "000001.xml"
    path.write_text(xml)
    with pytest.raises(MalformedFileError, match=match) as info:
        VOCDataset(root, task="Detection")
    assert str(path) in str(info.value)


def test_voc_reads_annotations_mindspore_reads(tmp_path):
    root = copy_voc(tmp_path)
    (root / "Annotations" / "000002.xml").write_text(
        "<annotation><object><name>dog</name><difficult/><truncated> 1 </truncated>"
        "<bndbox><xmin> 1.5 </xmin><ymin>1</ymin><xmax>3</xmax><ymax><![CDATA[4]]></ymax>"
        "<xmax>9</xmax></bndbox><bndbox><xmin>9</xmin></bndbox></object>"
        "<object><name></name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax>"
        "</bndbox></object></annotation>"
    )
    (root / "ImageSets" / "Main" / "one.txt").write_text("000002\n")
    (row,) = rows_of(VOCDataset(root, task="Detection", usage="one"), None)
    assert row[1:] == [[[1.5, 1.0, 1.5, 3.0]], [[0]], [[0]], [[1]]]


def test_voc_filtered_classes_drop_images_and_empty_result_is_an_error(tmp_path):
    data = VOCDataset(VOC, task="Detection", class_indexing={"person": 0}, shuffle=False)
    assert data.get_dataset_size() == 2  # only 000003 and 000005 have a person
    with pytest.raises(ValueError, match=r"VOCDataset: no image .* classes"):
        VOCDataset(VOC, task="Detection", class_indexing={"horse": 0})
    root = copy_voc(tmp_path)
    (root / "ImageSets" / "Main" / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="lists no image"):
        VOCDataset(root, task="Detection", usage="empty")


def test_voc_missing_and_special_files(tmp_path):
    root = copy_voc(tmp_path)
    os.remove(root / "Annotations" / "000004.xml")
    with pytest.raises(ValueError, match=r"VOCDataset: the annotation file .*000004\.xml"):
        VOCDataset(root, task="Detection")
    os.mkfifo(root / "Annotations" / "000004.xml")  # refused, not waited on
    with pytest.raises(MalformedFileError, match="not a regular file"):
        VOCDataset(root, task="Detection")
    os.remove(root / "Annotations" / "000004.xml")
    shutil.copy(root / "Annotations" / "000001.xml", root / "Annotations" / "000004.xml")
    os.remove(root / "JPEGImages" / "000003.jpg")  # images are read at iteration
    data = VOCDataset(root, task="Detection", shuffle=False)
    with pytest.raises(Exception, match=r"000003\.jpg") as info:
        read(data)
    assert isinstance(info.value, FileNotFoundError)


def test_voc_refuses_large_annotations_and_ids_leaving_the_folders(tmp_path, monkeypatch):
    root = copy_voc(tmp_path)
    monkeypatch.setattr(voc_module, "MAX_ANNOTATION_BYTES", 200)
    with pytest.raises(MalformedFileError, match=r"000001\.xml.*bytes"):
        VOCDataset(root, task="Detection")
    monkeypatch.undo()
    (root / "ImageSets" / "Main" / "escape.txt").write_text("000001\n../JPEGImages/000001\n")
    with pytest.raises(MalformedFileError, match=r"escape\.txt.*not a plain name"):
        VOCDataset(root, task="Detection", usage="escape")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(dataset_dir=5), TypeError, "dataset_dir"),
        (dict(dataset_dir="/nonexistent/voc"), ValueError, "dataset_dir"),
        (dict(task="detection"), ValueError, "task"),
        (dict(task=None), TypeError, "task"),
        (dict(usage=None), TypeError, "usage"),
        (dict(usage="test"), ValueError, r"test\.txt"),
        (dict(task="Segmentation", class_indexing={"cat": 1}), ValueError, "class_indexing"),
        (dict(task="Detection", class_indexing=["cat"]), TypeError, "class_indexing"),
        (dict(task="Detection", class_indexing={"cat": 1.5}), TypeError, "class_indexing"),
        (dict(task="Detection", class_indexing={"cat": -1}), ValueError, "class_indexing"),
        (dict(decode=1), TypeError, "decode"),
        (dict(extra_metadata="yes"), TypeError, "extra_metadata"),
        (dict(decrypt=5), TypeError, "decrypt"),
        (dict(cache=object()), ValueError, "cache is not supported"),
        (dict(num_samples=-1), ValueError, "num_samples"),
        (dict(shuffle=1), TypeError, "shuffle"),
        (dict(num_shards=2), ValueError, "shard"),
        (dict(sampler=ds.SequentialSampler(), shuffle=False), ValueError, "sampler"),
    ],
)
def test_voc_argument_errors_name_op_and_argument(kwargs, error, match):
    kwargs = {"dataset_dir": VOC, **kwargs}
    with pytest.raises(error, match=match) as info:
        VOCDataset(**kwargs)
    assert "VOCDataset" in str(info.value)


# ---------------------------------------------------------------------------- COCO
COCO_CASES = {
    "Detection": dict(task="Detection"),
    "Stuff": dict(task="Stuff"),
    "Keypoint": dict(task="Keypoint"),
    "Panoptic": dict(task="Panoptic"),
    "Captioning": dict(task="Captioning"),
    "detection_decode_meta": dict(decode=True, extra_metadata=True),
    "detection_shard_1_of_2": dict(num_shards=2, shard_id=1),
    "keypoint_num_samples_1": dict(task="Keypoint", num_samples=1),
}
COCO_FILES = {"Panoptic": "panoptic.json", "Captioning": "captions.json"}


@pytest.mark.parametrize("case", list(COCO_CASES))
def test_coco_rows_match_mindspore(case):
    want = EXPECTED["coco"][case]
    file = os.path.join(COCO, COCO_FILES.get(case, "instances.json"))
    data = CocoDataset(COCO_IMAGES, file, shuffle=False, **COCO_CASES[case])
    assert_matches(data, want)
    if "class_indexing" in want:
        assert data.get_class_indexing() == want["class_indexing"]
        assert list(data.get_class_indexing()) == list(want["class_indexing"])  # file order
    elif COCO_CASES[case].get("task") in ("Stuff", "Keypoint", "Captioning"):
        with pytest.raises(NotImplementedError, match="Detection' and 'Panoptic"):
            data.get_class_indexing()


def test_coco_images_are_the_files():
    captions = os.path.join(COCO, "captions.json")
    rows = read(CocoDataset(COCO_IMAGES, captions, task="Captioning", shuffle=False))
    for row, name in zip(rows, ["a.jpg", "d.jpg"]):  # images order; b, c have no captions
        with open(os.path.join(COCO_IMAGES, name), "rb") as f:
            assert row[0].tobytes() == f.read()


def write_coco(tmp_path, content, images=("a.jpg", "b.jpg")):
    root = tmp_path / "coco"
    root.mkdir(exist_ok=True)
    for image in images:
        shutil.copy(os.path.join(COCO_IMAGES, image), root)
    path = root / "ann.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(root), str(path)


@pytest.mark.parametrize("case", list(EXPECTED["coco_accepted"]))
def test_coco_reads_unusual_files_as_mindspore(tmp_path, case):
    want = EXPECTED["coco_accepted"][case]
    root, path = write_coco(tmp_path, want["json"])
    data = CocoDataset(root, path, shuffle=False)
    got = described(data)
    for key in ("columns", "size", "dtypes", "shapes", "values"):
        assert got[key] == want["mindspore"][key], key
    assert data.get_class_indexing() == want["mindspore"]["class_indexing"]


@pytest.mark.parametrize("case", list(EXPECTED["coco_refused"]))
def test_coco_refuses_what_mindspore_refuses(tmp_path, case):
    root, path = write_coco(tmp_path, EXPECTED["coco_refused"][case]["json"])
    with pytest.raises(MalformedFileError) as info:
        CocoDataset(root, path)
    assert path in str(info.value)


IMAGES = [{"id": 1, "file_name": "a.jpg"}]
CATS = [{"id": 2, "name": "cat"}]


def det(**fields):
    return {"images": IMAGES, "categories": CATS, "annotations": [{"image_id": 1,
            "category_id": 2, "bbox": [1, 1, 2, 2], **fields}]}  # fmt: skip


@pytest.mark.parametrize(
    "content, match",
    [
        ('{"images": [], "annotations": [], "x": NaN}', "not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply|not valid JSON"),
        (b"\xff\xfe\x00garbage", "not valid JSON"),
        ({"images": [{"id": 1, "file_name": "../a.jpg"}], "annotations": []}, "relative path"),
        ({"images": [{"id": 1, "file_name": "/etc/passwd"}], "annotations": []}, "relative"),
        ({"images": IMAGES * 2, "annotations": []}, "listed twice"),
        (det(bbox=[1, 2, 3]), "expected 4 numbers"),
        (det(bbox=[1, 2, 3, 1e39]), "finite float32"),
        (det(iscrowd=-1), "iscrowd"),
        (det(iscrowd=2.5), "iscrowd"),
        (det(category_id=-2), "category_id"),
        (
            {
                "images": IMAGES,
                "annotations": [{"image_id": 1, "keypoints": [1, "a"], "num_keypoints": 1}],
            },
            "keypoints",
        ),
    ],
)
def test_coco_refuses_hostile_and_sloppy_files(tmp_path, content, match):
    if isinstance(content, bytes):
        root, path = write_coco(tmp_path, "")
        with open(path, "wb") as f:
            f.write(content)
    else:
        root, path = write_coco(tmp_path, content)
    task = "Keypoint" if "keypoints" in str(content) else "Detection"
    with pytest.raises(MalformedFileError, match=match) as info:
        CocoDataset(root, path, task=task)
    assert path in str(info.value)


def test_coco_stuff_rle_and_polygons(tmp_path):
    content = {
        "images": IMAGES,
        "annotations": [
            {"image_id": 1, "iscrowd": 0, "segmentation": [[1, 2, 3, 4], []]},
            {"image_id": 1, "iscrowd": 1, "segmentation": {"counts": [5, 6, 7], "size": [2, 9]}},
            {"image_id": 1, "iscrowd": 0, "segmentation": []},  # no polygon: an iscrowd only
        ],
    }
    root, path = write_coco(tmp_path, content)
    (row,) = rows_of(CocoDataset(root, path, task="Stuff"), None)
    assert row[1] == [[1, 2, 3, 4], [-1, -1, -1, -1], [5, 6, 7, -1]]  # as MindSpore pads
    assert row[2] == [[0], [1], [0]]
    content["annotations"][1]["segmentation"]["counts"] = "PP0Z1"  # compressed RLE
    root, path = write_coco(tmp_path, content)
    with pytest.raises(MalformedFileError, match="compressed RLE"):
        CocoDataset(root, path, task="Stuff")


def test_coco_large_file_no_rows_and_missing_image(tmp_path, monkeypatch):
    root, path = write_coco(tmp_path, det())
    monkeypatch.setattr(coco_module, "MAX_ANNOTATION_FILE_BYTES", 50)
    with pytest.raises(MalformedFileError, match="bytes"):
        CocoDataset(root, path)
    monkeypatch.undo()
    root, path = write_coco(tmp_path, {"images": IMAGES, "categories": CATS, "annotations": []})
    with pytest.raises(ValueError, match=r"CocoDataset: no image .* Detection annotations"):
        CocoDataset(root, path)
    root, path = write_coco(tmp_path, det())
    os.remove(os.path.join(root, "a.jpg"))
    with pytest.raises(FileNotFoundError, match=r"a\.jpg"):
        read(CocoDataset(root, path))


def test_coco_pk_sampler_is_refused():
    with pytest.raises(ValueError, match="CocoDataset doesn't support PKSampler"):
        CocoDataset(COCO_IMAGES, os.path.join(COCO, "instances.json"), sampler=ds.PKSampler(1))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(dataset_dir="/nonexistent/coco"), ValueError, "dataset_dir"),
        (dict(annotation_file=None), TypeError, "annotation_file"),
        (dict(annotation_file="/nonexistent.json"), ValueError, "annotation_file"),
        (dict(task="Segmentation"), ValueError, "task"),
        (dict(task=1), TypeError, "task"),
        (dict(decode=None), TypeError, "decode"),
        (dict(extra_metadata=1), TypeError, "extra_metadata"),
        (dict(decrypt="key"), TypeError, "decrypt"),
        (dict(cache=object()), ValueError, "cache is not supported"),
        (dict(num_parallel_workers=0), ValueError, "num_parallel_workers"),
        (dict(shard_id=0), ValueError, "shard"),
    ],
)
def test_coco_argument_errors_name_op_and_argument(kwargs, error, match):
    kwargs = {
        "dataset_dir": COCO_IMAGES,
        "annotation_file": os.path.join(COCO, "instances.json"),
        **kwargs,
    }
    with pytest.raises(error, match=match) as info:
        read(CocoDataset(**kwargs))
    assert "CocoDataset" in str(info.value)


# ---------------------------------------------------------------------------- fuzz
# Valid-looking files, then a few random mutations: the parsers meet both well-formed files
# (most give rows) and every kind of damage (each must be a MalformedFileError naming the file)
XML_PIECES = st.sampled_from(
    [
        "<annotation>", "</annotation>", "<object>", "</object>", "<name>", "</name>",
        "<bndbox>", "</bndbox>", "<xmin>", "</xmin>", "<difficult>", "</difficult>",
        "<part>", "</part>", "cat", "1", "2.5", "-3", "0", "1e3", "nan", " ", "\n", "&amp;",
        "&lt;", "<!-- c -->", "<![CDATA[4]]>", "<?xml version='1.0'?>", "<!DOCTYPE a>",
        "<!DOCTYPE a [<!ENTITY e 'x'>]>", "&e;", "\x00", "é", "<x a='1'/>", "<name/>",
    ]
)  # fmt: skip
COORDINATE = st.sampled_from(["1", "2.5", " 3 ", "4", "9", "0", "-1", "abc", "", "1e40"])
FLAG = st.sampled_from([None, "0", "1", " 2 ", "", "-1", "1.5", "99999999999"])
GOOD_BOX = st.tuples(
    st.integers(1, 4), st.sampled_from(["1", "2.5"]), st.integers(5, 9), st.just("6")
).map(lambda box: tuple(str(v) for v in box))
GOOD_OBJECT = st.tuples(
    st.sampled_from([None, "cat", "dog", " cat "]),
    st.sampled_from([None, "0", "1"]),
    st.sampled_from([None, "0", "1"]),
    GOOD_BOX,
)
ANY_OBJECT = st.tuples(
    st.sampled_from([None, "cat", ""]),
    FLAG,
    FLAG,
    st.none() | st.tuples(COORDINATE, COORDINATE, COORDINATE, COORDINATE),
)
# half the files valid, the others with damaged objects
VOC_OBJECTS = st.lists(GOOD_OBJECT, min_size=1, max_size=3) | st.lists(
    GOOD_OBJECT | ANY_OBJECT, max_size=3
)
INSERTIONS = st.just([]) | st.lists(
    st.tuples(st.integers(0, 100), XML_PIECES), min_size=1, max_size=2
)


def voc_text(objects, insertions):
    parts = ["<annotation>", "<size><width>8</width></size>"]
    for name, difficult, truncated, box in objects:
        parts.append("<object>")
        if name is not None:
            parts.append(f"<name>{name}</name>")
        for tag, value in (("difficult", difficult), ("truncated", truncated)):
            if value is not None:
                parts.append(f"<{tag}>{value}</{tag}>")
        if box is not None:
            tags = ("xmin", "ymin", "xmax", "ymax")
            parts.append("<bndbox>" + "".join(f"<{t}>{v}</{t}>" for t, v in zip(tags, box)))
            parts.append("</bndbox>")
        parts.append("</object>")
    parts.append("</annotation>")
    for position, piece in insertions:
        parts.insert(position % (len(parts) + 1), piece)
    return "".join(parts)


@settings(max_examples=50, deadline=None)
@given(VOC_OBJECTS, INSERTIONS)
def test_fuzz_voc_parser_gives_objects_or_malformed_file_error(objects, insertions):
    text = voc_text(objects, insertions)
    try:
        parsed = parse_voc_objects("fuzz.xml", text.encode("utf-8"))
    except MalformedFileError as exc:
        assert "fuzz.xml" in str(exc)
        return
    assert parsed
    for name, box, difficult, truncated in parsed:
        assert isinstance(name, str) and len(box) == 4
        assert 0 < box[0] < box[2] and 0 < box[1] < box[3]
        assert 0 <= difficult < 2**32 and 0 <= truncated < 2**32


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 2**33)
    | st.floats(allow_nan=False)
    | st.sampled_from(["a.jpg", "../x.jpg", "", "cat", "/abs.jpg", "PP0Z1"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=10,
)
NUMBER = st.integers(1, 9) | st.floats(0.5, 9)
SEGMENT = st.fixed_dictionaries(
    {
        "bbox": st.lists(NUMBER, min_size=4, max_size=4),
        "category_id": st.sampled_from([2, 3]),
        "iscrowd": st.sampled_from([0, 1]),
        "area": st.floats(0, 1e6),
    }
)
ANNOTATION = st.fixed_dictionaries(
    {
        "image_id": st.sampled_from([1, 2, 1.0]),
        "bbox": st.lists(NUMBER, min_size=4, max_size=4),
        "category_id": st.sampled_from([2, 3, 2.0]),
        "iscrowd": st.sampled_from([0, 1, True]),
        "segmentation": st.lists(st.lists(NUMBER, max_size=6), max_size=3)
        | st.fixed_dictionaries({"counts": st.lists(st.integers(0, 9), max_size=5)}),
        "keypoints": st.lists(NUMBER, max_size=6),
        "num_keypoints": st.integers(0, 5),
        "caption": st.text(max_size=5),
        "segments_info": st.lists(SEGMENT, max_size=3),
    }
)
COCO_FILE = st.fixed_dictionaries(
    {
        "images": st.just([{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "s/b.jpg"}]),
        "annotations": st.lists(ANNOTATION, max_size=3),
        "categories": st.just(
            [{"id": 2, "name": "cat", "isthing": 1}, {"id": 3, "name": "dog", "isthing": 0}]
        ),
    }
)
# half the files stay valid
MUTATIONS = st.just([]) | st.lists(
    st.tuples(st.integers(0, 10**6), st.booleans(), JSON_VALUES), min_size=1, max_size=2
)


def places_in(node, out):
    """Every ``(container, key)`` of a decoded JSON document, depth first."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, child in list(items):
        out.append((node, key))
        if isinstance(child, (dict, list)):
            places_in(child, out)
    return out


def mutate(document, mutations):
    """A copy of ``document`` (strategies may share parts of it across examples) with the
    value at the ``k``-th place deleted (``drop``, in an object) or replaced."""
    document = copy.deepcopy(document)
    for k, drop, value in mutations:
        places = places_in(document, [])
        if not places:
            break
        node, key = places[k % len(places)]
        if drop and isinstance(node, dict):
            del node[key]
        else:
            node[key] = value
    return document


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(COCO_FILE, MUTATIONS, st.sampled_from(list(coco_module.COLUMNS)))
def test_fuzz_coco_parser_gives_rows_or_malformed_file_error(document, mutations, task):
    document = mutate(document, mutations)
    try:
        rows, indexing = parse_coco("fuzz.json", document, task)
    except MalformedFileError as exc:
        assert "fuzz.json" in str(exc)
        return
    for file_name, arrays in rows:
        assert isinstance(file_name, str) and ".." not in file_name.split("/")
        assert len(arrays) == len(coco_module.COLUMNS[task])
        assert all(array.ndim == 2 for array in arrays)
    assert (indexing is not None) == (task in ("Detection", "Panoptic"))
