"""MNIST, Fashion-MNIST, CIFAR-10 and CIFAR-100 in their published binary layouts.

The files are read into memory after their headers and sizes are checked (not mapped: a file
truncated under a map kills the process with SIGBUS), so rows are slices of arrays (random
access: shuffled, sharded and sampled like NumPy data; a batch gathers its rows with one
fancy-index per file). Columns, dtypes, shapes and file order follow MindSpore
2.10: ``image`` HWC uint8 and ``uint32`` scalar labels. The files are the ones present, found
by name as MindSpore finds them (a folder holding only the train files, or one CIFAR batch, is
read as it is) and read in name order (MNIST: t10k before train; CIFAR-10: data_batch_1..5
before test_batch; CIFAR-100: test before train); only a folder with no file of the kind is an
error, naming ``usage``.
"""

from __future__ import annotations

import math
import os
import stat
import struct
from typing import Any, ClassVar

import numpy as np

from ..record.validate import MalformedFileError
from .numpy_slices import ArraySource, Slices
from .options import ReadOptions, check_cache

_USAGES = ("train", "test", "all")


def _check_usage(op: str, usage: str | None) -> str:
    usage = "all" if usage is None else usage
    if usage not in _USAGES:
        raise ValueError(
            f"{op}: usage must be one of {list(_USAGES)} or None. Received: usage={usage!r}"
        )
    return usage


def _check_dir(op: str, dataset_dir: Any) -> str:
    if not isinstance(dataset_dir, (str, os.PathLike)):
        raise TypeError(f"{op}: dataset_dir must be a path. Received: {dataset_dir!r}")
    path = os.fspath(dataset_dir)
    if not os.path.isdir(path):
        raise ValueError(f"{op}: dataset_dir '{path}' does not exist or is not a directory")
    return path


def _regular_size(op: str, path: str) -> int:
    """The size of ``path``, which must be a regular file (not a FIFO, device …)."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise MalformedFileError(f"{op}: '{path}' is not a regular file")
    return info.st_size


def _read_bytes(op: str, path: str, offset: int, shape: tuple[int, ...]) -> np.ndarray:
    """The uint8 array of ``shape`` at byte ``offset`` of ``path``, read into memory; a file
    that shrank since its size was checked is a :class:`MalformedFileError` naming it."""
    out = np.empty(shape, np.uint8)
    if out.nbytes == 0:  # a zero dim: nothing to read (and no buffer to cast)
        return out
    with open(path, "rb") as f:
        f.seek(offset)
        got = f.readinto(memoryview(out).cast("B"))
    if got != out.nbytes:
        raise MalformedFileError(
            f"{op}: '{path}' shrank while being read ({got} of {out.nbytes} bytes from byte "
            f"{offset})"
        )
    return out


class _VisionSet(ArraySource):
    """Common arguments of the four data sets (MindSpore's signature)."""

    default_workers = None  # config's default

    def __init__(
        self,
        dataset_dir: str,
        usage: str | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        op = self.op_name
        self.dataset_dir = _check_dir(op, dataset_dir)
        self.usage = _check_usage(op, usage)
        check_cache(op, cache)
        parts, self.files = self._open(self.dataset_dir, self.usage)
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id
        )
        super().__init__(Slices(parts), self.column_names, options)

    column_names: tuple[str, ...] = ("image", "label")

    def _open(self, folder: str, usage: str) -> tuple[list[list[np.ndarray]], list[str]]:
        raise NotImplementedError  # each data set reads its layout

    def class_labels(self, column: str) -> np.ndarray | None:
        if column not in self._columns or column == "image":
            return None
        k = self._columns.index(column)
        labels = getattr(self, "_labels", None)
        if labels is None:  # the label columns of every file, joined once
            labels = self._labels = {
                name: np.concatenate([part[j] for part in self.source.parts])
                for j, name in enumerate(self._columns)
                if name != "image"
            }
        return labels[self._columns[k]]

    def _sample_name(self, index: int) -> str:
        k = int(np.searchsorted(self.source.offsets, index, side="right")) - 1
        return f"row {index - int(self.source.offsets[k])} of '{self.files[k]}'"


# ---------------------------------------------------------------------------- MNIST
_MNIST_SPLITS = {"train": ("train",), "test": ("t10k",), "all": ("train", "t10k")}


def _names(folder: str) -> list[str]:
    """The entries of ``folder``, sorted by name (MindSpore's file order)."""
    return sorted(os.listdir(folder))


def _mnist_files(op: str, folder: str, usage: str, kind: str) -> list[str]:
    """The ``kind`` ("images" or "labels") files of ``usage`` in ``folder``, by name: every
    entry whose name holds ``train-<kind>`` / ``t10k-<kind>`` (MindSpore accepts
    ``train-images-idx3-ubyte`` and ``train-images.idx3-ubyte`` alike, and reads every match),
    sorted; ``.gz`` files are left out (MindSpore reads them and fails on the magic number)."""
    keys = [f"{split}-{kind}" for split in _MNIST_SPLITS[usage]]
    return [
        os.path.join(folder, name)
        for name in _names(folder)
        if any(key in name for key in keys) and not name.endswith(".gz")
    ]


#: Largest row of an empty idx file (shape ``(0, h, w)``): its rows hold no bytes, so only
#: the shape can be absurd; NumPy refuses shapes whose product passes ``2**63``.
_MAX_IDX_ITEM_BYTES = 1 << 40


def _idx(op: str, path: str, magic: int, dims: int) -> np.ndarray:
    """An idx file (``magic``: 0x801 labels, 0x803 images) read after its header.

    The declared shape must account for the file's size exactly (computed in Python ints, so
    no dimension can overflow the check); otherwise a :class:`MalformedFileError` names the
    file.
    """
    size = _regular_size(op, path)
    header = 4 + 4 * dims
    if size < header:
        raise MalformedFileError(f"{op}: '{path}' is shorter than an idx header")
    with open(path, "rb") as f:
        found, *shape = struct.unpack(f">I{dims}I", f.read(header))
    if found != magic:
        raise MalformedFileError(
            f"{op}: '{path}' is not an idx file of {dims} dimension(s) of uint8 (magic "
            f"{found:#010x}, expected {magic:#010x})"
        )
    # the product in Python ints: NumPy's int64 product wraps around for dimensions such as
    # 2**32-1 x 2**32-1 x 2**32-1, and a header that "holds" 0 x 2**32-1 x 2**32-1 bytes
    # would still be an array NumPy refuses to describe ("array is too big")
    declared = math.prod(shape)
    if header + declared != size:
        raise MalformedFileError(
            f"{op}: '{path}' declares shape {tuple(shape)} ({declared} bytes) but "
            f"holds {size - header} bytes after its header"
        )
    if shape[0] == 0:
        if math.prod(shape[1:]) > _MAX_IDX_ITEM_BYTES:
            raise MalformedFileError(
                f"{op}: '{path}' declares shape {tuple(shape)}: no rows, but rows of "
                f"{math.prod(shape[1:])} bytes (at most {_MAX_IDX_ITEM_BYTES}); not an idx "
                "file jisu can describe"
            )
        return np.zeros(shape, np.uint8)
    return _read_bytes(op, path, header, tuple(shape))


class MnistDataset(_VisionSet):
    """MNIST from its idx files (``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
    ``t10k-…``) in ``dataset_dir``: rows ``(image (28, 28, 1) uint8, label uint32)``.

    Args:
        dataset_dir: the folder holding the four files (uncompressed, as MindSpore reads
            them).
        usage: "train" (60,000 rows), "test" (10,000) or "all"/None: the files present, found
            by name as MindSpore finds them — every file whose name holds ``train-images`` /
            ``t10k-images`` (and its ``-labels`` partner; ``.gz`` files are left out), all
            of them in name order, so "all" reads t10k then train, or only the split that is
            there (MindSpore's tutorial layout ``MNIST_Data/train`` holds only the train
            files). An error names ``usage`` when no images file is found.
        num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id: as in
            :class:`GeneratorDataset` (shuffled by default); ``sampler`` may be a
            :class:`PKSampler`.
        cache: only None (jisu has no cache server).
    """

    def _open(self, folder: str, usage: str) -> tuple[list[list[np.ndarray]], list[str]]:
        op = self.op_name
        images_files = _mnist_files(op, folder, usage, "images")
        labels_files = _mnist_files(op, folder, usage, "labels")
        if not images_files:
            kinds = " or ".join(f"'{s}-images'" for s in _MNIST_SPLITS[usage])
            raise ValueError(
                f"{op}: no {kinds} idx file (e.g. {_MNIST_SPLITS[usage][0]}-images-idx3-ubyte, "
                f"uncompressed) in '{folder}' for usage={usage!r}"
            )
        if len(images_files) != len(labels_files):  # paired by name order, as MindSpore
            raise ValueError(
                f"{op}: '{folder}' holds {len(images_files)} images file(s) but "
                f"{len(labels_files)} labels file(s) for usage={usage!r}: "
                f"{[os.path.basename(p) for p in images_files]} and "
                f"{[os.path.basename(p) for p in labels_files]}"
            )
        parts = []
        for images_path, labels_path in zip(images_files, labels_files):
            images = _idx(op, images_path, 0x803, 3)
            labels = _idx(op, labels_path, 0x801, 1)
            if len(images) != len(labels):
                raise MalformedFileError(
                    f"{op}: '{images_path}' holds {len(images)} images but '{labels_path}' "
                    f"{len(labels)} labels"
                )
            parts.append([images[..., None], np.asarray(labels, dtype=np.uint32)])
        return parts, images_files


class FashionMnistDataset(MnistDataset):
    """Fashion-MNIST: the same idx layout and file names as :class:`MnistDataset`."""


# ---------------------------------------------------------------------------- CIFAR
def _cifar_records(op: str, path: str, labels: int) -> np.ndarray:
    """A CIFAR binary file: records of ``labels`` label bytes and a 3x32x32 CHW image.

    Only the binary version is read, as raw bytes: the Python version's pickles are never
    unpickled (unpickling runs code), so a pickle named like a binary file is refused by its
    size or read as bytes."""
    width = labels + 3072
    size = _regular_size(op, path)
    if size % width:
        raise MalformedFileError(
            f"{op}: '{path}' holds {size} bytes, not a whole number of {width}-byte records "
            "(is it the CIFAR binary version?)"
        )
    if size == 0:
        return np.zeros((0, width), np.uint8)
    return _read_bytes(op, path, 0, (size // width, width))


def _cifar_part(records: np.ndarray, labels: int) -> list[np.ndarray]:
    """The images as stored (CHW; :func:`chw_to_hwc` turns gathered ones around) and the
    label columns (read into memory: a few bytes a row)."""
    images = records[:, labels:].reshape(-1, 3, 32, 32)
    return [images, *(np.asarray(records[:, k], dtype=np.uint32) for k in range(labels))]


def chw_to_hwc(images: np.ndarray) -> np.ndarray:
    """``(n, 3, h, w)`` uint8 images as a C-contiguous ``(n, h, w, 3)`` array. OpenCV's
    ``merge`` interleaves the planes 20x faster than NumPy's transposing copy (36 us against
    720 us for 256 CIFAR images here)."""
    n, channels, height, width = images.shape
    if n == 0:
        return np.zeros((0, height, width, channels), images.dtype)
    import cv2

    planes = [images[:, c].reshape(n, height * width) for c in range(channels)]
    return cv2.merge(planes).reshape(n, height, width, channels)


class _CifarSet(_VisionSet):
    #: what a file's name holds for each split (MindSpore's rule: any ``.bin`` file, lower
    #: case, whose name holds the word)
    split_words: ClassVar[dict[str, str]] = {}
    label_bytes = 1

    def _open(self, folder: str, usage: str) -> tuple[list[list[np.ndarray]], list[str]]:
        # the files present, by name: MindSpore's tutorial and model-zoo folders hold one
        # or two batches (cifar-10-verify-bin: test_batch.bin alone)
        words = list(self.split_words.values()) if usage == "all" else [self.split_words[usage]]
        files = [
            os.path.join(folder, name)
            for name in _names(folder)
            if name.endswith(".bin") and any(word in name for word in words)
        ]
        if not files:
            wanted = " or ".join(f"'{word}'" for word in words)
            raise ValueError(
                f"{self.op_name}: no CIFAR binary file (a .bin file whose name holds {wanted}) "
                f"in '{folder}' for usage={usage!r}"
            )
        parts = [
            _cifar_part(_cifar_records(self.op_name, path, self.label_bytes), self.label_bytes)
            for path in files
        ]
        return parts, files

    def _read(self, ctx: Any, index: int) -> tuple:
        image, *labels = self.source.row(index)
        return (chw_to_hwc(image[None])[0], *labels)  # HWC, contiguous, like MindSpore

    def _finish(self, columns: list[np.ndarray]) -> list[np.ndarray]:
        return [chw_to_hwc(columns[0]), *columns[1:]]


class Cifar10Dataset(_CifarSet):
    """CIFAR-10, binary version (``data_batch_1.bin`` … ``data_batch_5.bin``,
    ``test_batch.bin`` in ``dataset_dir``): rows ``(image (32, 32, 3) uint8, label uint32)``.

    Arguments as in :class:`MnistDataset`. The files are those present, found by name as
    MindSpore finds them: ``usage="train"`` reads every ``.bin`` file whose name holds
    ``data_batch``, ``"test"`` those holding ``test_batch``, ``"all"`` (or None) both, in name
    order (``data_batch_1.bin`` … ``data_batch_5.bin``, then ``test_batch.bin``); a folder
    holding one batch is read as it is. An error names ``usage`` when no file is found.
    Unlike MindSpore, a file of any whole number of records is read whole (MindSpore reads
    the first 10,000 records of each file and fails on shorter ones).
    """

    split_words: ClassVar[dict[str, str]] = {"train": "data_batch", "test": "test_batch"}


class Cifar100Dataset(_CifarSet):
    """CIFAR-100, binary version (``train.bin``, ``test.bin`` in ``dataset_dir``): rows
    ``(image (32, 32, 3) uint8, coarse_label uint32, fine_label uint32)``.

    Arguments as in :class:`MnistDataset`. The files are found by name as MindSpore finds
    them: ``usage="train"`` reads every ``.bin`` file whose name holds ``train``, ``"test"``
    those holding ``test``, ``"all"`` (or None) both, in name order (``test.bin``, then
    ``train.bin``); other ``.bin`` files are left out (MindSpore's ``"all"`` fails on them). A
    file of any whole number of records is read whole (MindSpore reads 10,000 records of a
    test file and 50,000 of a train file). A :class:`PKSampler` draws from the classes of
    ``coarse_label``, as MindSpore's does, for its default ``class_column="label"`` (name
    ``"fine_label"`` to draw from those).
    """

    column_names = ("image", "coarse_label", "fine_label")
    split_words: ClassVar[dict[str, str]] = {"train": "train", "test": "test"}
    label_bytes = 2

    def class_labels(self, column: str) -> np.ndarray | None:
        return super().class_labels("coarse_label" if column == "label" else column)
