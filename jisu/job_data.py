"""``jisu train``'s data: the digits packed into record files, the class count, the pipelines.

Everything the main job (:mod:`jisu.job`) reads before it trains: the handwritten digits that
ship with jisu (:func:`load_digits`) upsampled to 32x32 RGB JPEGs in two record data sets
(:func:`write_digits_records`), or the user's ``--data`` (an image folder or record files); the
number of classes, every label checked first since it sizes the network (:func:`num_classes`, at
most :data:`MAX_CLASSES`); and the jisu pipelines that decode, augment and batch them
(:func:`pipeline`). Kept apart from the training run so that the data preparation can be read
(and tested) on its own.
"""

from __future__ import annotations

import os
from typing import Any

import cv2
import numpy as np
import simplejpeg
import torch

from . import dataset as ds
from .dataset import transforms, vision
from .dataset.record.writer import FileWriter

SIZE = 32
MEAN, STD = [127.5] * 3, [127.5] * 3


#: the digits file shipped in the package: 1,797 images of 8x8 pixels (0-16) and their labels
DIGITS_FILE = os.path.join(os.path.dirname(__file__), "data", "digits.npz")
DIGITS_COUNT = 1797


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """The handwritten digits embedded in jisu: ``(images, labels)``, uint8 ``(1797, 8, 8)``
    pixels from 0 to 16 and int64 labels from 0 to 9.

    The test part of the UCI "Optical Recognition of Handwritten Digits" data set (E. Alpaydin
    and C. Kaynak, 1998, CC BY 4.0; the copy scikit-learn ships as ``load_digits``): 32x32
    bitmaps of 13 writers, counted in 4x4 blocks. 45 KB, so that the main job needs neither a
    download nor scikit-learn. The file is read without pickle and checked before use.
    """
    with np.load(DIGITS_FILE, allow_pickle=False) as archive:
        if sorted(archive.files) != ["images", "labels"]:
            raise ValueError(
                f"{DIGITS_FILE}: expected arrays images and labels, got {archive.files}"
            )
        images, labels = archive["images"], archive["labels"]
    if images.shape != (DIGITS_COUNT, 8, 8) or images.dtype != np.uint8 or images.max() > 16:
        raise ValueError(f"{DIGITS_FILE}: images {images.shape} {images.dtype} are not the digits")
    if labels.shape != (DIGITS_COUNT,) or labels.max() > 9:
        raise ValueError(f"{DIGITS_FILE}: labels {labels.shape} are not the digits' labels")
    return images, labels.astype(np.int64)


def write_digits_records(folder: str) -> tuple[str, str]:
    """The embedded digits (:func:`load_digits`) as 32x32 RGB JPEGs in two record data sets
    (train, test: 80/20 of a fixed permutation)."""
    images, labels = load_digits()
    order = np.random.default_rng(0).permutation(len(images))
    cut = int(len(images) * 0.8)
    paths = []
    for name, part in (("digits-train", order[:cut]), ("digits-test", order[cut:])):
        rows = []
        for i in part:
            gray = (images[i].astype(np.int32) * 16).clip(0, 255).astype(np.uint8)
            gray = cv2.resize(gray, (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)
            rgb = np.ascontiguousarray(np.repeat(gray[..., None], 3, axis=2))
            rows.append({"image": simplejpeg.encode_jpeg(rgb, quality=95), "label": int(labels[i])})
        path = os.path.join(folder, name)
        writer = FileWriter(path)
        writer.add_schema({"image": {"type": "bytes"}, "label": {"type": "int32"}})
        writer.write_raw_data(rows)
        writer.commit()
        paths.append(path)
    return paths[0], paths[1]


def _is_image_folder(path: str) -> bool:
    return os.path.isdir(path) and not any(f.endswith(".json") for f in os.listdir(path))


def _source(path: str, shuffle: bool, workers: int) -> ds.Dataset:
    """(encoded image, label) rows of an image folder or of record files."""
    if _is_image_folder(path):
        return ds.ImageFolderDataset(path, shuffle=shuffle, num_parallel_workers=workers)
    return ds.RecordDataset(path, shuffle=shuffle, num_parallel_workers=workers)


#: the most classes ``jisu train`` builds a network for: a record label must be a class id
#: from 0 to ``MAX_CLASSES - 1`` (the head is then at most 64 x 100,000 weights, 26 MB)
MAX_CLASSES = 100_000


def num_classes(path: str) -> int:
    """The folder's classes, or the largest record label + 1, once every label is checked to
    be a plausible class id.

    The class count sizes the network's last layer, so one stray label (5,000,000) would
    build a head of gigabytes. A record label must be an integer (an integer-valued float
    passes) from 0 to ``MAX_CLASSES - 1``, one per row. Labels may be sparse: a subset of a
    large label set (a few classes of ImageNet-21k) keeps its ids, so the count is not
    compared with the number of rows; the cap bounds the head whatever the rows.

    Raises:
        ValueError: a label field that is not a scalar number, a label that is not a class
            id (naming its row, counted from 0 in the files' order), no rows, or a folder of
            more than ``MAX_CLASSES`` classes.
    """
    if _is_image_folder(path):
        count = len(ds.ImageFolderDataset(path).get_class_indexing())
        if count > MAX_CLASSES:
            raise ValueError(
                f"--data '{path}' has {count} class folders, more than the "
                f"{MAX_CLASSES} classes jisu train builds a network for (MAX_CLASSES)"
            )
        return count
    data = ds.RecordDataset(path, columns_list=["label"], shuffle=False)
    field = next(f for f in data.reader.fields if f.name == "label")
    if field.dtype is None or field.dtype.kind not in "iuf" or field.shape:
        kind = field.type + (f" of shape {field.shape}" if field.shape else "")
        raise ValueError(
            f"--data '{path}': its label field is {kind}; it must hold one "
            "integer class id per row (int32 or int64)"
        )
    largest, row = -1, 0
    batches = data.batch(4096).create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        for (labels,) in batches:
            labels = labels.reshape(-1)
            good = (labels >= 0) & (labels < MAX_CLASSES)
            if labels.dtype.kind == "f":
                good &= labels == np.floor(labels)  # NaN fails both
            if not good.all():
                bad = int(np.argmin(good))
                raise ValueError(
                    f"--data '{path}': row {row + bad} has label "
                    f"{labels[bad].item()!r}, which is not a class id: labels must be integers "
                    f"from 0 to {MAX_CLASSES - 1} (MAX_CLASSES = {MAX_CLASSES})"
                )
            largest = max(largest, int(labels.max()))
            row += len(labels)
    finally:
        batches.close()
    if row == 0:
        raise ValueError(f"--data '{path}' has no rows")
    return largest + 1


def pipeline(path: str, train: bool, batch_size: int, workers: int, resize: bool) -> ds.Dataset:
    """Record/folder -> Decode (-> Resize) (-> RandomCrop with padding) -> Normalize -> CHW,
    batched; labels cast to int64 per batch."""
    data = _source(path, shuffle=train, workers=workers)
    ops: list[Any] = [vision.Decode()]
    if resize:
        ops.append(vision.Resize((SIZE, SIZE)))
    if train:
        ops.append(vision.RandomCrop(SIZE, padding=2))
    ops += [vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    data = data.map(ops, "image", num_parallel_workers=workers)
    # every op given the count: a stage runs as many threads as its widest op
    data = data.batch(
        batch_size if train else 256, drop_remainder=train, num_parallel_workers=workers
    )
    # one cast per batch, not per row: a map stage costs ~20 us a row even for a cast
    return data.map(transforms.TypeCast(torch.int64), "label", num_parallel_workers=workers)


def _batches(dataset: ds.Dataset) -> list[tuple[torch.Tensor, ...]]:
    """One epoch of ``dataset`` as a list of batches (an iterable ``Model.eval`` takes)."""
    iterator = dataset.create_tuple_iterator(num_epochs=1)
    try:
        return [tuple(batch) for batch in iterator]
    finally:
        iterator.close()
