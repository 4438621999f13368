"""VOCDataset: PASCAL VOC detection boxes or segmentation masks, as MindSpore 2.10 reads them.

Layout (``dataset_dir``)::

    ImageSets/Main/<usage>.txt          image ids, one a line (task "Detection")
    ImageSets/Segmentation/<usage>.txt  image ids, one a line (task "Segmentation")
    JPEGImages/<id>.jpg
    Annotations/<id>.xml                task "Detection"
    SegmentationClass/<id>.png          task "Segmentation"

Columns, dtypes and shapes follow MindSpore 2.10: "Detection" gives ``image``, ``bbox``
(float32 ``(N, 4)``, ``[xmin, ymin, xmax - xmin, ymax - ymin]``), ``label``, ``difficult``
and ``truncate`` (uint32 ``(N, 1)`` each); "Segmentation" gives ``image`` and ``target``
(the PNG). Images (and targets) are their encoded bytes as 1-D uint8 arrays, or with
``decode=True`` HWC uint8 RGB (a palette PNG decodes to its palette's colours, as in
MindSpore).

The annotation files are parsed when the data set is built, so a malformed one fails at once
with a :class:`~jisu.dataset.record.validate.MalformedFileError` naming it; images are read at
iteration. Annotation XML is parsed with expat, refusing entity declarations (the
"billion laughs" expansion) and never loading external entities, and files over
:data:`MAX_ANNOTATION_BYTES` are refused before they are read.

The annotation XML is parsed in :mod:`.voc_xml`; the file access confined to ``dataset_dir``
and the image rows are in :mod:`.annotated_images`, shared with
:mod:`~jisu.dataset.sources.coco`. Their names stay importable from here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..record.validate import MalformedFileError
from .annotated_images import (
    _UINT32_MAX,
    DataFolder,
    _check_bool,
    _check_decrypt,
    _check_str,
    _ImageRows,
    _ImageSource,
    _read_capped,
)
from .annotated_images import FLOAT32_MAX as FLOAT32_MAX  # re-exported: defined here before
from .options import ReadOptions, check_cache
from .vision_sets import _check_dir
from .voc_xml import parse_voc_objects

#: Largest VOC annotation (XML) or image-set list file read; real ones are a few KiB.
MAX_ANNOTATION_BYTES = 16 << 20

_TASK_LIST_FOLDER = {"Detection": "Main", "Segmentation": "Segmentation"}


def _plain_id(image_id: str, listed_in: str) -> str:
    """An image id from an image-set list: a plain file-name stem (no folder, no ``..``), so
    a list cannot point the reader at files outside the data set's folders."""
    if (
        image_id in (".", "..")
        or "/" in image_id
        or "\\" in image_id
        or "\0" in image_id
        or (os.altsep is not None and os.altsep in image_id)
    ):
        raise MalformedFileError(
            listed_in, f"image id {image_id!r} is not a plain name (no folders, no '..')"
        )
    return image_id


def read_image_ids(path: str, folder: DataFolder | None = None) -> list[str]:
    """The image ids of a VOC image-set list: one a line, surrounding whitespace (and a
    Windows line end) stripped, blank lines skipped; with ``folder``, the list must resolve
    inside it."""
    data = _read_capped("VOCDataset", path, MAX_ANNOTATION_BYTES, "image-set list", folder)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedFileError(path, f"is not UTF-8 text ({exc.reason})") from None
    return [_plain_id(line.strip(), path) for line in text.splitlines() if line.strip()]


def _check_class_indexing(op: str, class_indexing: Any) -> dict[str, int] | None:
    if class_indexing is None:
        return None
    if not isinstance(class_indexing, dict):
        raise TypeError(
            f"{op}: class_indexing must be a dict of class name to int label. "
            f"Received: class_indexing={class_indexing!r}"
        )
    for name, label in class_indexing.items():
        if not isinstance(name, str) or isinstance(label, bool) or not isinstance(label, int):
            raise TypeError(
                f"{op}: class_indexing must map str class names to int labels. "
                f"Received: class_indexing={class_indexing!r}"
            )
        if not 0 <= label <= _UINT32_MAX:
            raise ValueError(
                f"{op}: class_indexing labels must be in [0, {_UINT32_MAX}] (the label column "
                f"is uint32). Received: class_indexing[{name!r}]={label}"
            )
    return dict(class_indexing) or None  # {} means the default, as in MindSpore


class VOCDataset(_ImageSource):
    """PASCAL VOC (MindSpore 2.10's ``VOCDataset``).

    Args:
        dataset_dir: the folder holding ``ImageSets``, ``JPEGImages``, ``Annotations`` and
            ``SegmentationClass``.
        task: "Segmentation" (rows ``image, target``) or "Detection" (rows ``image, bbox,
            label, difficult, truncate``).
        usage: the image-set list read: ``ImageSets/Segmentation/<usage>.txt`` or
            ``ImageSets/Main/<usage>.txt`` (e.g. "train", "val", "trainval").
        class_indexing: "Detection" only: ``{class name: label}``; objects of other classes
            are left out, and so are images left with no object. Default (None or ``{}``):
            the class names found in the annotations, sorted, numbered from 0.
        num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id: as in
            :class:`GeneratorDataset` (shuffled by default).
        decode: decode the images (and targets) to HWC uint8 RGB instead of returning their
            encoded bytes.
        cache: only None (jisu has no cache server).
        extra_metadata: add a last column ``_meta-filename`` (the image id, a str). Unlike
            MindSpore, which hides ``_meta-`` columns until renamed, jisu shows it.
        decrypt: a callable taking a file path and returning the file's decrypted bytes,
            used for images and targets.

    Detection: ``bbox`` is float32 ``(N, 4)`` ``[xmin, ymin, xmax - xmin, ymax - ymin]``;
    ``label``, ``difficult`` and ``truncate`` are uint32 ``(N, 1)``. An object without a
    ``<name>`` is left out; every object needs a ``<bndbox>`` with
    ``0 < xmin < xmax, 0 < ymin < ymax`` and a file needs at least one ``<object>``
    (MindSpore's rules).

    Symbolic links: every file read (the list, annotations, images, targets) must resolve
    inside ``dataset_dir``'s real path (``dataset_dir`` itself may be a link, and so may files
    and folders inside it that point within it); a file that leads out through a link is
    refused with a :class:`MalformedFileError` naming it and the link: annotations and the
    list when the data set is built, images and targets when read (skippable in error
    samples mode "skip"). A download cache whose files are links into one folder (Hugging
    Face's ``blobs``) is allowed when the list is such a link too (see :class:`DataFolder`).

    Raises:
        TypeError / ValueError: a wrong argument, a missing folder, list or annotation file,
            a list without images, or no image with an object of the classes asked for.
        MalformedFileError: a malformed list or annotation file (named), or one that leads
            out of ``dataset_dir``.
    """

    def __init__(
        self,
        dataset_dir: str,
        task: str = "Segmentation",
        usage: str = "train",
        class_indexing: dict[str, int] | None = None,
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
        task = _check_str(op, "task", task)
        if task not in _TASK_LIST_FOLDER:
            raise ValueError(
                f"{op}: task must be 'Segmentation' or 'Detection'. Received: task={task!r}"
            )
        usage = _check_str(op, "usage", usage)
        if not usage:
            raise ValueError(f"{op}: usage must not be empty (e.g. 'train')")
        indexing = _check_class_indexing(op, class_indexing)
        if task == "Segmentation" and class_indexing is not None:
            raise ValueError(
                f"{op}: class_indexing applies to task 'Detection' only; pass None for task "
                "'Segmentation'"
            )
        decode = _check_bool(op, "decode", decode)
        extra_metadata = _check_bool(op, "extra_metadata", extra_metadata)
        decrypt = _check_decrypt(op, decrypt)
        check_cache(op, cache)
        self.dataset_dir, self.task, self.usage = root, task, usage

        list_file = os.path.join(root, "ImageSets", _TASK_LIST_FOLDER[task], usage + ".txt")
        if not os.path.isfile(list_file):
            raise ValueError(f"{op}: the image-set list '{list_file}' does not exist")
        second = "Annotations" if task == "Detection" else "SegmentationClass"
        for folder in ("JPEGImages", second):
            if not os.path.isdir(os.path.join(root, folder)):
                raise ValueError(f"{op}: '{os.path.join(root, folder)}' is not a folder")
        folder = DataFolder(op, root, list_file)
        ids = read_image_ids(list_file, folder)
        if not ids:
            raise ValueError(f"{op}: the image-set list '{list_file}' lists no image")
        images = [os.path.join(root, "JPEGImages", i + ".jpg") for i in ids]
        if task == "Segmentation":
            masks = [os.path.join(root, "SegmentationClass", i + ".png") for i in ids]
            reader = _ImageRows(
                images, masks, None, ids if extra_metadata else None, decode, decrypt, folder
            )
            self._class_indexing: dict[str, int] | None = None
            self._second = masks
            columns = ["image", "target"]
        else:
            reader, self._class_indexing, self._second = self._detection_rows(
                root, ids, images, indexing, extra_metadata, decode, decrypt, list_file, folder
            )
            columns = ["image", "bbox", "label", "difficult", "truncate"]
        if extra_metadata:
            columns.append("_meta-filename")
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id
        )
        super().__init__(reader, columns, options)

    def _detection_rows(
        self,
        root: str,
        ids: list[str],
        images: list[str],
        indexing: dict[str, int] | None,
        extra_metadata: bool,
        decode: bool,
        decrypt: Any,
        list_file: str,
        folder: DataFolder,
    ) -> tuple[_ImageRows, dict[str, int], list[str]]:
        op = self.op_name
        parsed: dict[str, list] = {}  # a list may repeat an id: parse its file once
        for image_id in ids:
            if image_id not in parsed:
                path = os.path.join(root, "Annotations", image_id + ".xml")
                data = _read_capped(op, path, MAX_ANNOTATION_BYTES, "annotation file", folder)
                parsed[image_id] = parse_voc_objects(path, data)
        if indexing is None:  # MindSpore: the names found, sorted, numbered from 0
            names = sorted({o[0] for objects in parsed.values() for o in objects if o[0]})
            indexing = {name: k for k, name in enumerate(names)}
        kept_images, annotations, meta, xml_paths = [], [], [], []
        for image_id, image in zip(ids, images):
            objects = [o for o in parsed[image_id] if o[0] and o[0] in indexing]
            if not objects:  # MindSpore leaves such images out
                continue
            # float32 throughout, as MindSpore computes the widths and heights
            boxes = np.array([o[1] for o in objects], dtype=np.float32)
            boxes[:, 2:] -= boxes[:, :2]  # [xmin, ymin, width, height]
            annotations.append(
                (
                    boxes,
                    np.array([[indexing[o[0]]] for o in objects], dtype=np.uint32),
                    np.array([[o[2]] for o in objects], dtype=np.uint32),
                    np.array([[o[3]] for o in objects], dtype=np.uint32),
                )
            )
            kept_images.append(image)
            meta.append(image_id)
            xml_paths.append(os.path.join(root, "Annotations", image_id + ".xml"))
        if not kept_images:
            raise ValueError(
                f"{op}: no image listed in '{list_file}' has an object of the classes "
                f"{sorted(indexing)}"
            )
        reader = _ImageRows(
            kept_images,
            None,
            annotations,
            meta if extra_metadata else None,
            decode,
            decrypt,
            folder,
        )
        return reader, indexing, xml_paths

    def _files_of(self, index: int) -> str:
        return f"'{self.source.images[index]}', '{self._second[index]}'"

    def get_class_indexing(self) -> dict[str, int]:
        """``{class name: label}`` of task "Detection": ``class_indexing`` as given, or the
        sorted class names of the annotations numbered from 0."""
        if self._class_indexing is None:
            raise NotImplementedError(
                f"{self.op_name}: only task 'Detection' has get_class_indexing"
            )
        return dict(self._class_indexing)
