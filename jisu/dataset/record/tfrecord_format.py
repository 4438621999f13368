"""The TFRecord file format, read without TensorFlow: record framing, CRC-32C checks, gzip/zlib
files and ``tf.train.Example`` decoding.

A TFRecord file is a sequence of records, each::

    uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)

(little-endian; ``masked(crc) = ((crc >> 15) | (crc << 17)) + 0xA282EAD8`` mod 2**32). The data
of a record is a serialized ``tf.train.Example``. A ``GZIP`` or ``ZLIB`` file is such a file
compressed as a whole.

Every file is treated as hostile: a length is trusted only once its CRC matches and the record
it announces fits in the file, so a damaged or hostile file fails with a
:class:`~jisu.dataset.record.validate.MalformedFileError` naming it and the record, never with
a huge allocation, a crash or a hang. The data CRC of a record is checked when it is read
(hardware CRC-32C: about 1 % of the time to decode an Example).

A local file is read by ``pread`` (:mod:`jisu.dataset.record.pread`), never mapped, so a file
truncated while it is read is an error naming it, not a SIGBUS. A compressed file is inflated
once, in chunks, into an anonymous temporary file in ``TMPDIR`` (private to the process, so it
is mapped), its records indexed as they come out: a stream that is not TFRecord fails after its
first bytes, and one that inflates to more than :func:`inflate_limit` bytes (a decompression
bomb) fails there, naming the file. A full ``TMPDIR`` is an ``OSError`` naming the folder.

The ``tf.train.Example`` message is built at run time from its schema (``example.proto`` and
``feature.proto``, which have been stable since TensorFlow 1.0) with protobuf's descriptor
API: no generated code, no TensorFlow.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
import tempfile
import zlib
from array import array
from functools import lru_cache
from typing import Any, BinaryIO

import crc32c
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from .pread import PreadFile
from .storage import is_url
from .validate import MalformedFileError, open_regular

HEADER = 12  # uint64 length + uint32 CRC of the length
FOOTER = 4  # uint32 CRC of the data
_MASK_DELTA = 0xA282EAD8
_LENGTH = struct.Struct("<QI")
_CRC = struct.Struct("<I")
#: compression types MindSpore accepts, and zlib's window bits for each
COMPRESSION = {"": None, "GZIP": 16 + zlib.MAX_WBITS, "ZLIB": zlib.MAX_WBITS}
_CHUNK = 1 << 20
_WINDOW = 64 << 10  # bytes read at once when indexing a local file's record headers
#: A GZIP/ZLIB file may inflate to at most ``max(INFLATE_ALLOWANCE, MAX_INFLATE_RATIO x its
#: compressed size)`` bytes (real TFRecord files compress 1-20x; a stream of zeros 1000x).
#: Raise them (module attributes, read when a file is opened) for a genuine file beyond.
MAX_INFLATE_RATIO = 100
INFLATE_ALLOWANCE = 64 << 20
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a write refused for want of room


def masked_crc(data: Any) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    crc = crc32c.crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


@lru_cache(maxsize=1)
def example_class() -> type:
    """The ``tf.train.Example`` message class, built from its schema (no protoc, no TF)."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="jisu/tfrecord_example.proto", package="jisu.tfrecord", syntax="proto3"
    )
    f = descriptor_pb2.FieldDescriptorProto
    repeated = f.LABEL_REPEATED
    for name, ftype in (
        ("BytesList", f.TYPE_BYTES),
        ("FloatList", f.TYPE_FLOAT),
        ("Int64List", f.TYPE_INT64),
    ):
        msg = proto.message_type.add(name=name)
        field = msg.field.add(name="value", number=1, label=repeated, type=ftype)
        if ftype != f.TYPE_BYTES:
            field.options.packed = True
    feature = proto.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, type_name) in enumerate(
        (("bytes_list", "BytesList"), ("float_list", "FloatList"), ("int64_list", "Int64List")),
        1,
    ):
        feature.field.add(
            name=name,
            number=number,
            label=f.LABEL_OPTIONAL,
            type=f.TYPE_MESSAGE,
            type_name=f".jisu.tfrecord.{type_name}",
            oneof_index=0,
        )
    features = proto.message_type.add(name="Features")
    # The wire format of map<string, Feature>, declared as a repeated entry message instead:
    # upb's map containers crashed (a segfault while the GC ran during a map lookup, once in
    # the full suite, worker threads decoding); repeated fields take its common code path.
    entry = features.nested_type.add(name="FeatureEntry")
    entry.field.add(name="key", number=1, label=f.LABEL_OPTIONAL, type=f.TYPE_STRING)
    entry.field.add(
        name="value",
        number=2,
        label=f.LABEL_OPTIONAL,
        type=f.TYPE_MESSAGE,
        type_name=".jisu.tfrecord.Feature",
    )
    features.field.add(
        name="feature",
        number=1,
        label=repeated,
        type=f.TYPE_MESSAGE,
        type_name=".jisu.tfrecord.Features.FeatureEntry",
    )
    example = proto.message_type.add(name="Example")
    example.field.add(
        name="features",
        number=1,
        label=f.LABEL_OPTIONAL,
        type=f.TYPE_MESSAGE,
        type_name=".jisu.tfrecord.Features",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("jisu.tfrecord.Example"))


def parse_example(data: Any, path: str, record: int) -> dict[str, Any]:
    """The features of the serialized Example ``data`` (record ``record``) by name (a key
    given twice: the last wins, as in a protobuf map)."""
    try:
        example = example_class().FromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise MalformedFileError(
            path, f"record {record} is not a valid tf.train.Example ({exc})"
        ) from None
    return {entry.key: entry.value for entry in example.features.feature}


def _header_length(header: Any, pos: int, path: str, record: int) -> int:
    """The data length a record header announces, once its CRC matches."""
    length, crc = _LENGTH.unpack_from(header)
    if masked_crc(header[:8]) != crc:
        raise MalformedFileError(
            path,
            f"record {record} at byte {pos} has a damaged length (CRC mismatch); "
            "the file is damaged or not a TFRecord file (compressed? see compression_type)",
        )
    return length


def _cut_header(path: str, record: int, pos: int, have: int) -> MalformedFileError:
    return MalformedFileError(
        path,
        f"is truncated: record {record} at byte {pos} has only {have} of its {HEADER} header bytes",
    )


def _cut_data(path: str, record: int, pos: int, length: int, after: int) -> MalformedFileError:
    return MalformedFileError(
        path,
        f"is truncated: record {record} at byte {pos} needs {length} data bytes but the file "
        f"ends {after} bytes after its header",
    )


class StreamIndex:
    """The record index of a TFRecord stream, built as its bytes come (:meth:`feed`), so a
    stream that is not TFRecord fails at its first record, before the rest is inflated.
    Offsets and lengths are kept as int64 arrays (16 bytes a record, at most the stream's
    size)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offsets = array("q")
        self.lengths = array("Q")  # a hostile length may not fit int64 (the stream ends first)
        self.size = 0  # bytes fed
        self._header = bytearray()
        self._start = 0  # where the record being read starts
        self._skip = 0  # data and footer bytes of the current record still to come

    def feed(self, chunk: Any) -> None:
        """Index the next bytes of the stream.

        Raises:
            MalformedFileError: a damaged record length (naming the file and record).
        """
        view = memoryview(chunk).cast("B")
        base, n, i = self.size, len(view), 0
        self.size += n
        while i < n:
            if self._skip:
                take = min(self._skip, n - i)
                self._skip -= take
                i += take
                continue
            if not self._header:
                self._start = base + i
            take = min(HEADER - len(self._header), n - i)
            self._header += view[i : i + take]
            i += take
            if len(self._header) == HEADER:
                record = len(self.offsets)
                length = _header_length(self._header, self._start, self.path, record)
                self.offsets.append(self._start + HEADER)
                self.lengths.append(length)
                self._skip = length + FOOTER
                self._header.clear()

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """The offsets of the data and the lengths of every record.

        Raises:
            MalformedFileError: the stream ends inside a record.
        """
        if self._header:
            raise _cut_header(self.path, len(self.offsets), self._start, len(self._header))
        if self._skip:
            record = len(self.offsets) - 1
            length = self.lengths[-1]
            after = length + FOOTER - self._skip
            raise _cut_data(self.path, record, self._start, length, after)
        lengths = np.frombuffer(self.lengths, np.uint64).astype(np.int64)  # each fits the file
        return np.frombuffer(self.offsets, np.int64), lengths


def index_records(buf: Any, path: str) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of the data and lengths of every record in ``buf`` (a file's bytes in memory).

    Each length is trusted only after its CRC matches and the whole record fits in ``buf``.

    Raises:
        MalformedFileError: naming ``path`` and the record (a damaged length, a truncation).
    """
    index = StreamIndex(path)
    if len(buf):
        index.feed(buf)
    return index.finish()


def index_file(file: PreadFile) -> tuple[np.ndarray, np.ndarray]:
    """:func:`index_records` of a local file, reading only its record headers (by ``pread``,
    in windows of a few KiB, so a file of small records takes few reads).

    Raises:
        MalformedFileError: a damaged length, a truncation (also one while it is read).
    """
    path, size = file.path, file.size
    offsets, lengths = array("q"), array("q")
    window, at = b"", 0  # bytes [at, at + len(window)) of the file
    pos = 0
    while pos < size:
        record = len(offsets)
        if size - pos < HEADER:
            raise _cut_header(path, record, pos, size - pos)
        if pos + HEADER > at + len(window):
            window, at = file.read(pos, min(_WINDOW, size - pos)), pos
        rel = pos - at
        length = _header_length(memoryview(window)[rel : rel + HEADER], pos, path, record)
        end = pos + HEADER + length + FOOTER
        if end > size:
            raise _cut_data(path, record, pos, length, size - pos - HEADER)
        offsets.append(pos + HEADER)
        lengths.append(length)
        pos = end
    return np.frombuffer(offsets, np.int64), np.frombuffer(lengths, np.int64)


def record_data(buf: Any, offset: int, length: int, path: str, record: int) -> memoryview:
    """The data of one record (indexed by :func:`index_records`), its CRC checked."""
    view = memoryview(buf)[offset : offset + length]
    (crc,) = _CRC.unpack_from(buf, offset + length)
    if masked_crc(view) != crc:
        raise MalformedFileError(path, f"record {record} is damaged (data CRC mismatch)")
    return view


def inflate_limit(compressed: int) -> int:
    """The most bytes a GZIP/ZLIB file of ``compressed`` bytes may inflate to:
    ``max(INFLATE_ALLOWANCE, MAX_INFLATE_RATIO * compressed)``."""
    return max(INFLATE_ALLOWANCE, MAX_INFLATE_RATIO * compressed)


def no_room(exc: OSError, path: str, written: int) -> OSError:
    """The error of a temporary file that could not grow (a full ``TMPDIR``)."""
    folder = tempfile.gettempdir()
    return OSError(
        exc.errno,
        f"TFRecordDataset: no room left in the temporary folder '{folder}' for the contents "
        f"of '{path}' ({written} bytes written: {exc.strerror}); free space there or point "
        "TMPDIR at a folder with room for the files (a compressed file is inflated there "
        "once)",
    )


class _Sink:
    """Where an inflated (or downloaded) stream goes: the temporary file, the record index,
    and the size bound."""

    def __init__(self, path: str, target: BinaryIO, limit: int | None, compressed: int) -> None:
        self.path, self.target, self.limit, self.compressed = path, target, limit, compressed
        self.index = StreamIndex(path)

    def write(self, data: bytes) -> None:
        if self.limit is not None and self.index.size + len(data) > self.limit:
            raise MalformedFileError(
                self.path,
                f"inflates to more than {self.limit} bytes from {self.compressed} compressed "
                f"bytes (over {MAX_INFLATE_RATIO}x: a decompression bomb?); jisu refuses more. "
                "For a genuine file, raise jisu.dataset.record.tfrecord_format."
                "MAX_INFLATE_RATIO or INFLATE_ALLOWANCE",
            )
        self.index.feed(data)  # first: a stream that is not TFRecord stops here
        try:
            self.target.write(data)
        except OSError as exc:
            if exc.errno in _FULL:
                raise no_room(exc, self.path, self.index.size - len(data)) from exc
            raise

    def flush(self) -> None:
        try:
            self.target.flush()
        except OSError as exc:
            if exc.errno in _FULL:
                raise no_room(exc, self.path, self.index.size) from exc
            raise


def decompress_to(path: str, source: BinaryIO, target: Any, compression: str) -> None:
    """Decompress the GZIP or ZLIB file ``source`` into ``target`` (a file, or a
    :class:`_Sink`, which bounds the size) in chunks (bounded memory); concatenated gzip
    members are read as one stream, as ``gzip`` does."""
    wbits = COMPRESSION[compression]
    decomp = zlib.decompressobj(wbits)
    started = False
    while True:
        chunk = source.read(_CHUNK)
        if not chunk:
            break
        started = True
        while chunk:
            try:
                out = decomp.decompress(chunk, _CHUNK)
                while out:
                    target.write(out)
                    out = decomp.decompress(decomp.unconsumed_tail, _CHUNK)
            except zlib.error as exc:
                raise MalformedFileError(
                    path,
                    f"is not a valid {compression}-compressed file ({exc}); check compression_type",
                ) from None
            chunk = b""
            if decomp.eof:
                rest = decomp.unused_data
                if compression == "GZIP" and rest.strip(b"\0"):
                    decomp = zlib.decompressobj(wbits)  # the next gzip member
                    chunk = rest
                elif rest.strip(b"\0"):
                    raise MalformedFileError(
                        path, f"has {len(rest)} bytes of trailing data after the ZLIB stream"
                    )
    if not started:  # an empty file: no records
        return
    if not decomp.eof:
        raise MalformedFileError(path, f"is truncated (the {compression} stream is incomplete)")


def _inflated(path: str, source: BinaryIO, compression: str, compressed: int) -> tuple:
    """The contents of ``source`` (inflated if compressed) in a mapped anonymous temporary
    file (private to the process: nobody can truncate it under the map), and their index."""
    try:
        tmp = tempfile.TemporaryFile(prefix="jisu-tfrecord-")  # noqa: SIM115 (with below)
    except OSError as exc:
        if exc.errno in (*_FULL, errno.EROFS, errno.EACCES):
            raise no_room(exc, path, 0) from exc
        raise
    with tmp:
        limit = None if COMPRESSION[compression] is None else inflate_limit(compressed)
        sink = _Sink(path, tmp, limit, compressed)
        if limit is None:
            while chunk := source.read(_CHUNK):
                sink.write(chunk)
        else:
            decompress_to(path, source, sink, compression)
        sink.flush()
        offsets, lengths = sink.index.finish()
        return _map(tmp), offsets, lengths


class TFRecordFile:
    """One TFRecord file's record index, and its records by number.

    A local file is read by ``pread`` (never mapped: a file truncated under the reader is an
    error naming it). A compressed file is inflated once into an anonymous temporary file
    (bounded, see :func:`inflate_limit`), which is mapped. A URL (``s3://...``, any fsspec URL;
    ``storage_options`` are its filesystem's options) is streamed into such a file too: a
    TFRecord file has no index, so finding its records needs all of its bytes anyway.
    """

    def __init__(
        self, path: str, compression: str = "", storage_options: dict | None = None
    ) -> None:
        self.path = path
        self.file: PreadFile | None = None
        self.buf: Any = None
        if is_url(path):
            self.buf, self.offsets, self.lengths = _fetch(path, compression, storage_options)
            return
        fd = open_regular(path)
        if COMPRESSION[compression] is None:
            self.file = PreadFile(path, fd)
            self.offsets, self.lengths = index_file(self.file)
            return
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.buf, self.offsets, self.lengths = _inflated(path, f, compression, size)

    def __len__(self) -> int:
        return len(self.offsets)

    def data(self, record: int) -> Any:
        """The data of record ``record``, its CRC checked."""
        offset, length = int(self.offsets[record]), int(self.lengths[record])
        if self.file is None:
            return record_data(self.buf, offset, length, self.path, record)
        raw = self.file.read(offset, length + FOOTER)
        return record_data(raw, 0, length, self.path, record)

    def features(self, record: int) -> Any:
        return parse_example(self.data(record), self.path, record)


MappedFile = TFRecordFile  # its former name (the files were mapped), kept for imports


def _fetch(url: str, compression: str, storage_options: dict | None) -> tuple:
    """The (inflated) bytes of a remote file in a mapped anonymous temporary file, and their
    index."""
    from .storage import filesystem

    fs, path = filesystem(url, storage_options)
    try:
        source = fs.open(path, "rb", block_size=_CHUNK)
    except FileNotFoundError:
        raise FileNotFoundError(f"'{url}' does not exist") from None
    with source:
        size = getattr(source, "size", None)
        return _inflated(url, source, compression, size if isinstance(size, int) else 0)


def _map(f: BinaryIO) -> Any:
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        return b""
    return mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
