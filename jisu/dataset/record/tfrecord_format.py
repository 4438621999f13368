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

The ``tf.train.Example`` message is built at run time from its schema (``example.proto`` and
``feature.proto``, which have been stable since TensorFlow 1.0) with protobuf's descriptor
API: no generated code, no TensorFlow.
"""

from __future__ import annotations

import mmap
import os
import struct
import tempfile
import zlib
from functools import lru_cache
from typing import Any, BinaryIO

import crc32c
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from ..storage import is_url
from .validate import MalformedFileError, open_regular

HEADER = 12  # uint64 length + uint32 CRC of the length
FOOTER = 4  # uint32 CRC of the data
_MASK_DELTA = 0xA282EAD8
_LENGTH = struct.Struct("<QI")
_CRC = struct.Struct("<I")
#: compression types MindSpore accepts, and zlib's window bits for each
COMPRESSION = {"": None, "GZIP": 16 + zlib.MAX_WBITS, "ZLIB": zlib.MAX_WBITS}
_CHUNK = 1 << 20


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


def index_records(buf: Any, path: str) -> tuple[np.ndarray, np.ndarray]:
    """Offsets of the data and lengths of every record in ``buf`` (a file's bytes, mapped).

    Each length is trusted only after its CRC matches and the whole record fits in ``buf``.

    Raises:
        MalformedFileError: naming ``path`` and the record (a damaged length, a truncation).
    """
    size = len(buf)
    offsets: list[int] = []
    lengths: list[int] = []
    unpack = _LENGTH.unpack_from
    pos = 0
    while pos < size:
        record = len(offsets)
        if size - pos < HEADER:
            raise MalformedFileError(
                path,
                f"is truncated: record {record} at byte {pos} has only {size - pos} of "
                f"its {HEADER} header bytes",
            )
        length, crc = unpack(buf, pos)
        if masked_crc(buf[pos : pos + 8]) != crc:
            raise MalformedFileError(
                path,
                f"record {record} at byte {pos} has a damaged length (CRC mismatch); "
                "the file is damaged or not a TFRecord file (compressed? see compression_type)",
            )
        end = pos + HEADER + length + FOOTER
        if end > size:
            raise MalformedFileError(
                path,
                f"is truncated: record {record} at byte {pos} needs {length} data bytes "
                f"but the file ends {size - pos - HEADER} bytes after its header",
            )
        offsets.append(pos + HEADER)
        lengths.append(length)
        pos = end
    return np.array(offsets, dtype=np.int64), np.array(lengths, dtype=np.int64)


def record_data(buf: Any, offset: int, length: int, path: str, record: int) -> memoryview:
    """The data of one record (indexed by :func:`index_records`), its CRC checked."""
    view = memoryview(buf)[offset : offset + length]
    (crc,) = _CRC.unpack_from(buf, offset + length)
    if masked_crc(view) != crc:
        raise MalformedFileError(path, f"record {record} is damaged (data CRC mismatch)")
    return view


def decompress_to(path: str, source: BinaryIO, target: BinaryIO, compression: str) -> None:
    """Decompress the GZIP or ZLIB file ``source`` into ``target`` in chunks (bounded memory);
    concatenated gzip members are read as one stream, as ``gzip`` does."""
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


class MappedFile:
    """One TFRecord file's bytes, memory-mapped (a compressed file is first decompressed into
    an anonymous temporary file, so memory stays bounded), and its record index.

    A URL (``s3://...``, any fsspec URL; ``storage_options`` are its filesystem's options) is
    streamed into an anonymous temporary file, then mapped: a TFRecord file has no index, so
    finding its records needs all of its bytes anyway."""

    def __init__(
        self, path: str, compression: str = "", storage_options: dict | None = None
    ) -> None:
        self.path = path
        if is_url(path):
            self.buf = _fetch(path, compression, storage_options)
            self.offsets, self.lengths = index_records(self.buf, path)
            return
        fd = open_regular(path)
        with os.fdopen(fd, "rb") as f:
            if COMPRESSION[compression] is None:
                self.buf = _map(f)
            else:
                with tempfile.TemporaryFile(prefix="jisu-tfrecord-") as tmp:
                    decompress_to(path, f, tmp, compression)
                    tmp.flush()
                    self.buf = _map(tmp)
        self.offsets, self.lengths = index_records(self.buf, path)

    def __len__(self) -> int:
        return len(self.offsets)

    def data(self, record: int) -> memoryview:
        return record_data(
            self.buf, int(self.offsets[record]), int(self.lengths[record]), self.path, record
        )

    def features(self, record: int) -> Any:
        return parse_example(self.data(record), self.path, record)


def _fetch(url: str, compression: str, storage_options: dict | None) -> Any:
    """The (decompressed) bytes of a remote file, in a mapped anonymous temporary file."""
    import shutil

    from ..storage import filesystem

    fs, path = filesystem(url, storage_options)
    try:
        source = fs.open(path, "rb", block_size=_CHUNK)
    except FileNotFoundError:
        raise FileNotFoundError(f"'{url}' does not exist") from None
    with source, tempfile.TemporaryFile(prefix="jisu-tfrecord-") as tmp:
        if COMPRESSION[compression] is None:
            shutil.copyfileobj(source, tmp, _CHUNK)
        else:
            decompress_to(url, source, tmp, compression)
        tmp.flush()
        return _map(tmp)


def _map(f: BinaryIO) -> Any:
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        return b""
    return mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
