"""ImageFolderDataset: (image, label) rows from a class-per-subfolder tree of image files."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..record.storage import is_url
from .generator import Source
from .image_files import (
    ImageFiles,
    RemoteImageFiles,
    file_size_cap,
    files_outside,
    list_local_image_folder,
    list_remote_image_folder,
)
from .options import ReadOptions, check_cache


class ImageFolderDataset(Source):
    """Rows ``(image, label)`` from ``dataset_dir/<class>/<file>``.

    Args:
        dataset_dir: the root folder; each subfolder is a class.
        num_samples, num_parallel_workers, shuffle, num_shards, shard_id: as in
            :class:`GeneratorDataset` (random access: shuffled by default, read in parallel).
        extensions: file extensions to take (default: common image formats).
        class_indexing: ``{folder name: label}`` (default: sorted folder names -> 0, 1, ...);
            folders not in it are skipped.
        decode: decode images (HWC uint8 RGB) instead of returning their encoded bytes.
        sampler: a sampler or an iterable of indices (not with ``shuffle`` or shards); a
            :class:`PKSampler` draws from the classes of ``label``.
        storage_options: for a URL ``dataset_dir`` (``s3://bucket/train``, ``gs://``,
            ``hf://``, any fsspec URL): the filesystem's options (endpoint, credentials); by
            default the environment's (``AWS_ENDPOINT_URL``...). The folder is listed once;
            each image is read with one request. Needs ``pip install "jisu[s3]"``.
        cache: only None (jisu has no cache server).
        decrypt: ``decrypt(path) -> bytes``, as MindSpore's: called with a file's path (as
            listed) each time the file is read, every epoch (and once for the first file when
            the data set is built, which reads its first row to check it), returning the
            file's decrypted content, which is then decoded (``decode=True``) or is the
            ``image`` column. It must return ``bytes`` (anything else is a ``TypeError``
            naming the file); local folders only. It runs in the reading workers: with
            ``python_multiprocessing=True`` it must pickle (a module-level function).
        max_file_size: the largest file read (each is read whole), in bytes or as a size
            such as ``"4GiB"``; default :data:`~jisu.dataset.sources.image_files.MAX_FILE_SIZE`
            (1 GiB). A larger file (a sparse or runaway file) fails the iteration, naming it,
            before it is read. A jisu extension: MindSpore has no such cap.

    A file that cannot be read (a dangling symlink, no permission) or, with ``decode``,
    decoded fails the iteration with an error naming it; in error samples mode "skip" it is
    left out and counted instead (see :class:`GeneratorDataset`).

    Symbolic links: the files you put (or link) in the folder are what is read. Links to files
    are followed wherever they point (a subset of a larger set is often built from links), a
    class folder may be a link, and links to folders inside a class folder are not descended
    into (a ``UserWarning`` names them). :meth:`files_outside_folder` lists the files that
    resolve outside ``dataset_dir``: ``jisu convert`` refuses to pack them unless asked to
    follow links, since a record file is made to be shared. (The annotation-driven sources,
    :class:`CocoDataset` and :class:`VOCDataset`, refuse such files instead: their file names
    come from a file.)

    Listing is iterative (any depth), and nothing is left out silently: a folder that cannot
    be listed, or a path of :data:`PATH_MAX` bytes or more (which could not be opened), is an
    error naming it.
    """

    default_workers = None  # config's default
    serial_reads = False  # opening files by path is thread-safe
    builds_indexed_source = True

    def __init__(
        self,
        dataset_dir: str,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        extensions: Sequence[str] | None = None,
        class_indexing: dict[str, int] | None = None,
        decode: bool = False,
        num_shards: int | None = None,
        shard_id: int | None = None,
        python_multiprocessing: bool = False,
        sampler: Any = None,
        storage_options: dict | None = None,
        cache: Any = None,
        decrypt: Callable[[str], bytes] | None = None,
        max_file_size: int | str | None = None,
    ) -> None:
        op = type(self).__name__
        check_cache(op, cache)
        cap = file_size_cap(max_file_size, op)
        raise_it = f"pass {op}(..., max_file_size=) (bytes, or a size such as '4GiB')"
        if decrypt is not None and not callable(decrypt):
            raise TypeError(
                f"{op}: decrypt must be a callable (path -> decrypted bytes) or None. "
                f"Received: decrypt={decrypt!r}"
            )
        if decrypt is not None and is_url(dataset_dir):
            raise ValueError(
                f"{op}: decrypt reads local files by path; it is not supported for a URL "
                f"dataset_dir. Received: dataset_dir={dataset_dir!r}"
            )
        if is_url(dataset_dir):
            paths, labels, indexing = list_remote_image_folder(
                dataset_dir, extensions, class_indexing, storage_options
            )
            source: ImageFiles = RemoteImageFiles(
                dataset_dir,
                paths,
                labels,
                names=False,
                decode=decode,
                storage_options=storage_options,
                max_file_size=cap,
                raise_it=raise_it,
            )
        else:
            paths, labels, indexing = list_local_image_folder(
                dataset_dir, extensions, class_indexing
            )
            source = ImageFiles(
                dataset_dir,
                paths,
                labels,
                names=False,
                decode=decode,
                decrypt=decrypt,
                max_file_size=cap,
                raise_it=raise_it,
            )
        self.dataset_dir = dataset_dir
        self._outside: list[tuple[str, str]] | None = None
        self.class_indexing = indexing
        options = ReadOptions(
            num_samples,
            num_parallel_workers,
            shuffle,
            sampler,
            num_shards,
            shard_id,
            python_multiprocessing,
        )
        super().__init__(source, ["image", "label"], options)

    def _sample_name(self, index: int) -> str:
        return f"source[{index}] ('{self.source.paths[index]}')"

    def class_labels(self, column: str) -> np.ndarray | None:
        """Each row's class (the listing's labels, known without reading a file), for
        :class:`PKSampler`; None for a column other than ``label``."""
        return self.source.labels if column == "label" else None

    def get_class_indexing(self) -> dict[str, int]:
        """The folder-name-to-label mapping in use."""
        return dict(self.class_indexing)

    def files_outside_folder(self) -> list[tuple[str, str]]:
        """``(path, real path)`` of the data set's files that resolve, through symbolic links,
        outside ``dataset_dir``'s real path, in row order (``[]`` for a URL: object storage
        has no links). Computed on the first call (see :func:`files_outside`), then kept.

        Example:
            >>> outside = ImageFolderDataset("train").files_outside_folder()
            >>> if outside:
            ...     raise SystemExit(f"{len(outside)} files lead out, e.g. {outside[0]}")
        """
        if self._outside is None:
            if self.source.remote:
                self._outside = []
            else:
                self._outside = files_outside(self.dataset_dir, self.source.paths)
        return list(self._outside)
