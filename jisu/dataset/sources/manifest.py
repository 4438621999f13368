"""ManifestDataset: (image, label) rows listed by a manifest file (MindSpore's / ModelArts'
format: one JSON object per line)."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ..record.validate import MalformedFileError, open_regular
from .generator import Source
from .image_files import ImageFiles
from .options import ReadOptions, check_cache

_USAGES = ("train", "eval", "inference")
MAX_MANIFEST = 1 << 30  # bytes read from a manifest at most
_MAGIC = (b"\xff\xd8\xff", b"\x89PN", b"GIF", b"BM")  # JPEG, PNG, GIF, BMP (MindSpore's test)


def _image_kind(path: str, manifest: str) -> bool:
    """Whether ``path`` starts like a JPEG, PNG, GIF or BMP file (MindSpore reads 3 bytes)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        head = f.read(3)
    if len(head) < 3:
        raise MalformedFileError(path, f"(listed in '{manifest}') has fewer than 3 bytes")
    return head.startswith(_MAGIC)


class _Labelled(ImageFiles):
    """Image files whose label is a scalar (one class) or a 1-D array (several)."""

    def __init__(self, paths: list[str], labels: list[list[int]], decode: bool) -> None:
        super().__init__("", paths, [0] * len(paths), names=False, decode=decode)
        self.row_labels = [np.asarray(k, dtype=np.int32) for k in labels]
        self.row_labels = [k.reshape(()) if k.size == 1 else k for k in self.row_labels]

    def __getitem__(self, index: int) -> tuple:
        data, _ = super().__getitem__(index)
        return data, self.row_labels[index]


def parse_manifest(
    path: str, usage: str, class_indexing: dict[str, int] | None
) -> tuple[list[str], list[list[int]], dict[str, int]]:
    """The images of ``usage`` a manifest lists, their labels and the class indexing.

    As MindSpore 2.10: each line is a JSON object with ``source`` (an image path; relative
    paths are relative to the working directory), ``usage`` (compared lower-cased) and
    ``annotation`` (a list of ``{"name": label, ...}``; read only for rows of ``usage``).
    Files that do not start like a JPEG, PNG, GIF or BMP are skipped, so are rows left
    without labels. Default indexing: the sorted label names of the rows read -> 0, 1, ...;
    with ``class_indexing``, labels not in it are dropped from their rows.
    """
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_MANIFEST:
            raise MalformedFileError(path, f"is {size} bytes; manifests are read up to 1 GiB")
        lines = f.read().split(b"\n")
    paths: list[str] = []
    names: list[list[str]] = []
    for number, raw in enumerate(lines, 1):
        if number == len(lines) and not raw.strip():
            break  # the newline ending the last line
        where = f"line {number}"
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise MalformedFileError(path, f"{where} is not JSON ({exc})") from None
        if not isinstance(entry, dict):
            raise MalformedFileError(path, f"{where} is not a JSON object")
        source = entry.get("source")
        if not isinstance(source, str) or not source or "\0" in source:
            raise MalformedFileError(path, f"{where}: 'source' must be a non-empty string")
        row_usage = entry.get("usage")
        if not isinstance(row_usage, str) or not row_usage:
            raise MalformedFileError(path, f"{where}: 'usage' must be a non-empty string")
        if row_usage.lower() != usage:
            continue
        source = os.path.abspath(source)  # MindSpore: relative to the working directory
        if not _image_kind(source, path):
            continue
        annotation = entry.get("annotation")
        if not isinstance(annotation, list):
            raise MalformedFileError(path, f"{where}: 'annotation' must be a list of objects")
        labels = []
        for item in annotation:
            name = item.get("name") if isinstance(item, dict) else None
            if not isinstance(name, str) or not name:
                raise MalformedFileError(
                    path, f"{where}: each annotation needs a 'name' that is a non-empty string"
                )
            if not class_indexing or name in class_indexing:
                labels.append(name)
        if labels:
            paths.append(source)
            names.append(labels)
    if class_indexing:
        indexing = dict(class_indexing)
    else:
        indexing = {n: i for i, n in enumerate(sorted({n for row in names for n in row}))}
    if not paths:
        raise ValueError(
            f"ManifestDataset: '{path}' lists no images of usage '{usage}' with labels"
            + (" in class_indexing" if class_indexing else "")
        )
    return paths, [[indexing[n] for n in row] for row in names], indexing


class ManifestDataset(Source):
    """Rows ``(image, label)`` of the images a manifest file lists (MindSpore's format).

    Args:
        dataset_file: the manifest: one JSON object per line, ``{"source": image path,
            "usage": "train" | "eval" | "inference", "annotation": [{"name": label}, ...]}``.
            A relative ``source`` is relative to the working directory (as in MindSpore).
        usage: the rows to read: "train" (default), "eval" or "inference".
        class_indexing: ``{label name: index}`` (default, or ``{}``: the sorted label names
            of the rows read -> 0, 1, ...); labels not in it are dropped, and rows left
            without labels are skipped.
        decode: decode images (HWC uint8 RGB) instead of returning their encoded bytes.
        num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id: as in
            :class:`GeneratorDataset` (random access: shuffled by default).
        cache: only None (jisu has no cache server).

    ``image`` is the file's bytes (uint8, 1-D) or the decoded image; ``label`` is int32, a
    scalar for a row with one label and 1-D (the labels in annotation order) for several.
    Files that do not start like a JPEG, PNG, GIF or BMP file are skipped (MindSpore's test).

    Where files may be: anywhere. Unlike :class:`CocoDataset` and :class:`VOCDataset`, whose
    file names are relative to ``dataset_dir`` and must resolve inside it, a manifest names
    its images by path (absolute ones, as ModelArts writes them, or relative to the working
    directory), so there is no folder to keep to and a symbolic link grants nothing a path
    could not: a manifest is as trusted as a list of paths you would open yourself. Only
    regular files are opened (a FIFO is refused, not waited on), and only files that start
    like an image are served (``/etc/passwd`` is skipped).
    """

    default_workers = None  # config's default
    serial_reads = False  # opening files by path is thread-safe
    builds_indexed_source = True

    def __init__(
        self,
        dataset_file: str,
        usage: str = "train",
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        sampler: Any = None,
        class_indexing: dict[str, int] | None = None,
        decode: bool = False,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        op = "ManifestDataset"
        if not isinstance(dataset_file, (str, os.PathLike)):
            raise TypeError(f"{op}: dataset_file must be a path. Received: {dataset_file!r}")
        usage = "train" if usage is None else usage
        if usage not in _USAGES:
            raise ValueError(f"{op}: usage must be one of {list(_USAGES)}. Received: {usage!r}")
        if class_indexing is not None and (
            not isinstance(class_indexing, dict)
            or not all(isinstance(k, str) for k in class_indexing)
            or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in class_indexing.values()
            )
        ):
            raise TypeError(
                f"{op}: class_indexing must be a dict of str to int. Received: {class_indexing!r}"
            )
        if not isinstance(decode, bool):
            raise TypeError(f"{op}: decode must be a bool. Received: {decode!r}")
        check_cache(op, cache)
        self.dataset_file = os.fspath(dataset_file)
        self.usage = usage
        paths, labels, self.class_indexing = parse_manifest(
            self.dataset_file, usage, class_indexing
        )
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id
        )
        super().__init__(_Labelled(paths, labels, decode), ["image", "label"], options)

    def _sample_name(self, index: int) -> str:
        return f"source[{index}] ('{self.source.paths[index]}')"

    def class_labels(self, column: str) -> np.ndarray | None:
        """Each row's class, for PKSampler (rows with one label only)."""
        labels = self.source.row_labels
        if column != "label" or any(k.ndim for k in labels):
            return None
        return np.array([int(k) for k in labels], dtype=np.int64)

    def get_class_indexing(self) -> dict[str, int]:
        """The label-name-to-index mapping in use."""
        return dict(self.class_indexing)
