"""ImageFolderDataset: (image, label) rows from a class-per-subfolder tree of image files."""

from __future__ import annotations

import errno
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..record.convert import IMAGE_EXTENSIONS, ImageFiles
from ..storage import filesystem, is_url
from .generator import Source
from .options import ReadOptions


def _path_max() -> int:
    try:
        return int(os.pathconf("/", "PC_PATH_MAX"))
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows): Linux's value
        return 4096


#: Longest path, in bytes, a file can be opened by (the system's ``PATH_MAX``, 4096 on Linux).
#: A file or folder under an image folder whose path is longer is an error when the folder is
#: listed: it could be listed (by descriptor) but never opened by its name.
PATH_MAX = _path_max()


def _shown(path: str) -> str:
    """``path`` for a message: whole, or its start and end when it is very long."""
    return path if len(path) <= 240 else f"{path[:100]}...{path[-100:]} ({len(path)} characters)"


def _too_long(root: str, path: str) -> ValueError:
    size = len(os.fsencode(path))
    return ValueError(
        f"image folder '{_shown(root)}': the path '{_shown(path)}' is {size} bytes, at least "
        f"PATH_MAX ({PATH_MAX}); it cannot be opened by its name, so it is refused rather than "
        "left out. Shorten the folder names or move the files up"
    )


def _files_under(root: str, folder: str, linked_folders: list[str]) -> list[tuple[str, list[str]]]:
    """``(folder path, sorted file names)`` of ``folder`` and every folder below it, in the
    order of ``sorted(os.walk(folder))`` (by folder path); the links to folders met (not
    descended into) are appended to ``linked_folders``.

    Walked with an explicit stack, so a tree thousands of folders deep is listed (``os.walk``
    recurses: a ``RecursionError`` near 1,000 levels). As ``os.walk``: entries that are (links
    to) folders are not files; links to folders are not descended into (so a link cannot make
    a loop). Unlike ``os.walk``, which skips what it cannot list, a folder that cannot be
    listed, or a path of :data:`PATH_MAX` bytes or more, is an error naming it: no file is
    left out silently.
    """
    found = []
    pending = [folder]
    while pending:
        current = pending.pop()
        if len(os.fsencode(current)) >= PATH_MAX:
            raise _too_long(root, current)
        try:
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                raise _too_long(root, current) from None
            raise type(exc)(
                exc.errno,
                f"image folder '{_shown(root)}': cannot list '{_shown(current)}' "
                f"({exc.strerror}); fix its permissions or remove it",
                current,
            ) from None
        files = []
        for entry in entries:
            try:
                is_folder = entry.is_dir()  # follows a link, as os.walk
            except OSError:  # e.g. a link loop: not a folder, so a file (dangling links too)
                is_folder = False
            if not is_folder:
                files.append(entry.name)
            elif not entry.is_symlink():
                pending.append(entry.path)
            else:
                linked_folders.append(entry.path)
        found.append((current, sorted(files)))
    found.sort(key=lambda item: item[0])
    return found


def list_local_image_folder(
    root: str, extensions: Sequence[str] | None = None, class_indexing: dict[str, int] | None = None
) -> tuple[list[str], list[int], dict[str, int]]:
    """Image files of a local class-per-subfolder tree, sorted, with their class labels.

    Labels follow ``class_indexing`` or, by default, the sorted folder names (MindSpore's
    rule). Files are ordered by class, then folder path, then name (``os.walk``'s folders,
    sorted). Links to files are followed and a class folder may be a link; links to folders
    inside a class folder are not descended into (``os.walk``'s rule: no loops), with a
    ``UserWarning`` naming them so that their files are not lost unseen. Use
    :func:`files_outside` to find the files that resolve outside ``root``.

    Raises:
        FileNotFoundError: ``root`` is not a folder.
        ValueError: no image in the class folders, or a path of :data:`PATH_MAX` bytes or more.
        OSError: a folder below ``root`` cannot be listed (named).
    """
    if not os.path.isdir(root):
        raise FileNotFoundError(f"image folder '{root}' does not exist")
    extensions = tuple(e.lower() for e in (extensions or IMAGE_EXTENSIONS))
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not class_indexing:  # None or {} (MindSpore's default too): sorted folder names
        class_indexing = {name: i for i, name in enumerate(classes)}
    paths, labels = [], []
    linked: list[str] = []
    for name in classes:
        if name not in class_indexing:
            continue
        for folder, files in _files_under(root, os.path.join(root, name), linked):
            for file in files:
                if file.lower().endswith(extensions):
                    path = os.path.join(folder, file)
                    if len(os.fsencode(path)) >= PATH_MAX:
                        raise _too_long(root, path)
                    paths.append(path)
                    labels.append(class_indexing[name])
    if linked:
        shown = ", ".join(f"'{_shown(p)}'" for p in sorted(linked)[:3])
        warnings.warn(
            f"image folder '{_shown(root)}': {len(linked)} link(s) to folders inside class "
            f"folders are not followed, so their files are not read: {shown}"
            f"{' ...' if len(linked) > 3 else ''}. Link the files instead, or make the "
            "folder a class folder of its own",
            UserWarning,
            stacklevel=3,
        )
    if not paths:
        raise ValueError(
            f"image folder '{root}' has no images with extensions {extensions} in class subfolders"
        )
    return paths, labels, class_indexing


def _inside(path: str, folder: str) -> bool:
    """Whether the real path ``path`` is ``folder`` (a real path) or below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def files_outside(root: str, paths: Sequence[str]) -> list[tuple[str, str]]:
    """``(path, real path)`` of each of ``paths`` (files under ``root``) that resolves, through
    symbolic links, outside ``root``'s real path; in the order of ``paths``.

    Cheap enough to run on every conversion: one ``lstat`` per file, plus one ``realpath``
    per folder and per file that is itself a link (a million files: about a second).
    A dangling link resolves to where it points.
    """
    real_root = os.path.realpath(root)
    real_folders: dict[str, str] = {}
    out = []
    for path in paths:
        path = str(path)
        if os.path.islink(path):
            real = os.path.realpath(path)
        else:
            folder, name = os.path.split(path)
            real_folder = real_folders.get(folder)
            if real_folder is None:
                real_folder = real_folders[folder] = os.path.realpath(folder)
            real = os.path.join(real_folder, name)
        if not _inside(real, real_root):
            out.append((path, real))
    return out


def list_remote_image_folder(
    root: str,
    extensions: Sequence[str] | None,
    class_indexing: dict[str, int] | None,
    storage_options: dict | None,
) -> tuple[list[str], list[int], dict[str, int]]:
    """:func:`list_local_image_folder` for a URL: the same files in the same order (class folders
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
            paths, labels, indexing = list_local_image_folder(
                dataset_dir, extensions, class_indexing
            )
            source = ImageFiles(dataset_dir, paths, labels, names=False, decode=decode)
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
