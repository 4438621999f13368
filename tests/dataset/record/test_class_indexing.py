"""The manifest's ``class_indexing``: written by ``jisu convert``, ``Dataset.save`` and
``FileWriter.set_class_indexing``, read back by ``RecordDataset.get_class_indexing()``, and
checked as hostile input (a JSON object of str to int labels in [0, 2**31), bounded count)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import simplejpeg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.cli import main
from jisu.dataset import vision
from jisu.dataset.record import format as record_format
from jisu.dataset.record.convert import convert
from jisu.dataset.record.format import MAX_LABEL, MAX_MANIFEST_CLASSES, parse_manifest
from jisu.dataset.record.validate import MalformedFileError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mindrecord"
# made in this order; sorted (upper case first), the labels are Moth 0, ant 1, bee 2,
# empty 3, zebra 4: an empty class folder still takes its place, as in ImageFolderDataset
CLASSES = {"zebra": 2, "ant": 3, "Moth": 1, "bee": 2, "empty": 0}


@pytest.fixture
def image_folder(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    root = tmp_path / "images"
    for name, count in CLASSES.items():
        (root / name).mkdir(parents=True)
        for k in range(count):
            image = rng.integers(0, 256, (16 + k, 24, 3), dtype=np.uint8)
            jpeg = simplejpeg.encode_jpeg(image, quality=90, colorspace="RGB")
            (root / name / f"{k}.jpg").write_bytes(jpeg)
    (root / "README.txt").write_text("a file beside the class folders is no class")
    return root


def sorted_class_map(root: Path) -> dict[str, int]:
    """The folder's class map, computed independently: sorted subfolder names -> 0..n-1."""
    return {name: i for i, name in enumerate(sorted(p.name for p in root.iterdir() if p.is_dir()))}


def manifest_of(name: Path) -> dict:
    with open(str(name) + ".manifest.json") as f:
        return json.load(f)


def write_small(path: Path, class_indexing: dict | None = None) -> Path:
    writer = ds.FileWriter(str(path))
    writer.add_schema({"x": {"type": "int64"}})
    if class_indexing is not None:
        writer.set_class_indexing(class_indexing)
    writer.write_raw_data([{"x": k} for k in range(5)])
    writer.commit()
    return path


# ---------------------------------------------------------------- written, read back
@pytest.mark.parametrize("shards", [1, 2])
@pytest.mark.parametrize("reencode", [False, True], ids=["bytes-as-stored", "reencoded"])
def test_convert_records_the_folders_class_map(tmp_path, image_folder, shards, reencode):
    expected = sorted_class_map(image_folder)
    assert expected == {"Moth": 0, "ant": 1, "bee": 2, "empty": 3, "zebra": 4}
    options = {"max_size": 20} if reencode else {}
    dst = tmp_path / "img.rec"
    convert(str(image_folder), str(dst), shards=shards, file_names=True, progress=False, **options)
    data = ds.RecordDataset(str(dst), shuffle=False)
    assert data.get_class_indexing() == expected
    assert (
        data.get_class_indexing() == ds.ImageFolderDataset(str(image_folder)).get_class_indexing()
    )
    assert manifest_of(dst)["class_indexing"] == expected
    # every row's label is its folder's label in the map
    rows = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert len(rows) == sum(CLASSES.values())
    for _, label, name in rows:
        assert int(label) == expected[str(name).split("/")[0]]
    # ops above the source pass it through, as above other sources
    pipeline = data.project(["image", "label"]).map(vision.Decode(), "image").shuffle(4).batch(2)
    assert pipeline.get_class_indexing() == expected
    assert pipeline.num_classes() == 5


def test_cli_convert_records_the_class_map(tmp_path, image_folder):
    assert main(["convert", str(image_folder), str(tmp_path / "cli.rec")]) == 0
    data = ds.RecordDataset(str(tmp_path / "cli.rec"))
    assert data.get_class_indexing() == sorted_class_map(image_folder)


def test_a_class_map_survives_conversion_and_save(tmp_path, image_folder):
    expected = sorted_class_map(image_folder)
    convert(str(image_folder), str(tmp_path / "a.rec"), progress=False)
    convert(str(tmp_path / "a.rec"), str(tmp_path / "b.rec"), shards=2, progress=False)
    assert ds.RecordDataset(str(tmp_path / "b.rec")).get_class_indexing() == expected
    # Dataset.save records the map of the source below
    ds.RecordDataset(str(tmp_path / "b.rec")).save(str(tmp_path / "c.rec"))
    assert ds.RecordDataset(str(tmp_path / "c.rec")).get_class_indexing() == expected
    custom = {"ant": 7, "bee": 7, "zebra": 0}  # labels may repeat
    folder = ds.ImageFolderDataset(str(image_folder), shuffle=False, class_indexing=custom)
    folder.save(str(tmp_path / "d.rec"))
    back = ds.RecordDataset(str(tmp_path / "d.rec"), shuffle=False)
    assert back.get_class_indexing() == custom
    labels = [int(r[1]) for r in back.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert labels == [7] * 3 + [7] * 2 + [0] * 2  # ant, bee, zebra (sorted folders)


def test_data_without_a_class_map_records_none(tmp_path):
    data = ds.NumpySlicesDataset({"x": np.arange(6)}, shuffle=False)
    data.save(str(tmp_path / "n.rec"))
    assert manifest_of(tmp_path / "n.rec")["class_indexing"] == {}
    assert ds.RecordDataset(str(tmp_path / "n.rec")).get_class_indexing() == {}
    np.savez(tmp_path / "arrays.npz", x=np.arange(4))
    convert(str(tmp_path / "arrays.npz"), str(tmp_path / "np.rec"), progress=False)
    assert ds.RecordDataset(str(tmp_path / "np.rec")).get_class_indexing() == {}
    assert ds.MindDataset(str(FIXTURES / "raw_only.mindrecord0")).get_class_indexing() == {}


def test_file_writer_records_a_given_class_map(tmp_path):
    classes = {"cat": 0, "dog": 1, "狗": 1, "": 2**31 - 1}
    write_small(tmp_path / "w.rec", classes)
    assert ds.RecordDataset(str(tmp_path / "w.rec")).get_class_indexing() == classes
    # the result is a copy: changing it changes nothing
    data = ds.RecordDataset(str(tmp_path / "w.rec"))
    data.get_class_indexing()["cat"] = 5
    assert data.get_class_indexing() == classes


@pytest.mark.parametrize(
    "bad",
    [["cat"], "cat", {"cat": True}, {"cat": -1}, {"cat": 1.0}, {"cat": "0"}, {1: 0}, {"c": 2**31}],
)
def test_file_writer_refuses_a_bad_class_map(tmp_path, bad):
    writer = ds.FileWriter(str(tmp_path / "w.rec"))
    with pytest.raises(ValueError, match=r"FileWriter.set_class_indexing: class_indexing"):
        writer.set_class_indexing(bad)
    writer.abort()


def test_file_writer_refuses_more_classes_than_a_manifest_may_hold(tmp_path, monkeypatch):
    monkeypatch.setattr(record_format, "MAX_MANIFEST_CLASSES", 3)
    writer = ds.FileWriter(str(tmp_path / "w.rec"))
    with pytest.raises(ValueError, match=r"names 4 classes, more than a manifest may \(3\)"):
        writer.set_class_indexing({c: 0 for c in "abcd"})
    writer.set_class_indexing({c: 0 for c in "abc"})
    writer.abort()


# ---------------------------------------------------------------- hostile manifests
def rewrite_manifest(path: Path, change) -> str:
    manifest = str(path) + ".manifest.json"
    with open(manifest) as f:
        content = json.load(f)
    change(content)
    with open(manifest, "w") as f:
        f.write(json.dumps(content))  # one write: json.dump writes piece by piece
    return manifest


def test_a_manifest_written_before_the_key_reads_as_no_class_map(tmp_path):
    path = write_small(tmp_path / "old.rec", {"a": 0})
    rewrite_manifest(path, lambda m: m.pop("class_indexing"))
    data = ds.RecordDataset(str(path), shuffle=False)
    assert data.get_class_indexing() == {}
    assert [int(r[0]) for r in data.create_tuple_iterator(num_epochs=1)] == list(range(5))


MALFORMED = {
    "a list": ([["a", 0]], r"class_indexing must be a JSON object"),
    "a string": ("a", r"class_indexing must be a JSON object"),
    "null": (None, r"class_indexing must be a JSON object"),
    "a bool label": ({"a": True}, r"class_indexing\['a'\] must be an int in \[0, 2147483648\)"),
    "a negative label": ({"a": 0, "b": -1}, r"class_indexing\['b'\] must be an int"),
    "a float label": ({"a": 1.0}, r"class_indexing\['a'\] must be an int"),
    "a string label": ({"a": "1"}, r"class_indexing\['a'\] must be an int"),
    "a list label": ({"a": [1]}, r"class_indexing\['a'\] must be an int"),
    "a label past int32": ({"a": 2**31}, r"class_indexing\['a'\] must be an int"),
    "a huge label": ({"a": 2**80}, r"class_indexing\['a'\] must be an int"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_class_map_is_one_clear_error(tmp_path, case):
    value, message = MALFORMED[case]
    path = write_small(tmp_path / "bad.rec", {"a": 0})
    manifest = rewrite_manifest(path, lambda m: m.__setitem__("class_indexing", value))
    with pytest.raises(MalformedFileError, match=message) as caught:
        ds.RecordDataset(str(path))
    assert caught.value.path == manifest and "class_indexing" in caught.value.reason


def test_the_class_count_is_capped(tmp_path, monkeypatch):
    path = write_small(tmp_path / "big.rec")
    monkeypatch.setattr(record_format, "MAX_MANIFEST_CLASSES", 3)
    rewrite_manifest(path, lambda m: m.__setitem__("class_indexing", {c: 0 for c in "abc"}))
    assert ds.RecordDataset(str(path)).get_class_indexing() == {"a": 0, "b": 0, "c": 0}
    classes = {c: 0 for c in "abcd"}
    manifest = rewrite_manifest(path, lambda m: m.__setitem__("class_indexing", classes))
    with pytest.raises(MalformedFileError, match=r"names 4 classes, more than a manifest") as c:
        ds.RecordDataset(str(path))
    assert c.value.path == manifest


def test_a_class_map_over_the_real_cap_is_refused(tmp_path):
    path = write_small(tmp_path / "big.rec")
    manifest = rewrite_manifest(path, lambda m: m.__setitem__("class_indexing", "HERE"))
    classes = ",".join(f'"{k}":0' for k in range(MAX_MANIFEST_CLASSES + 1))  # fast to build
    text = Path(manifest).read_text().replace('"HERE"', "{" + classes + "}")
    Path(manifest).write_text(text)
    with pytest.raises(MalformedFileError, match=r"names 1048577 classes, more than") as caught:
        ds.RecordDataset(str(path))
    assert caught.value.path == manifest


@pytest.fixture(scope="module")
def valid_manifest(tmp_path_factory) -> tuple[dict, str]:
    path = write_small(tmp_path_factory.mktemp("fuzz") / "f.rec")
    return manifest_of(path), str(path) + ".manifest.json"


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=JSON | st.dictionaries(st.text(max_size=4), JSON, max_size=4))
def test_any_json_class_map_is_accepted_exactly_when_valid(valid_manifest, value):
    raw, path = valid_manifest
    valid = (
        isinstance(value, dict)
        and len(value) <= MAX_MANIFEST_CLASSES
        and all(type(v) is int and 0 <= v < MAX_LABEL for v in value.values())
    )
    try:
        parsed = parse_manifest({**raw, "class_indexing": value}, path)
    except MalformedFileError as exc:
        assert not valid and exc.path == path and "class_indexing" in exc.reason
    else:
        assert valid and parsed.class_indexing == value
