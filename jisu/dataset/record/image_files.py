"""Image folders as a conversion source: listing, link checks, reading files and re-encoding.

What ``jisu convert`` needs of a class-per-subfolder image folder: its files and labels
(:func:`list_image_folder`), the refusal to pack files that links lead out of it
(:func:`check_inside`), its files' bytes read straight into Arrow columns on threads
(:func:`folder_chunks`) and the JPEG re-encoder (:func:`reencoder`). The folder's walk and its
random-access source (:class:`ImageFiles`) are the sources'
(:mod:`jisu.dataset.sources.image_files`); kept apart from the writing
(:mod:`~jisu.dataset.record.chunk_writer`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..sources.image_files import (
    IMAGE_EXTENSIONS,
    MAX_FILE_SIZE,
    ImageFiles,
    check_file_size,
    files_outside,
    list_local_image_folder,
)
from .chunk_writer import _CHUNK_ROWS
from .validate import open_regular

__all__ = [
    "IMAGE_EXTENSIONS",
    "RAISE_CAP",
    "ImageFiles",
    "check_inside",
    "check_sizes",
    "folder_chunks",
    "list_image_folder",
    "read_files_column",
    "reencoder",
]


#: how a user of ``jisu convert`` raises the cap on one file's size (for the error)
RAISE_CAP = "add --max-file-size SIZE (such as 4GiB) to jisu convert (convert(max_file_size=))"


def _read_into(paths: list[str], offsets: np.ndarray, buffer: memoryview) -> None:
    """Read each file into its slice of ``buffer`` (no intermediate bytes objects). Files are
    opened with :func:`open_regular`, so a FIFO or device named like an image is refused
    instead of hanging the conversion."""
    for k, path in enumerate(paths):
        start, end = int(offsets[k]), int(offsets[k + 1])
        fd = open_regular(path)
        try:
            got = os.readv(fd, [buffer[start:end]]) if end > start else 0
        finally:
            os.close(fd)
        if got != end - start:
            raise OSError(f"convert: '{path}' changed size while it was being read")


def check_sizes(paths: Sequence[str], cap: int) -> None:
    """Refuse, before anything is read or written, an image folder with a file over ``cap``
    bytes (one ``stat`` per file): the first such file is named, with the cap and how to
    raise it.

    Raises:
        ValueError: a file over the cap.
    """
    for path in paths:
        check_file_size(path, os.stat(path).st_size, cap, RAISE_CAP)


def read_files_column(
    pool: ThreadPoolExecutor, paths: list[str], workers: int, max_file_size: int | None = None
) -> Any:
    """The contents of ``paths`` as one Arrow binary column, read straight into its buffer.

    Each file's size is checked against ``max_file_size`` (default
    :data:`~jisu.dataset.sources.image_files.MAX_FILE_SIZE`) from ``stat``, before the buffer
    is allocated: a sparse 50 GiB ``.jpg`` is refused naming it, not a failed ``malloc``.

    Raises:
        ValueError: a file over the cap, naming it, the cap and how to raise it.
        MemoryError: the chunk's files do not fit in memory (naming the first and the last).
    """
    import pyarrow as pa

    cap = MAX_FILE_SIZE if max_file_size is None else max_file_size
    sizes = np.fromiter((os.stat(p).st_size for p in paths), dtype=np.int64, count=len(paths))
    for k in np.flatnonzero(sizes > cap):  # the first one over the cap
        check_file_size(paths[k], int(sizes[k]), cap, RAISE_CAP)
    offsets = np.zeros(len(paths) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    try:
        data = pa.allocate_buffer(int(offsets[-1]))  # from Arrow's pool: reused, not zeroed
    except MemoryError as exc:  # pyarrow's ArrowMemoryError is one; it names no file
        raise MemoryError(
            f"convert: the {len(paths)} files '{paths[0]}' to '{paths[-1]}' hold "
            f"{int(offsets[-1])} bytes, more than this process can allocate ({exc})"
        ) from None
    view = memoryview(data)
    step = max(1, -(-len(paths) // workers))
    tasks = [
        pool.submit(_read_into, paths[i : i + step], offsets[i : i + step + 1], view)
        for i in range(0, len(paths), step)
    ]
    for task in tasks:
        task.result()
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(paths), [None, pa.py_buffer(offsets), data]
    )


def folder_chunks(
    root: str,
    paths: list[str],
    labels: list[int],
    workers: int,
    file_names: bool = False,
    max_file_size: int | None = None,
) -> Iterator[tuple[int, dict]]:
    """Chunks of (file bytes, label[, name relative to ``root`` with ``file_names``]): the files
    of the next chunk are read on ``workers`` threads while the writer packs this one; a file
    over ``max_file_size`` bytes is an error (see :func:`read_files_column`)."""
    prefix = len(os.path.join(root, ""))
    names = [p[prefix:] for p in paths]  # paths come from os.walk(root)
    with ThreadPoolExecutor(workers) as readers, ThreadPoolExecutor(1) as ahead_pool:

        def submit(start: int) -> Any:
            chunk = paths[start : start + _CHUNK_ROWS]
            if not chunk:
                return None
            return ahead_pool.submit(read_files_column, readers, chunk, workers, max_file_size)

        ahead = submit(0)
        for start in range(0, len(paths), _CHUNK_ROWS):
            end = min(start + _CHUNK_ROWS, len(paths))
            current, ahead = ahead, submit(end)
            columns = {
                "image": current.result(),
                "label": np.asarray(labels[start:end], np.int32),
            }
            if file_names:
                columns["file_name"] = names[start:end]
            yield end - start, columns


def list_image_folder(
    root: str, extensions: Sequence[str] | None = None, class_indexing: dict[str, int] | None = None
) -> tuple[list[str], list[int], dict[str, int]]:
    """Image files of a local class-per-subfolder tree, sorted, with their class labels: the
    sources' walk, :func:`~jisu.dataset.sources.image_files.list_local_image_folder`."""
    return list_local_image_folder(root, extensions, class_indexing)


def check_inside(root: str, paths: Sequence[str]) -> None:
    """Refuse to pack files that symbolic links lead out of the image folder ``root``.

    ``ImageFolderDataset`` follows links (a subset of a data set is often a folder of links),
    but a record file is made to be shared: a ``cat/secret.jpg -> /etc/shadow`` would travel
    inside it. ``convert(..., follow_links=True)`` (``jisu convert --follow-links``) packs
    such files anyway.

    Raises:
        ValueError: naming the first such file, where it resolves, and how many there are.
    """
    outside = files_outside(root, paths)
    if not outside:
        return
    path, real = outside[0]
    more = f" (and {len(outside) - 1} more file(s))" if len(outside) > 1 else ""
    raise ValueError(
        f"convert: '{path}' resolves to '{real}', outside the image folder '{root}', through "
        f"a symbolic link{more}; convert packs only files inside its source folder: pass "
        "--follow-links (follow_links=True) to pack the files links lead to"
    )


def reencoder(max_size: int | None, quality: int) -> Callable[[np.ndarray], np.ndarray]:
    """Decode, shrink so the longer side is at most ``max_size``, encode as JPEG."""
    import cv2
    import simplejpeg

    from ..vision import Decode

    decode = Decode()

    def reencode(data: np.ndarray) -> np.ndarray:
        image = decode(data)
        h, w = image.shape[:2]
        if max_size and max(h, w) > max_size:
            scale = max_size / max(h, w)
            size = (max(1, round(w * scale)), max(1, round(h * scale)))
            image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        encoded = simplejpeg.encode_jpeg(
            np.ascontiguousarray(image), quality=quality, colorspace="RGB"
        )
        return np.frombuffer(encoded, dtype=np.uint8)

    return reencode
