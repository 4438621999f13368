"""CocoDataset: COCO detection, stuff, keypoint, panoptic and caption annotations, as
MindSpore 2.10 reads them.

``dataset_dir`` holds the images (``file_name`` of the annotation file's ``images``, relative
to it); ``annotation_file`` is a COCO JSON file. One row per image that has annotations, in
the order of ``images``; images without annotations are left out (MindSpore's rule). The
columns after ``image`` (encoded bytes as a 1-D uint8 array, or HWC uint8 RGB with
``decode=True``) depend on the task:

============ ================================================================================
task         columns (dtype, shape; N annotations of the image)
============ ================================================================================
Detection    ``bbox`` float32 (N, 4) ``[x, y, w, h]``; ``category_id``, ``iscrowd`` uint32
             (N, 1)
Stuff        ``segmentation`` float32 (P, L): every polygon of the image's annotations, a row
             each, padded with -1 to the longest (an uncompressed RLE gives its ``counts`` as
             one row); ``iscrowd`` uint32 (N, 1)
Keypoint     ``keypoints`` float32 (N, L) padded with -1; ``num_keypoints`` uint32 (N, 1)
Panoptic     ``bbox``, ``category_id``, ``iscrowd`` as Detection and ``area`` uint32 (N, 1),
             one row per segment of ``segments_info``
Captioning   ``captions`` str (N, 1)
============ ================================================================================

The annotation file is parsed and checked when the data set is built: a malformed one fails
at once with a :class:`~jisu.dataset.record.validate.MalformedFileError` naming it and the
entry at fault. Images are read at iteration.

Memory is bounded by what the file holds: the ragged columns (Stuff ``segmentation``,
``keypoints``, ``captions``) are kept as their values and padded when a row is read, and a
row whose padded column would exceed :data:`MAX_PADDED_VALUES` values (one polygon of 10,000
numbers beside 50,000 empty ones would pad to 2 GB) is refused when the data set is built,
naming the image and the annotation. Image files must resolve inside ``dataset_dir`` (see
:class:`~jisu.dataset.sources.voc.DataFolder`): a ``file_name`` cannot lead out through a
symbolic link.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..record.validate import MalformedFileError
from .annotated_images import (
    _UINT32_MAX,
    FLOAT32_MAX,
    DataFolder,
    _check_bool,
    _check_decrypt,
    _check_str,
    _ImageRows,
    _ImageSource,
    _read_capped,
)
from .options import ReadOptions, check_cache
from .vision_sets import _check_dir

#: Largest annotation file read (COCO 2017's largest official one is about 0.5 GB).
MAX_ANNOTATION_FILE_BYTES = 4 << 30
#: Most values one row's padded column may hold: MindSpore pads an image's polygons (Stuff),
#: keypoint lists or captions to the longest, so the padded array is (count x longest). 2**24
#: values (64 MiB of float32 or of UCS-4 characters) is far above any real COCO image.
MAX_PADDED_VALUES = 1 << 24

COLUMNS = {
    "Detection": ("bbox", "category_id", "iscrowd"),
    "Stuff": ("segmentation", "iscrowd"),
    "Keypoint": ("keypoints", "num_keypoints"),
    "Panoptic": ("bbox", "category_id", "iscrowd", "area"),
    "Captioning": ("captions",),
}

_MISSING = object()


class _Checker:
    """Checks on the decoded JSON; each failure is a MalformedFileError naming the file and
    the entry (``annotations[12]`` …)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, where: str, reason: str) -> MalformedFileError:
        return MalformedFileError(self.path, f"{where}: {reason}")

    def dict(self, value: Any, where: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, found {type(value).__name__}")
        return value

    def list(self, value: Any, where: str) -> list:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list, found {type(value).__name__}")
        return value

    def get(self, entry: dict, key: str, where: str, default: Any = _MISSING) -> Any:
        value = entry.get(key, default)
        if value is _MISSING:
            raise self.fail(where, f"has no '{key}'")
        return value

    def int(self, value: Any, where: str, unsigned: bool = False) -> int:
        """An integer (``true``/``false`` and integral floats such as ``3.0`` count, as in
        MindSpore); ``unsigned``: it goes to a uint32 column, so in [0, 2**32)."""
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise self.fail(where, f"expected an integer, found {value!r}")
        if unsigned and not 0 <= value <= _UINT32_MAX:
            raise self.fail(where, f"{value} is not in [0, {_UINT32_MAX}] (a uint32 column)")
        return int(value)

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(where, f"expected a number, found {value!r}")
        try:
            value = float(value)
        except OverflowError:
            value = float("inf")
        if not abs(value) <= FLOAT32_MAX:
            raise self.fail(where, f"{value!r} is not a finite float32")
        return value

    def numbers(self, value: Any, where: str, length: int | None = None) -> list[float]:
        values = self.list(value, where)
        if length is not None and len(values) != length:
            raise self.fail(where, f"expected {length} numbers, found {len(values)}")
        return [self.number(v, f"{where}[{k}]") for k, v in enumerate(values)]

    def str(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, found {type(value).__name__}")
        return value


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def load_coco_json(op: str, path: str) -> dict:
    """The decoded annotation file, a JSON object (``NaN``/``Infinity`` refused)."""
    raw = _read_capped(op, path, MAX_ANNOTATION_FILE_BYTES, "annotation file")
    try:
        data = json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise MalformedFileError(path, "is nested too deeply to be a COCO file") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, the constants
        raise MalformedFileError(path, f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MalformedFileError(path, f"holds a JSON {type(data).__name__}, not an object")
    return data


def _relative_file(check: _Checker, name: Any, where: str) -> str:
    """An image's ``file_name``: a path inside ``dataset_dir`` (not absolute, no ``..``)."""
    name = check.str(name, where)
    parts = name.replace("\\", "/").split("/")
    if not name or "\0" in name or os.path.isabs(name) or name.startswith("/") or ".." in parts:
        raise check.fail(where, f"{name!r} is not a relative path inside dataset_dir")
    return name


class PaddedRows:
    """Rows of numbers of different lengths, read as float32 ``(len(rows), longest)`` padded
    with -1 (MindSpore's layout), but stored as the values alone (flat, with each row's
    length): memory is what the file holds, the padding exists only while a row is read.

    Array-like for the row reader: ``shape``, ``dtype``, ``ndim``, and :meth:`copy`, which
    returns a new padded array (each read gets its own, as the other columns' copies).
    """

    __slots__ = ("lengths", "values")
    dtype = np.dtype(np.float32)
    ndim = 2

    def __init__(self, rows: list[list[float]]) -> None:
        self.lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
        total = int(self.lengths.sum())
        self.values = np.fromiter(itertools.chain.from_iterable(rows), np.float32, total)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.lengths), int(self.lengths.max()) if len(self.lengths) else 0

    def copy(self) -> np.ndarray:
        """The padded ``(rows, longest)`` float32 array, new at each call."""
        rows, longest = self.shape
        out = np.full((rows, longest), -1, dtype=np.float32)
        out[np.arange(longest) < self.lengths[:, None]] = self.values
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.copy()
        return out if dtype is None else out.astype(dtype)


class PaddedStrings:
    """An image's captions, read as a ``(N, 1)`` str array (NumPy pads every string to the
    longest, 4 bytes a character), stored as the strings themselves."""

    __slots__ = ("items",)
    ndim = 2

    def __init__(self, items: list[str]) -> None:
        self.items = tuple(items)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.items), 1

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(f"<U{max(map(len, self.items), default=0) or 1}")

    def copy(self) -> np.ndarray:
        """The ``(N, 1)`` str array, new at each call."""
        return np.array(self.items, dtype=np.str_).reshape(-1, 1)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.copy()
        return out if dtype is None else out.astype(dtype)


def _check_padding(
    check: _Checker, image: str, field: str, lengths: list[int], annotation: list[int]
) -> None:
    """Refuse a row whose ``field`` (rows of ``lengths``, from ``annotation`` indices) would
    pad to more than :data:`MAX_PADDED_VALUES` values."""
    if not lengths:
        return
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    padded = len(lengths) * lengths[longest]
    if padded > MAX_PADDED_VALUES:
        raise check.fail(
            image,
            f"its '{field}' would be padded to ({len(lengths)}, {lengths[longest]}) = {padded} "
            f"values from {sum(lengths)} (every entry is padded to the longest, "
            f"annotations[{annotation[longest]}]'s); at most {MAX_PADDED_VALUES} per image "
            "(jisu.dataset.sources.coco.MAX_PADDED_VALUES)",
        )


def _column(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint32).reshape(-1, 1)


def parse_coco(path: str, data: dict, task: str) -> tuple[list[tuple], dict | None]:
    """The rows of ``task`` from a decoded COCO file: ``(file_name, annotation arrays)`` per
    image with annotations, in the order of ``images``, and the class indexing
    (``{name: [id]}``, Panoptic ``{name: [id, isthing]}``) of Detection and Panoptic.

    Raises:
        MalformedFileError: naming ``path`` and the entry at fault.
    """
    check = _Checker(path)
    images = check.list(check.get(data, "images", "the top level"), "images")
    annotations = check.list(check.get(data, "annotations", "the top level"), "annotations")
    files: dict[int, str] = {}
    order: list[int] = []
    for k, image in enumerate(images):
        where = f"images[{k}]"
        image = check.dict(image, where)
        image_id = check.int(check.get(image, "id", where), f"{where}.id")
        if image_id in files:
            raise check.fail(where, f"image id {image_id} is listed twice")
        files[image_id] = _relative_file(check, check.get(image, "file_name", where), where)
        order.append(image_id)

    indexing: dict | None = None
    category_ids: set[int] = set()
    if task in ("Detection", "Panoptic"):
        indexing = {}
        categories = check.list(check.get(data, "categories", "the top level"), "categories")
        for k, category in enumerate(categories):
            where = f"categories[{k}]"
            category = check.dict(category, where)
            cid = check.int(check.get(category, "id", where), f"{where}.id")
            name = check.str(check.get(category, "name", where), f"{where}.name")
            entry = [cid]
            if task == "Panoptic":
                isthing = check.get(category, "isthing", where)
                entry.append(check.int(isthing, f"{where}.isthing"))
            indexing[name] = entry  # a repeated name keeps its last id, as in MindSpore
            category_ids.add(cid)

    def category(entry: dict, where: str) -> int:
        cid = check.int(check.get(entry, "category_id", where), f"{where}.category_id", True)
        if cid not in category_ids:
            raise check.fail(where, f"category_id {cid} is not in 'categories'")
        return cid

    per_image: dict[int, list] = {}
    for k, ann in enumerate(annotations):
        where = f"annotations[{k}]"
        ann = check.dict(ann, where)
        image_id = check.int(check.get(ann, "image_id", where), f"{where}.image_id")
        if image_id not in files:
            raise check.fail(where, f"image_id {image_id} is not in 'images'")
        items = per_image.setdefault(image_id, [])
        if task == "Detection":
            bbox = check.numbers(check.get(ann, "bbox", where), f"{where}.bbox", 4)
            iscrowd = check.int(ann.get("iscrowd", 0), f"{where}.iscrowd", True)
            items.append((bbox, category(ann, where), iscrowd))
        elif task == "Stuff":
            seg = check.get(ann, "segmentation", where)
            iscrowd = check.int(check.get(ann, "iscrowd", where), f"{where}.iscrowd", True)
            items.append((_segmentation(check, seg, f"{where}.segmentation"), iscrowd, k))
        elif task == "Keypoint":
            points = check.numbers(check.get(ann, "keypoints", where), f"{where}.keypoints")
            count = check.get(ann, "num_keypoints", where)
            items.append((points, check.int(count, f"{where}.num_keypoints", True), k))
        elif task == "Panoptic":
            segments = check.list(check.get(ann, "segments_info", where), f"{where}.segments_info")
            for j, seg in enumerate(segments):
                at = f"{where}.segments_info[{j}]"
                seg = check.dict(seg, at)
                bbox = check.numbers(check.get(seg, "bbox", at), f"{at}.bbox", 4)
                iscrowd = check.int(check.get(seg, "iscrowd", at), f"{at}.iscrowd", True)
                area = check.number(check.get(seg, "area", at), f"{at}.area")
                if not 0 <= area < _UINT32_MAX + 1:
                    raise check.fail(at, f"area {area} is not in [0, 2**32) (a uint32 column)")
                items.append((bbox, category(seg, at), iscrowd, int(area)))
        else:  # Captioning
            items.append((check.str(check.get(ann, "caption", where), f"{where}.caption"), k))

    rows = []
    for k, image_id in enumerate(order):
        items = per_image.get(image_id)
        image = f"images[{k}] ('{files[image_id]}')"
        arrays = _arrays(check, image, task, items) if items else None
        if arrays is not None:
            rows.append((files[image_id], arrays))
    return rows, indexing


def _segmentation(check: _Checker, seg: Any, where: str) -> list[list[float]]:
    """The rows a ``segmentation`` gives: its polygons, or an uncompressed RLE's counts."""
    if isinstance(seg, list):
        return [check.numbers(p, f"{where}[{k}]") for k, p in enumerate(seg)]
    if isinstance(seg, dict):
        counts = check.get(seg, "counts", where)
        if isinstance(counts, str):
            raise check.fail(
                where, "compressed RLE (string 'counts') is not supported (MindSpore neither)"
            )
        return [check.numbers(counts, f"{where}.counts")]
    raise check.fail(where, f"expected polygons (a list) or an RLE (an object), found {seg!r}")


def _arrays(check: _Checker, image: str, task: str, items: list) -> tuple[Any, ...] | None:
    """One image's annotation columns (arrays, or :class:`PaddedRows`/:class:`PaddedStrings`
    for the ragged ones); None when it has nothing to show (a Stuff image without polygons,
    a Panoptic image without segments).

    Raises:
        MalformedFileError: a ragged column would pad past :data:`MAX_PADDED_VALUES`.
    """
    if task in ("Detection", "Panoptic"):
        out = (
            np.array([i[0] for i in items], dtype=np.float32).reshape(-1, 4),
            _column([i[1] for i in items]),
            _column([i[2] for i in items]),
        )
        return (*out, _column([i[3] for i in items])) if task == "Panoptic" else out
    if task == "Stuff":
        polygons = [p for i in items for p in i[0]]
        if not polygons:
            return None
        sources = [i[2] for i in items for _ in i[0]]
        _check_padding(check, image, "segmentation", [len(p) for p in polygons], sources)
        return PaddedRows(polygons), _column([i[1] for i in items])
    if task == "Keypoint":
        points = [i[0] for i in items]
        _check_padding(check, image, "keypoints", [len(p) for p in points], [i[2] for i in items])
        return PaddedRows(points), _column([i[1] for i in items])
    captions = [i[0] for i in items]
    _check_padding(check, image, "caption", [len(c) for c in captions], [i[1] for i in items])
    return (PaddedStrings(captions),)


class CocoDataset(_ImageSource):
    """COCO (MindSpore 2.10's ``CocoDataset``); see the module for the columns of each task.

    Args:
        dataset_dir: the folder holding the images.
        annotation_file: the COCO JSON annotation file.
        task: "Detection", "Stuff", "Keypoint", "Panoptic" or "Captioning".
        num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id: as in
            :class:`GeneratorDataset` (shuffled by default; no :class:`PKSampler`).
        decode: decode the images to HWC uint8 RGB instead of returning their encoded bytes.
        cache: only None (jisu has no cache server).
        extra_metadata: add a last column ``_meta-filename``: the image's ``file_name``
            without its extension (a str). Unlike MindSpore, which hides ``_meta-`` columns
            until renamed, jisu shows it.
        decrypt: a callable taking an image path and returning its decrypted bytes.

    Symbolic links: an image is read only if its real path lies inside ``dataset_dir``'s
    real path (``dataset_dir`` may itself be a link, and links inside it may point within it):
    a ``file_name`` that passes the "relative, no ``..``" check but leads out through a link
    is refused when read, with a :class:`MalformedFileError` naming the file and the link
    (skippable in error samples mode "skip"). A download cache whose files are links into
    one folder (Hugging Face's ``blobs``) is allowed when the annotation file is such a link
    too (see :class:`~jisu.dataset.sources.voc.DataFolder`).

    Limits: an image's padded ``segmentation``, ``keypoints`` or ``captions`` holds at most
    :data:`MAX_PADDED_VALUES` values (see the module).

    Raises:
        TypeError / ValueError: a wrong argument, a missing folder or annotation file, or no
            image with annotations.
        MalformedFileError: a malformed annotation file, naming it and the entry at fault
            (a missing field, an unknown ``image_id`` or ``category_id``, a ``file_name``
            outside ``dataset_dir``, a value that does not fit its column, a row that would
            pad past :data:`MAX_PADDED_VALUES`); at read, an image leading out of
            ``dataset_dir`` through a link.
    """

    def __init__(
        self,
        dataset_dir: str,
        annotation_file: str,
        task: str = "Detection",
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        decode: bool = False,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
        extra_metadata: bool = False,
        decrypt: Callable[[str], bytes] | None = None,
    ) -> None:
        op = self.op_name
        root = _check_dir(op, dataset_dir)
        if not isinstance(annotation_file, (str, os.PathLike)):
            raise TypeError(
                f"{op}: annotation_file must be a path. Received: annotation_file="
                f"{annotation_file!r}"
            )
        annotation_file = os.fspath(annotation_file)
        if not os.path.isfile(annotation_file):
            raise ValueError(f"{op}: annotation_file '{annotation_file}' does not exist")
        task = _check_str(op, "task", task)
        if task not in COLUMNS:
            raise ValueError(f"{op}: task must be one of {list(COLUMNS)}. Received: task={task!r}")
        decode = _check_bool(op, "decode", decode)
        extra_metadata = _check_bool(op, "extra_metadata", extra_metadata)
        decrypt = _check_decrypt(op, decrypt)
        check_cache(op, cache)
        self.dataset_dir, self.annotation_file, self.task = root, annotation_file, task

        data = load_coco_json(op, annotation_file)
        rows, self._class_indexing = parse_coco(annotation_file, data, task)
        del data
        if not rows:
            raise ValueError(f"{op}: no image of '{annotation_file}' has {task} annotations")
        names = [name for name, _ in rows]
        reader = _ImageRows(
            [os.path.join(root, name) for name in names],
            None,
            [arrays for _, arrays in rows],
            [os.path.splitext(name)[0] for name in names] if extra_metadata else None,
            decode,
            decrypt,
            DataFolder(op, root, annotation_file),
        )
        columns = ["image", *COLUMNS[task]]
        if extra_metadata:
            columns.append("_meta-filename")
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id
        )
        super().__init__(reader, columns, options)

    def _files_of(self, index: int) -> str:
        return f"'{self.source.images[index]}', annotated in '{self.annotation_file}'"

    def get_class_indexing(self) -> dict[str, list[int]]:
        """``{category name: [category id]}`` (Panoptic: ``[id, isthing]``) in the order of
        the file's ``categories``; tasks Detection and Panoptic only."""
        if self._class_indexing is None:
            raise NotImplementedError(
                f"{self.op_name}: only tasks 'Detection' and 'Panoptic' have get_class_indexing"
            )
        return {name: list(ids) for name, ids in self._class_indexing.items()}
