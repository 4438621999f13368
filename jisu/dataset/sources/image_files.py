"""Image files on disk or in object storage: a class-per-subfolder tree's walk, and its files
as a random-access source of (encoded bytes, label[, name]).

Shared by ``ImageFolderDataset`` and ``ManifestDataset`` (the sources) and by ``jisu convert``
(:mod:`jisu.dataset.record.image_files`), which packs such a folder into a record data set.
"""

from __future__ import annotations

import errno
import os
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.error_types import MissingFolderError
from ..record.storage import filesystem
from ..record.validate import open_regular

__all__ = [
    "IMAGE_EXTENSIONS",
    "MAX_FILE_SIZE",
    "ImageFiles",
    "RemoteImageFiles",
    "check_file_size",
    "file_size_cap",
    "files_outside",
    "list_local_image_folder",
    "list_remote_image_folder",
]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")

#: The largest image file read whole (``ImageFolderDataset``, ``jisu convert``) unless a
#: ``max_file_size`` says otherwise: 1 GiB, checked from ``stat`` before a byte is read. A file
#: is read into memory at once (and ``jisu convert`` reads 512 at a time), so a sparse or
#: runaway file of tens of GiB would otherwise fail in ``malloc`` naming nothing. 1 GiB is
#: four times the decoded size of the largest image Pillow opens without a
#: ``DecompressionBombWarning`` (89.5 megapixels of RGB, 268 MB); encoded files are smaller
#: still. Set this (or pass ``max_file_size``) to change it for the process.
MAX_FILE_SIZE = 1 << 30

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def file_size_cap(value: int | str | None, op: str) -> int:
    """The cap in bytes that ``max_file_size=value`` means for ``op``: None is
    :data:`MAX_FILE_SIZE`; a positive int is bytes; a string is bytes with an optional unit
    (``"4GiB"``, ``"500M"``, ``"2g"``: powers of 1024).

    Raises:
        TypeError: ``value`` is neither.
        ValueError: not positive, or a string that is not a size.
    """
    if value is None:
        return MAX_FILE_SIZE
    if isinstance(value, str):
        found = re.fullmatch(r"(\d+)\s*(?:([kmgt])(?:ib|b)?|b)?", value.strip().lower())
        if found and int(found[1]) > 0:
            return int(found[1]) * _UNITS[found[2] or ""]
    elif isinstance(value, int) and not isinstance(value, bool):
        if value > 0:
            return value
    else:
        raise TypeError(
            f"{op}: max_file_size must be an int (bytes), a size such as '4GiB' or None. "
            f"Received: max_file_size={value!r}"
        )
    raise ValueError(
        f"{op}: max_file_size must be a positive number of bytes, or a size such as '4GiB' or "
        f"'500MiB'. Received: max_file_size={value!r}"
    )


def check_file_size(path: str, size: int, cap: int, raise_it: str) -> None:
    """Refuse the file ``path`` of ``size`` bytes if it is over ``cap`` (before it is read),
    naming the file, its size, the cap and ``raise_it`` (how to raise the cap).

    Raises:
        ValueError: the file is over the cap.
    """
    if size > cap:
        raise ValueError(
            f"'{path}' is {size} bytes ({size / (1 << 30):.1f} GiB), over the cap of {cap} "
            f"bytes on one image file (a sparse or runaway file?); if it is genuine, raise the "
            f"cap: {raise_it}"
        )


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
        MissingFolderError: ``root`` is not a folder (a FileNotFoundError and, as in
            MindSpore, a ValueError).
        ValueError: no image in the class folders, or a path of :data:`PATH_MAX` bytes or more.
        OSError: a folder below ``root`` cannot be listed (named).
    """
    if not os.path.isdir(root):
        raise MissingFolderError(f"image folder '{root}' does not exist")
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
        raise MissingFolderError(f"image folder '{root}' does not exist or is empty")
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


class ImageFiles:
    """Random-access source of (encoded bytes, label[, path relative to ``root``]).

    Files are opened with :func:`~jisu.dataset.record.validate.open_regular`: anything but a
    regular file (a FIFO, a device) is refused with a ``MalformedFileError`` naming it instead
    of hanging the read. With ``decode``, a decode error (``DecompressionBombError``, a
    ``ValueError`` for a corrupt file) propagates with its type; the file is named by the
    dataset's sample name (``ImageFolderDataset: reading source[i] ('path') failed``).

    A file over ``max_file_size`` bytes (:data:`MAX_FILE_SIZE` by default) is refused before
    it is read, naming it (a local file's size from ``fstat``; of a URL, at most the cap and
    one byte are requested).
    """

    remote = False  # files are URLs, read by ``_read_remote`` (see ``RemoteImageFiles``)

    def __init__(
        self,
        root: str,
        paths: list[str],
        labels: list[int],
        names: bool = True,
        decode: bool = False,
        decrypt: Callable[[str], bytes] | None = None,
        max_file_size: int | None = None,
        raise_it: str = "pass max_file_size=",
    ) -> None:
        self.root = root
        self.paths = np.array(paths)  # one buffer, not a list of objects (see worker memory)
        self.labels = np.asarray(labels, dtype=np.int32)
        self.names = names
        self.decode = decode
        self.decrypt = decrypt  # path -> the file's decrypted bytes (ImageFolderDataset's)
        self.max_file_size = MAX_FILE_SIZE if max_file_size is None else max_file_size
        self.raise_it = raise_it  # how a user raises the cap, for the error

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple:
        path = str(self.paths[index])
        from ..vision.decode import FileBytes

        if self.remote:  # object storage (RemoteImageFiles)
            raw = self._read_remote(path)
        elif self.decrypt is not None:
            raw = self._decrypted(path)
        else:
            try:
                fd = open_regular(path)  # a FIFO named like an image is refused, not waited on
            except FileNotFoundError:
                # the OS's error, with errno and filename, raised where the source reads its file
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None
            with open(fd, "rb") as f:
                self._check_size(path, os.fstat(fd).st_size)
                # at most one byte over the cap: a file that grew since is refused too
                raw = np.frombuffer(f.read(self.max_file_size + 1), dtype=np.uint8)
            self._check_size(path, len(raw))
        if self.decode:
            from ..vision import Decode

            # errors keep their type (DecompressionBombError, ...); the dataset's sample name
            # ("source[i] ('path')") names the file, so Decode gets bare bytes and the path is
            # named once
            data = Decode().apply(raw)
        else:  # bytes that remember their file, so a later Decode's errors can name it
            data = FileBytes.of(raw, path)
        label = self.labels[index : index + 1].reshape(())
        if not self.names:
            return data, label
        return data, label, np.array(os.path.relpath(path, self.root))

    def _check_size(self, path: str, size: int) -> None:
        check_file_size(path, size, self.max_file_size, self.raise_it)

    def _decrypted(self, path: str) -> np.ndarray:
        """``decrypt(path)``'s bytes, after checking that ``path`` is a regular file (a FIFO
        named like an image would hang the user's function) within the size cap."""
        fd = open_regular(path)
        try:
            self._check_size(path, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        data = self.decrypt(path)
        if not isinstance(data, bytes):
            raise TypeError(
                f"decrypt must return the file's decrypted bytes (bytes); it returned "
                f"{type(data).__name__} for '{path}'"
            )
        return np.frombuffer(data, dtype=np.uint8)


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
        try:  # at most one byte over the cap is requested
            data = self._fs.cat_file(
                self._fs._strip_protocol(path), start=0, end=self.max_file_size + 1
            )
        except FileNotFoundError:
            raise FileNotFoundError(f"'{path}' does not exist (any more)") from None
        self._check_size(path, len(data))
        return np.frombuffer(data, dtype=np.uint8)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_fs": None}
