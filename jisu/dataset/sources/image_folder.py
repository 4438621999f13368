"""ImageFolderDataset: (image, label) rows from a class-per-subfolder tree of image files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..record.convert import ImageFiles, list_image_folder
from .generator import Source
from .options import ReadOptions


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
        sampler: a sampler or an iterable of indices (not with ``shuffle`` or shards).

    A file that cannot be read (a dangling symlink, no permission) or, with ``decode``,
    decoded fails the iteration with an error naming it; in error samples mode "skip" it is
    left out and counted instead (see :class:`GeneratorDataset`).
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
    ) -> None:
        paths, labels, indexing = list_image_folder(dataset_dir, extensions, class_indexing)
        self.class_indexing = indexing
        source = ImageFiles(dataset_dir, paths, labels, names=False, decode=decode)
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

    def get_class_indexing(self) -> dict[str, int]:
        """The folder-name-to-label mapping in use."""
        return dict(self.class_indexing)
