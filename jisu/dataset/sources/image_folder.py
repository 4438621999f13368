"""ImageFolderDataset: (image, label) rows from a class-per-subfolder tree of image files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..record.convert import IMAGE_EXTENSIONS, ImageFiles, list_image_folder
from ..storage import filesystem, is_url
from .generator import Source
from .options import ReadOptions


def list_remote_image_folder(
    root: str,
    extensions: Sequence[str] | None,
    class_indexing: dict[str, int] | None,
    storage_options: dict | None,
) -> tuple[list[str], list[int], dict[str, int]]:
    """:func:`list_image_folder` for a URL: the same files in the same order (class folders
    sorted, then files sorted by folder and name), as URLs."""
    fs, base = filesystem(root, storage_options)
    protocol = root.split("://", 1)[0]
    base = base.rstrip("/")
    try:
        found = sorted(fs.find(base, withdirs=False, detail=False))
    except FileNotFoundError:
        found = []
    extensions = tuple(e.lower() for e in (extensions or IMAGE_EXTENSIONS))
    by_class: dict[str, list[tuple[str, str]]] = {}
    for path in found:
        relative = path[len(base) + 1 :] if path.startswith(base + "/") else None
        if relative is None or "/" not in relative:  # files beside the class folders
            continue
        name, rest = relative.split("/", 1)
        by_class.setdefault(name, []).append(
            tuple(rest.rsplit("/", 1)) if "/" in rest else ("", rest)
        )
    if not by_class and not found:
        raise FileNotFoundError(f"image folder '{root}' does not exist or is empty")
    classes = sorted(by_class)
    if not class_indexing:  # None or {}: sorted folder names (MindSpore's rule)
        class_indexing = {name: i for i, name in enumerate(classes)}
    paths, labels = [], []
    for name in classes:
        if name not in class_indexing:
            continue
        for folder, file in sorted(by_class[name]):  # os.walk's order, sorted as locally
            if file.lower().endswith(extensions):
                inner = f"{name}/{folder}/{file}" if folder else f"{name}/{file}"
                paths.append(f"{protocol}://{base}/{inner}")
                labels.append(class_indexing[name])
    if not paths:
        raise ValueError(
            f"image folder '{root}' has no images with extensions {extensions} in class subfolders"
        )
    return paths, labels, class_indexing


class RemoteImageFiles(ImageFiles):
    """:class:`ImageFiles` whose files are URLs, each read with one GET. Pickles by its
    filesystem options (a worker process opens its own filesystem)."""

    def __init__(self, *args: Any, storage_options: dict | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage_options = storage_options
        self._fs: Any = None

    remote = True

    def _read_remote(self, path: str) -> np.ndarray:
        if self._fs is None:
            self._fs = filesystem(path, self.storage_options)[0]
        try:
            data = self._fs.cat_file(self._fs._strip_protocol(path))
        except FileNotFoundError:
            raise FileNotFoundError(f"'{path}' does not exist (any more)") from None
        return np.frombuffer(data, dtype=np.uint8)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_fs": None}


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
        storage_options: for a URL ``dataset_dir`` (``s3://bucket/train``, ``gs://``,
            ``hf://``, any fsspec URL): the filesystem's options (endpoint, credentials); by
            default the environment's (``AWS_ENDPOINT_URL``...). The folder is listed once;
            each image is read with one request. Needs ``pip install "jisu[s3]"``.

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
        storage_options: dict | None = None,
    ) -> None:
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
            )
        else:
            paths, labels, indexing = list_image_folder(dataset_dir, extensions, class_indexing)
            source = ImageFiles(dataset_dir, paths, labels, names=False, decode=decode)
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

    def get_class_indexing(self) -> dict[str, int]:
        """The folder-name-to-label mapping in use."""
        return dict(self.class_indexing)
