"""What VOCDataset and CocoDataset share: files confined to the data set, and image rows.

Both sources take file names from an annotation file, so every file they open goes through
:class:`DataFolder` (it must resolve inside ``dataset_dir``, links included) and
:func:`_read_capped` (a regular file, refused over a size cap before it is read). The rows are
:class:`_ImageRows`: the image (and a second image such as a mask) read at each access, as
bytes or decoded, with ``decrypt`` applied, then the annotation columns parsed when the data
set was built. Kept apart from :mod:`.voc` so that :mod:`.coco` uses them without importing
the VOC source.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..record.validate import MalformedFileError, open_regular
from .generator import Source

_UINT32_MAX = (1 << 32) - 1
#: Values beyond it would become inf in a float32 column
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_bool(op: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be a bool. Received: {name}={value!r}")
    return value


def _check_str(op: str, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{op}: {name} must be a str. Received: {name}={value!r}")
    return value


def _check_decrypt(op: str, decrypt: Any) -> Callable[[str], bytes] | None:
    if decrypt is not None and not callable(decrypt):
        raise TypeError(
            f"{op}: decrypt must be a callable taking a file path and returning its decrypted "
            f"bytes, or None. Received: decrypt={decrypt!r}"
        )
    return decrypt


def _read_capped(
    op: str, path: str, limit: int, what: str, folder: DataFolder | None = None
) -> bytes:
    """The bytes of the regular file ``path`` (a ``what``: "annotation file" …), refused
    (naming it) beyond ``limit`` bytes, and, with ``folder``, when it resolves outside it.

    Raises:
        ValueError: ``path`` does not exist.
        MalformedFileError: ``path`` is not a regular file (a FIFO, a folder), is too large,
            or leads out of ``folder``.
    """
    real = path if folder is None else folder.resolve(path, what)
    try:
        fd = open_regular(real)
    except FileNotFoundError:
        raise ValueError(f"{op}: the {what} '{path}' does not exist") from None
    with open(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise MalformedFileError(
                path, f"is {size} bytes; {op} refuses {what}s over {limit} bytes"
            )
        # read what the file holds, not ``limit`` bytes: ``read(n)`` allocates n bytes at
        # once (4 GiB of address space for every COCO file, fatal under a memory limit)
        parts = [f.read(size + 1)]
        total = len(parts[0])
        while total > size and total <= limit:  # grew while being read: the rest, in steps
            part = f.read(min(1 << 20, limit + 1 - total))
            if not part:
                break
            parts.append(part)
            total += len(part)
    if total > limit:
        raise MalformedFileError(path, f"is larger than {limit} bytes")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _inside(path: str, folder: str) -> bool:
    """Whether the real path ``path`` is ``folder`` (a real path) or below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class DataFolder:
    """The folder an annotation-driven source (VOC, COCO) may read files from, so that a file
    name taken from an annotation file cannot lead elsewhere through a symbolic link.

    The rule: a file is read only if its real path (every link resolved) lies inside the real
    path of ``root`` (so ``root`` itself may be a link, and links inside it may point within
    it), or, when the file that lists the names (``listed_in``) is itself a link, directly in
    the folder that file links into: a download cache such as Hugging Face's keeps every file
    of a snapshot as a link into one ``blobs`` folder (the rule of
    :func:`~jisu.dataset.record.validate.open_regular` for record manifests). Checked when a
    file is opened; the resolved path is what is opened.

    Args:
        op: the source's name, for messages.
        root: ``dataset_dir``.
        listed_in: the annotation file or image-set list naming the files, or None.
    """

    def __init__(self, op: str, root: str, listed_in: str | None = None) -> None:
        self.op = op
        self.root = root
        self.real_root = os.path.realpath(root)
        self.cache_folder: str | None = None
        if listed_in is not None and os.path.islink(listed_in):
            self.cache_folder = os.path.dirname(os.path.realpath(listed_in))

    def resolve(self, path: str, what: str = "file") -> str:
        """The real path of ``path`` (a ``what``: "image", "annotation file" ...).

        Raises:
            MalformedFileError: ``path`` resolves outside the folder, naming it, where it
                leads and the link that leads there.
        """
        real = os.path.realpath(path)
        if _inside(real, self.real_root) or (
            self.cache_folder is not None and os.path.dirname(real) == self.cache_folder
        ):
            return real
        link = self._link_out(path)
        via = f"the symbolic link '{link}' -> '{_readlink(link)}'"
        raise MalformedFileError(
            path,
            f"the {what} resolves to '{real}' through {via}, outside dataset_dir "
            f"'{self.root}' (real path '{self.real_root}'); {self.op} reads only files inside "
            "dataset_dir, as their names come from a data-set file. Copy the file into the "
            "folder, or pass the folder the link leads to as dataset_dir",
        )

    def _link_out(self, path: str) -> str:
        """The first link on the way from ``root`` to ``path`` that leads out of the folder."""
        relative = os.path.relpath(path, self.root)
        prefix = self.root
        for part in relative.split(os.sep):
            prefix = os.path.join(prefix, part)
            if os.path.islink(prefix) and not _inside(os.path.realpath(prefix), self.real_root):
                return prefix
        return path


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


class _ImageRows:
    """Random-access rows: the image (and optionally a second image file, e.g. a mask) read
    at ``__getitem__``, then the annotation columns parsed at construction, then the
    ``_meta-filename`` column when asked for.

    Args:
        images: image paths.
        masks: paths of a second image column (VOC's segmentation targets), or None.
        annotations: per row, a tuple of annotation arrays (copied at each read, so a
            consumer writing into a row cannot change the data set), or None.
        meta: per row, the ``_meta-filename`` value, or None (no such column).
        decode: decode the image files (HWC uint8 RGB) instead of returning their bytes.
        decrypt: a callable returning a file's decrypted bytes from its path, or None.
        folder: where the files must resolve (:class:`DataFolder`), checked at each read
            (before ``decrypt`` too); None: anywhere.
    """

    def __init__(
        self,
        images: list[str],
        masks: list[str] | None,
        annotations: list[tuple[Any, ...]] | None,
        meta: list[str] | None,
        decode: bool,
        decrypt: Callable[[str], Any] | None,
        folder: DataFolder | None = None,
    ) -> None:
        self.images = np.array(images)  # one buffer, not a list of str objects
        self.masks = None if masks is None else np.array(masks)
        self.annotations = annotations
        self.meta = None if meta is None else np.array(meta)
        self.decode = decode
        self.decrypt = decrypt
        self.folder = folder

    def __len__(self) -> int:
        return len(self.images)

    def _load(self, path: str) -> np.ndarray:
        from ..vision.decode import FileBytes

        real = path if self.folder is None else self.folder.resolve(path, "image")
        if self.decrypt is not None:
            data = self.decrypt(path)
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(
                    f"decrypt must return bytes; it returned {type(data).__name__} for '{path}'"
                )
            raw = np.frombuffer(bytes(data), dtype=np.uint8)
        else:
            try:
                fd = open_regular(real)  # a FIFO named like an image is refused, not waited on
            except FileNotFoundError:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None
            with open(fd, "rb") as f:
                raw = np.frombuffer(f.read(), dtype=np.uint8)
        if self.decode:
            from ..vision import Decode

            return Decode().apply(raw)  # errors name the file through the sample name
        return FileBytes.of(raw, path)

    def __getitem__(self, index: int) -> tuple:
        row = [self._load(str(self.images[index]))]
        if self.masks is not None:
            row.append(self._load(str(self.masks[index])))
        if self.annotations is not None:
            row.extend(a.copy() for a in self.annotations[index])
        if self.meta is not None:
            row.append(np.array(str(self.meta[index])))
        return tuple(row)


class _ImageSource(Source):
    """Common parts of VOCDataset and CocoDataset (MindSpore's mappable vision sources)."""

    default_workers = None  # config's default
    serial_reads = False  # files are opened by path: thread-safe
    builds_indexed_source = True

    def _sample_name(self, index: int) -> str:
        return f"source[{index}] ({self._files_of(index)})"

    def _files_of(self, index: int) -> str:
        raise NotImplementedError
