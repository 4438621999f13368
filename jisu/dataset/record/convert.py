"""Conversion to the record format: image folders, MindRecord, NumPy arrays, any pipeline.

Conversion is all-or-nothing: rows go to temporary files that become the data set only when
every row is written (``FileWriter.commit``); an interrupted conversion (Ctrl-C, an error)
removes them, so a rerun starts from scratch and no half data set is ever visible.
"""

from __future__ import annotations

import errno
import itertools
import math
import os
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from ..storage import is_url
from .schema import NUMERIC
from .validate import MalformedFileError, open_regular
from .writer import FileWriter

if TYPE_CHECKING:
    from ..datasets import Dataset

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
_CHUNK_ROWS = 512

#: the most bytes the compressed arrays of one ``.npz`` may inflate to, together (they are
#: held in memory while converted; stored arrays and ``.npy`` files are not counted: they
#: are as large on disk as in memory, and a ``.npy`` is read memory-mapped)
NPZ_MAX_INFLATED_BYTES = 4 << 30
#: the most a compressed array may inflate over its compressed size (deflate reaches ~1,030x
#: on zeros; real arrays rarely pass 100x) once it inflates to more than
#: :data:`NPZ_RATIO_FREE_BYTES`
NPZ_MAX_RATIO = 200
#: arrays (and archives) inflating to at most this many bytes are never refused for their
#: compression ratio (a mask of zeros, sorted labels)
NPZ_RATIO_FREE_BYTES = 256 << 20


def dealt_rows(rows: int, block_rows: int, shards: int) -> list[int]:
    """The rows each shard gets when ``rows`` rows are dealt in blocks of ``block_rows`` (the
    last one shorter), block ``k`` to shard ``k % shards``: ``FileWriter``'s layout (the reader's
    ``block_layout``), summed per shard in O(shards)."""
    full, rest = divmod(rows, block_rows)
    return [
        (full // shards + (s < full % shards)) * block_rows + (rest if s == full % shards else 0)
        for s in range(shards)
    ]


def balanced_block_rows(rows: int, shards: int, largest: int) -> int:
    """The block size (rows per record batch, at most ``largest``) that deals ``rows`` rows
    evenly to ``shards`` shards.

    ``FileWriter`` deals whole blocks round-robin and picks blocks of up to 1,024 rows (4 MiB),
    so a small data set (480 thumbnails) was one block: every row in shard 0, the other shards
    empty, and a file-level shuffle had nothing to shuffle. Here the block starts at the
    shards' fair share (rows / shards, or a fraction of it so that blocks stay within
    ``largest``) and shrinks until the shards' row counts differ by at most 1 % of a shard, or
    by one row (480 rows in 4 shards: blocks of 120, one run of consecutive rows per shard).
    The tolerance keeps blocks large: an exact split to one row can take one-row blocks.
    """
    if shards <= 1 or rows <= 0:
        return largest
    blocks_per_shard = -(-rows // (shards * largest))
    start = min(largest, max(1, -(-rows // (shards * blocks_per_shard))))
    tolerance = max(1, rows // shards // 100)
    for block_rows in range(start, 0, -1):
        counts = dealt_rows(rows, block_rows, shards)
        if max(counts) - min(counts) <= tolerance:
            return block_rows
    return 1  # not reached: blocks of one row deal to within one row


class _EvenWriter(FileWriter):
    """A ``FileWriter`` whose blocks deal ``rows`` expected rows evenly to its shards (see
    :func:`balanced_block_rows`); ``rows=None`` (an unknown count) keeps the writer's blocks.
    The layout stays the writer's (uniform blocks dealt round-robin, ``block_rows`` in the
    manifest), so any reader rebuilds the written order."""

    def __init__(
        self,
        file_name: str,
        shard_num: int,
        overwrite: bool,
        rows: int | None,
        storage_options: dict | None = None,
    ) -> None:
        super().__init__(file_name, shard_num, overwrite, storage_options)
        self._expected_rows = rows

    def _choose_block_rows(self, chunk: dict[str, Any], n: int) -> int:
        largest = super()._choose_block_rows(chunk, n)
        if self._expected_rows is None:
            return largest
        return balanced_block_rows(self._expected_rows, self.shard_num, largest)


def field_of(name: str, value: np.ndarray) -> dict:
    """The record field that holds ``value`` (the first row's value of column ``name``)."""
    if value.dtype.kind == "U":
        return {"type": "string"}
    if value.dtype.kind == "S":
        return {"type": "bytes"}
    dtype = "int32" if value.dtype.kind == "b" else value.dtype.name
    if dtype not in NUMERIC:
        raise TypeError(
            f"save: column '{name}' has dtype {value.dtype}, which the record format "
            f"does not hold; cast it (TypeCast) to one of {list(NUMERIC)}"
        )
    if value.ndim == 0:
        return {"type": dtype}
    # the first axis may vary from row to row (a byte string, a list of boxes)
    return {"type": dtype, "shape": [-1, *value.shape[1:]]}


def _value(field: dict, value: np.ndarray) -> Any:
    if field["type"] == "string":
        return str(value)
    if field["type"] == "bytes":
        return value.tobytes() if value.dtype.kind != "S" else bytes(value.item())
    return value


def write_dataset(
    dataset: Dataset,
    file_name: str,
    num_files: int = 1,
    overwrite: bool = False,
    schema: dict | None = None,
    progress: bool | None = None,
    description: str = "",
    storage_options: dict | None = None,
) -> dict:
    """Write one epoch of ``dataset`` as a record data set; returns rows, bytes and seconds.

    Args:
        schema: the fields (default: from the first row: numbers and arrays keep their dtype
            and shape, strings become ``string``).
        progress: show a progress bar (default: when stderr is a terminal).
        storage_options: for a URL ``file_name``: the filesystem's options (see
            :class:`FileWriter`).
    """
    if schema is None:
        shapes, dtypes = dataset._spec()
        schema = {
            name: field_of(name, np.zeros(shape, dtype))
            for name, shape, dtype in zip(dataset.get_col_names(), shapes, dtypes)
        }
    try:
        total = dataset._row_count()
    except Exception:  # an unknown size only costs the progress bar its total
        total = None
    return write_chunks(
        file_name,
        num_files,
        overwrite,
        schema,
        _rows_as_chunks(dataset, schema),
        total,
        progress,
        description,
        storage_options,
    )


def _rows_as_chunks(dataset: Dataset, schema: dict) -> Iterator[tuple[int, dict]]:
    """One epoch of ``dataset`` as column chunks for ``schema``."""
    columns = dataset.get_col_names()
    iterator = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    rows = (row for row in iterator)  # stays ended after the epoch (no next() past it)
    try:
        while batch := list(itertools.islice(rows, _CHUNK_ROWS)):
            yield (
                len(batch),
                {
                    name: [_value(schema[name], row[k]) for row in batch]
                    for k, name in enumerate(columns)
                },
            )
    finally:
        iterator.close()


def write_chunks(
    file_name: str,
    num_files: int,
    overwrite: bool,
    schema: dict,
    chunks: Iterator[tuple[int, dict]],
    total: int | None,
    progress: bool | None,
    description: str = "",
    storage_options: dict | None = None,
) -> dict:
    """Write column chunks ``(rows, {field: values})`` as a record data set (all or nothing).

    With several files, rows are dealt so every shard gets its share (``total`` rows expected;
    see :func:`balanced_block_rows`).

    Returns:
        ``rows``, ``bytes``, ``seconds``, ``files`` (the shards) and ``removed``: the
        ``(path, bytes freed)`` of files left by killed writers of ``file_name`` that the
        writer removed first.
    """
    begin = time.perf_counter()
    writer = _EvenWriter(file_name, num_files, overwrite, total, storage_options)
    writer.add_schema(schema, description)
    rows = 0
    bar = tqdm(
        total=total,
        unit="rows",
        desc=os.path.basename(file_name),
        disable=None if progress is None else not progress,
    )
    try:
        for n, columns in chunks:
            writer.write_columns(columns, parallel_writer=num_files > 1)
            rows += n
            bar.update(n)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        bar.close()
    size = writer.bytes_written  # the shards' bytes (their files may be remote)
    return {
        "rows": rows,
        "bytes": size,
        "seconds": time.perf_counter() - begin,
        "files": writer.paths,
        "removed": writer.removed_leftovers,
    }


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


def read_files_column(pool: ThreadPoolExecutor, paths: list[str], workers: int) -> Any:
    """The contents of ``paths`` as one Arrow binary column, read straight into its buffer."""
    import pyarrow as pa

    sizes = np.fromiter((os.stat(p).st_size for p in paths), dtype=np.int64, count=len(paths))
    offsets = np.zeros(len(paths) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    data = pa.allocate_buffer(int(offsets[-1]))  # from Arrow's pool: reused, not zero-filled
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
    root: str, paths: list[str], labels: list[int], workers: int, file_names: bool = False
) -> Iterator[tuple[int, dict]]:
    """Chunks of (file bytes, label[, name relative to ``root`` with ``file_names``]): the files
    of the next chunk are read on ``workers`` threads while the writer packs this one."""
    prefix = len(os.path.join(root, ""))
    names = [p[prefix:] for p in paths]  # paths come from os.walk(root)
    with ThreadPoolExecutor(workers) as readers, ThreadPoolExecutor(1) as ahead_pool:

        def submit(start: int) -> Any:
            chunk = paths[start : start + _CHUNK_ROWS]
            return ahead_pool.submit(read_files_column, readers, chunk, workers) if chunk else None

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


def array_chunks(arrays: dict[str, np.ndarray]) -> Iterator[tuple[int, dict]]:
    """Chunks of rows of in-memory arrays."""
    n = len(next(iter(arrays.values())))
    for start in range(0, n, _CHUNK_ROWS):
        end = min(start + _CHUNK_ROWS, n)
        yield end - start, {k: v[start:end] for k, v in arrays.items()}


def _npy_header(
    f: Any, path: str, available: int, member: str | None = None
) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Read the ``.npy`` header at the start of the open file ``f`` (``available`` bytes):
    ``(shape, fortran_order, dtype)``, checked against what the file holds before any data
    is read (``f`` is left at the data). Errors name ``path`` and the ``.npz`` ``member``."""
    from numpy.lib import format as npy

    where = "" if member is None else f"member {member!r}: "

    try:
        version = npy.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(f)
        elif version in ((2, 0), (3, 0)):  # 3.0 differs only in the header's text encoding
            shape, fortran, dtype = npy.read_array_header_2_0(f)
        else:
            raise ValueError(f"a .npy format version {version[0]}.{version[1]} this reader lacks")
    except ValueError as exc:
        raise MalformedFileError(path, f"{where}not a readable .npy array ({exc})") from None
    if dtype.hasobject:
        raise MalformedFileError(
            path,
            f"{where}holds Python objects (dtype {dtype}), which only pickle can read: convert "
            "refuses to unpickle; save numbers, strings or bytes",
        )
    nbytes = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
    held = available - f.tell()
    if nbytes > held:
        raise MalformedFileError(
            path, f"{where}its header declares {shape} {dtype} ({nbytes} bytes); it holds {held}"
        )
    if not shape or shape[0] == 0:
        raise ValueError(f"convert: '{path}': {where}an array of shape {shape} has no rows")
    return shape, fortran, dtype


def _check_npz(f: Any, path: str) -> None:
    """Check every member of the ``.npz`` archive open as ``f`` (named ``path``) before
    anything is inflated: a ``.npy`` array, not encrypted, its ``.npy`` header consistent
    with its zip sizes, and the compressed ones within :data:`NPZ_MAX_INFLATED_BYTES` and
    :data:`NPZ_MAX_RATIO` (2.9 MB can inflate to a 3 GB array). Errors name the file and the
    member."""
    import zipfile

    try:
        archive = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise MalformedFileError(path, f"not a readable .npz (zip) archive ({exc})") from None
    inflated = packed = 0
    largest: tuple[int, str] = (0, "")
    for info in archive.infolist():
        where = f"member {info.filename!r}"
        if not info.filename.endswith(".npy"):
            raise MalformedFileError(path, f"{where} is not a .npy array (np.savez writes those)")
        if info.flag_bits & 0x1:
            raise MalformedFileError(path, f"{where} is encrypted")
        size, compressed = info.file_size, info.compress_size
        if info.compress_type == zipfile.ZIP_STORED:
            if size != compressed:
                raise MalformedFileError(
                    path, f"{where} is stored, yet declares {size} bytes in {compressed}"
                )
        else:
            ratio = size / max(compressed, 1)
            if size > NPZ_MAX_INFLATED_BYTES:
                raise ValueError(
                    f"convert: '{path}': {where} would inflate to {size} bytes, over the "
                    f"{NPZ_MAX_INFLATED_BYTES}-byte cap on compressed arrays "
                    "(NPZ_MAX_INFLATED_BYTES); save it uncompressed (np.savez, np.save)"
                )
            if size > NPZ_RATIO_FREE_BYTES and ratio > NPZ_MAX_RATIO:
                raise ValueError(
                    f"convert: '{path}': {where} would inflate {compressed} bytes to {size} "
                    f"({ratio:.0f}x, over the {NPZ_MAX_RATIO}x allowed above "
                    f"{NPZ_RATIO_FREE_BYTES} bytes: a decompression bomb?); if the array "
                    "is genuine, save it uncompressed (np.savez, np.save)"
                )
            inflated, packed = inflated + size, packed + compressed
            largest = max(largest, (size, info.filename))
        try:
            with archive.open(info) as member:
                _npy_header(member, path, size, info.filename)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError, EOFError) as exc:
            # a damaged local header, an unknown compression method, a bad stream
            raise MalformedFileError(path, f"{where} cannot be read ({exc})") from None
        except zlib.error as exc:
            raise MalformedFileError(path, f"{where}: damaged compressed data ({exc})") from None
    if inflated > NPZ_MAX_INFLATED_BYTES or (
        inflated > NPZ_RATIO_FREE_BYTES and inflated > NPZ_MAX_RATIO * packed
    ):
        raise ValueError(
            f"convert: '{path}': its compressed arrays would inflate {packed} bytes to "
            f"{inflated} (the largest: member {largest[1]!r}, {largest[0]} bytes); at most "
            f"{NPZ_MAX_INFLATED_BYTES} bytes and {NPZ_MAX_RATIO}x are allowed above "
            f"{NPZ_RATIO_FREE_BYTES} bytes: save them uncompressed (np.savez, np.save)"
        )


def load_arrays(path: str) -> dict[str, np.ndarray]:
    """The arrays of a ``.npz`` or ``.npy`` file, checked before their data is read.

    Never unpickled (``allow_pickle=False``). A ``.npz``'s members are checked first
    (:func:`_check_npz`: the caps on what compressed arrays may inflate to), then read into
    memory; a ``.npy`` is memory-mapped (its pages are read as they are converted), its
    header checked against the file's size. The file is opened once (a FIFO is refused).

    Raises:
        MalformedFileError: a member that is not a ``.npy`` array, a header that declares
            more than the file holds, an array of Python objects.
        ValueError: an archive over :data:`NPZ_MAX_INFLATED_BYTES` or :data:`NPZ_MAX_RATIO`,
            an array with no rows; both name the file and the member.
    """
    with open(open_regular(path), "rb") as f:
        if path.endswith(".npz"):
            _check_npz(f, path)
            f.seek(0)
            with np.load(f, allow_pickle=False) as archive:
                return {name: archive[name] for name in archive.files}
        shape, fortran, dtype = _npy_header(f, path, os.fstat(f.fileno()).st_size)
        if math.prod(shape) * dtype.itemsize == 0:  # NumPy cannot map an array of no bytes
            return {"data": np.zeros(shape, dtype)}
        order = "F" if fortran else "C"
        return {"data": np.memmap(f, dtype, "r", offset=f.tell(), shape=shape, order=order)}


def list_image_folder(
    root: str, extensions: Sequence[str] | None = None, class_indexing: dict[str, int] | None = None
) -> tuple[list[str], list[int], dict[str, int]]:
    """Image files of a local class-per-subfolder tree, sorted, with their class labels: the
    sources' walk, :func:`~jisu.dataset.sources.image_folder.list_local_image_folder`."""
    from ..sources.image_folder import list_local_image_folder  # (it imports this module)

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
    from ..sources.image_folder import files_outside  # (image_folder imports this module)

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


class ImageFiles:
    """Random-access source of (encoded bytes, label[, path relative to ``root``]).

    Files are opened with :func:`~jisu.dataset.record.validate.open_regular`: anything but a
    regular file (a FIFO, a device) is refused with a ``MalformedFileError`` naming it instead
    of hanging the read. With ``decode``, a decode error (``DecompressionBombError``, a
    ``ValueError`` for a corrupt file) propagates with its type; the file is named by the
    dataset's sample name (``ImageFolderDataset: reading source[i] ('path') failed``).
    """

    remote = False  # files are URLs, read by ``_read_remote`` (see ``RemoteImageFiles``)

    def __init__(
        self,
        root: str,
        paths: list[str],
        labels: list[int],
        names: bool = True,
        decode: bool = False,
    ) -> None:
        self.root = root
        self.paths = np.array(paths)  # one buffer, not a list of objects (see worker memory)
        self.labels = np.asarray(labels, dtype=np.int32)
        self.names = names
        self.decode = decode

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple:
        path = str(self.paths[index])
        from ..vision.decode import FileBytes

        if self.remote:  # object storage (RemoteImageFiles)
            raw = self._read_remote(path)
        else:
            try:
                fd = open_regular(path)  # a FIFO named like an image is refused, not waited on
            except FileNotFoundError:
                # the OS's error, with errno and filename, raised where the source reads its file
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None
            with open(fd, "rb") as f:
                raw = np.frombuffer(f.read(), dtype=np.uint8)
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


def convert(
    src: str,
    dst: str,
    shards: int = 1,
    workers: int | None = None,
    max_size: int | None = None,
    quality: int | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    file_names: bool = False,
    storage_options: dict | None = None,
    follow_links: bool = False,
) -> dict:
    """Convert an image folder, MindRecord files, a ``.npz``/``.npy`` file or a jisu record
    data set into a jisu record data set at ``dst``; returns the summary of the write.

    Args:
        src: a class-per-subfolder image folder (columns ``image``: the file's bytes, ``label``:
            int32, the class's index among the sorted folder names), MindRecord files, a
            ``.npz``/``.npy`` file (one column per array) or a jisu record data set.
        dst: the record data set to write (``dst`` or ``dst0`` .. ``dst{shards-1}``, plus
            ``dst.manifest.json``).
        shards: number of shard files; rows are dealt evenly to all of them (a file-level
            shuffle needs rows in every shard).
        workers: reading/encoding threads (default: the CPUs this process may use).
        max_size, quality: re-encode images as JPEG (``quality``, default 90) with the longer
            side at most ``max_size``; by default the files' bytes are stored as they are.
        overwrite: replace an existing ``dst`` (the old data set stays readable until the new
            one is complete).
        progress: show a progress bar (default: when stderr is a terminal).
        file_names: image folders only: add a third column ``file_name`` (string, the path
            relative to ``src``), to trace a row back to its file. Off by default: ``Model``
            feeds every column but the last to the network, so the recipe
            ``RecordDataset(dst).map(Decode(), "image")`` needs exactly ``image, label``; with
            ``file_names`` drop it before training (``.project(["image", "label"])``).
        storage_options: the filesystem options of a URL ``dst`` or ``src`` (``s3://...``,
            any fsspec URL; a record data set as ``src``); by default the environment's.
        follow_links: image folders only: also pack files whose real path lies outside
            ``src`` (through a symbolic link); by default such a file stops the conversion
            (:func:`check_inside`), as a record file may be shared.

    Arrays (``.npz``/``.npy``) are never unpickled, and a ``.npz``'s compressed arrays are
    checked before they are inflated (:func:`load_arrays`: at most
    :data:`NPZ_MAX_INFLATED_BYTES` in all, at most :data:`NPZ_MAX_RATIO` times their
    compressed size above :data:`NPZ_RATIO_FREE_BYTES`).

    Raises:
        FileNotFoundError: ``src`` is none of the above.
        FileExistsError: ``dst`` exists and ``overwrite`` is False.
        ValueError: a file that a link leads out of an image folder (without
            ``follow_links``); arrays over the caps above, or malformed.
    """
    from .. import GeneratorDataset, RecordDataset
    from ..engine.cpus import available_cpus
    from .mindrecord import is_mindrecord

    image_schema = {"image": {"type": "bytes"}, "label": {"type": "int32"}}
    if file_names:
        image_schema["file_name"] = {"type": "string"}
    schema = None
    if file_names and not os.path.isdir(src):
        raise ValueError(
            f"convert: file_names=True applies to image folders only; '{src}' is not a folder. "
            "Leave file_names at False"
        )
    if os.path.isdir(src):
        paths, labels, classes = list_image_folder(src)
        if not follow_links:
            check_inside(src, paths)  # before any byte is read
        description = f"image folder {os.path.abspath(src)}; classes {classes}"
        if max_size is None and quality is None:  # bytes as stored: read and write by columns
            chunks = folder_chunks(src, paths, labels, workers or available_cpus(), file_names)
            return write_chunks(
                dst,
                shards,
                overwrite,
                image_schema,
                chunks,
                len(paths),
                progress,
                description,
                storage_options,
            )
        data = GeneratorDataset(
            ImageFiles(src, paths, labels, names=file_names),
            list(image_schema),
            shuffle=False,
            num_parallel_workers=workers or 1,
        )
        data = data.map(reencoder(max_size, quality or 90), "image", num_parallel_workers=workers)
        schema = image_schema
    elif src.endswith((".npz", ".npy")):
        arrays = load_arrays(src)
        if not arrays:
            raise ValueError(f"convert: '{src}' holds no arrays")
        if len({len(a) for a in arrays.values()}) != 1:
            raise ValueError(f"convert: the arrays in '{src}' differ in length")
        schema = {k: field_of(k, v[0]) for k, v in arrays.items()}
        n = len(next(iter(arrays.values())))
        return write_chunks(
            dst,
            shards,
            overwrite,
            schema,
            array_chunks(arrays),
            n,
            progress,
            f"NumPy arrays from {os.path.abspath(src)}",
            storage_options,
        )
    elif (
        is_url(src)
        or is_mindrecord(src)
        or os.path.exists(src)
        or os.path.exists(src + ".manifest.json")
    ):
        data = RecordDataset(
            src,
            shuffle=False,
            num_parallel_workers=workers,
            storage_options=storage_options if is_url(src) else None,
        )
        schema = {f.name: f.to_dict() for f in data.reader.fields}
        description = f"converted from {src if is_url(src) else os.path.abspath(src)}"
    else:
        raise FileNotFoundError(
            f"convert: '{src}' is not an image folder, a .npz/.npy file, "
            "MindRecord files or a jisu record data set"
        )
    return write_dataset(
        data, dst, shards, overwrite, schema, progress, description, storage_options
    )
