"""MindSpore's ``.ckpt`` file format, read and written without MindSpore: the format of every
``.ckpt`` jisu writes (:mod:`jisu.train.serialization`).

A MindSpore (2.x) checkpoint is a protobuf ``Checkpoint`` message::

    message Checkpoint {
      message Value {
        required string tag = 1;                  // the parameter's name
        oneof value { TensorProto tensor = 2; MapTensorProto maptensor = 3; }
      }
      repeated Value value = 1;
    }
    message TensorProto {
      repeated int64 dims = 1;                    // the shape; [] for a scalar, [0] for a str
      required string tensor_type = 2;            // "Float32", "Int64", "Bool", "str", ...
      required bytes tensor_content = 3;          // the raw little-endian values, C order
    }

MindSpore writes each parameter as its own one-value message and concatenates them (which
protobuf reads as one message with every value). A tensor over 512 MiB is split into several
consecutive values with the same tag, each with the full ``dims``; their contents joined are
the tensor. Strings (``append_dict`` entries) are ``tensor_type "str"``, ``dims [0]`` and the
text as NumPy's UTF-32. With ``crc_check=True`` MindSpore appends a trailer, ``b"crc_num"``
and the CRC-32 of everything before it as 10 big-endian bytes; it is not protobuf and is
stripped before parsing. Encrypted files (``enc_key``) are not supported.

The reader is a small wire-format parser (the schema has seven fields, so this is shorter
and easier to bound than a generated message class), and treats the file as hostile: its
size is checked against :data:`MAX_FILE_BYTES` and the free memory before it is read, and
every tag (a non-empty UTF-8 str of at most :data:`MAX_TAG_BYTES` bytes, no NUL), type (a
whitelist), rank (at most :data:`MAX_RANK`), dim (non-negative) and byte count (product of
dims x item size) is checked before any tensor is allocated, so no tensor is bigger than the
file. Anything wrong raises :class:`~jisu.dataset.record.validate.MalformedFileError` naming
the file and the problem. Nothing is unpickled. Unknown fields are skipped, as protobuf does.
"""

from __future__ import annotations

import os
import sys
import warnings
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import IO

import numpy as np
import torch

from ..dataset.record.validate import MalformedFileError, open_regular

#: the largest file :func:`read_ckpt` reads (it also refuses one larger than the free memory)
MAX_FILE_BYTES = 64 << 30
#: the longest tag (parameter name), in UTF-8 bytes
MAX_TAG_BYTES = 4096
#: the highest rank of a tensor
MAX_RANK = 32
#: MindSpore splits a tensor's bytes into values of at most this many bytes
SLICE_BYTES = 512 << 20

#: MindSpore's ``tensor_type`` strings (``str(mindspore.dtype)``) -> torch dtypes
DTYPES: dict[str, torch.dtype] = {
    "Bool": torch.bool,
    "Int8": torch.int8,
    "UInt8": torch.uint8,
    "Int16": torch.int16,
    "UInt16": torch.uint16,
    "Int32": torch.int32,
    "UInt32": torch.uint32,
    "Int64": torch.int64,
    "UInt64": torch.uint64,
    "Float16": torch.float16,
    "BFloat16": torch.bfloat16,
    "Float32": torch.float32,
    "Float64": torch.float64,
}
#: torch dtypes -> MindSpore's ``tensor_type`` strings
TENSOR_TYPES: dict[torch.dtype, str] = {dtype: name for name, dtype in DTYPES.items()}
_STR = "str"
_MAX_TYPE_BYTES = 16

_CRC_MARK = b"crc_num"
_CRC_TRAILER = len(_CRC_MARK) + 10

# wire types
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_SKIP = {_I64: 8, _I32: 4}

Value = torch.Tensor | str

if sys.byteorder != "little":  # pragma: no cover - every platform torch ships for
    raise ImportError("jisu.train.ms_checkpoint: MindSpore checkpoints are little-endian")


# --------------------------------------------------------------------------- reading
def read_ckpt(
    path: str | os.PathLike, keep: Callable[[str], bool] | None = None, *, crc_check: bool = False
) -> OrderedDict[str, Value]:
    """Read a MindSpore ``.ckpt`` file: ``OrderedDict`` tag -> tensor (CPU, a fresh copy) or
    str, in file order.

    Every entry is validated; only those for which ``keep(tag)`` is true (all, without
    ``keep``) are built. A CRC trailer that is present is always verified.

    Args:
        path: the file.
        keep: which tags to build.
        crc_check: warn (as MindSpore does) when the file has no CRC trailer.

    Raises:
        FileNotFoundError: no such file.
        MalformedFileError: the file is not a regular file, too big, or malformed (the message
            names the file and what is wrong).
    """
    path = os.fspath(path)
    data = _read_bounded(path)
    if data[-_CRC_TRAILER:-10] == _CRC_MARK:
        expected = int.from_bytes(data[-10:], "big")
        data = memoryview(data)[:-_CRC_TRAILER]
        actual = zlib.crc32(data)
        if actual != expected:
            raise MalformedFileError(
                path,
                f"is damaged: its CRC-32 trailer says {expected:08x} but its bytes have "
                f"{actual:08x}",
            )
    elif crc_check:
        warnings.warn(
            f"load_checkpoint: '{path}' has no CRC trailer, so it was not checked", stacklevel=3
        )
    return parse_ckpt(data, path, keep)


def _read_bounded(path: str) -> bytes:
    """The bytes of ``path``, after checking it is a regular file of a sane size."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        limit = min(MAX_FILE_BYTES, _free_memory() or MAX_FILE_BYTES)
        if size > limit:
            raise MalformedFileError(
                path,
                f"is {size} bytes, more than jisu reads as a MindSpore checkpoint ({limit} bytes: "
                "jisu.train.ms_checkpoint.MAX_FILE_BYTES or the free memory)",
            )
        data = f.read(size + 1)
    if len(data) != size:
        raise MalformedFileError(path, "changed size while it was being read")
    return data


def _free_memory() -> int | None:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


class _Piece:
    """One ``Value`` of the file, checked: a tag, a type, dims and a slice of the content."""

    __slots__ = ("content", "dims", "tag", "tensor_type")

    def __init__(self, tag: str, tensor_type: str, dims: tuple[int, ...], content: memoryview):
        self.tag, self.tensor_type, self.dims, self.content = tag, tensor_type, dims, content


def parse_ckpt(
    data: bytes | memoryview, path: str = "<bytes>", keep: Callable[[str], bool] | None = None
) -> OrderedDict[str, Value]:
    """Parse the protobuf bytes of a checkpoint (without its CRC trailer); see
    :func:`read_ckpt`. ``path`` names the source in errors."""
    buf = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    out: OrderedDict[str, Value] = OrderedDict()
    done: set[str] = set()
    group: list[_Piece] = []
    for piece in _pieces(buf, path):
        if group and piece.tag != group[0].tag:
            _finish(group, path, keep, out, done)
            group = []
        if not group and piece.tag in done:
            raise MalformedFileError(path, f"holds the tag {piece.tag!r} twice")
        group.append(piece)
    if group:
        _finish(group, path, keep, out, done)
    return out


def _finish(
    group: list[_Piece],
    path: str,
    keep: Callable[[str], bool] | None,
    out: OrderedDict[str, Value],
    done: set[str],
) -> None:
    """Check the pieces of one tag against each other and build the value if kept."""
    first = group[0]
    done.add(first.tag)
    for piece in group[1:]:
        if piece.tensor_type != first.tensor_type or piece.dims != first.dims:
            raise MalformedFileError(
                path,
                f"the parts of {first.tag!r} disagree: {first.tensor_type}{list(first.dims)} "
                f"then {piece.tensor_type}{list(piece.dims)}",
            )
    total = sum(len(p.content) for p in group)
    where = f"{first.tag!r} ({first.tensor_type}, dims {list(first.dims)}, {total} bytes)"
    if first.tensor_type == _STR:
        if total % 4:
            raise MalformedFileError(path, f"{where}: a str's bytes are not UTF-32")
        if keep is None or keep(first.tag):
            raw = b"".join(bytes(p.content) for p in group)
            try:
                out[first.tag] = raw.decode("utf-32-le").rstrip("\0")
            except UnicodeDecodeError as exc:
                raise MalformedFileError(path, f"{where}: not UTF-32 text ({exc})") from None
        return
    dtype = DTYPES[first.tensor_type]
    itemsize = dtype.itemsize
    dims = first.dims
    if dims == (0,) and total == itemsize:  # MindSpore reads dims [0] as a scalar
        dims = ()
    numel = strides = 1
    for d in dims:
        numel *= d
        strides *= max(d, 1)
        if strides > 1 << 62:  # an empty tensor's strides must still fit torch's int64
            raise MalformedFileError(path, f"{where}: the dims are too large")
    if numel * itemsize != total:
        raise MalformedFileError(
            path, f"{where}: the dims need {numel} x {itemsize} bytes, the file holds {total}"
        )
    if keep is not None and not keep(first.tag):
        return
    buffer = bytearray(total)  # bounded by the file's size (checked above)
    at = 0
    for p in group:
        buffer[at : at + len(p.content)] = p.content
        at += len(p.content)
    if dtype == torch.bool and buffer.translate(None, b"\0\1"):
        raise MalformedFileError(path, f"{where}: a Bool tensor holds bytes other than 0 and 1")
    tensor = torch.frombuffer(buffer, dtype=dtype) if total else torch.empty(0, dtype=dtype)
    out[first.tag] = tensor.reshape(dims)


def _pieces(buf: memoryview, path: str) -> Iterable[_Piece]:
    """The ``Checkpoint.value`` entries of ``buf``, each checked."""
    for number, wire, value in _fields(buf, 0, len(buf), path, "the file"):
        if number != 1:
            continue  # an unknown field: skipped, as protobuf does
        if wire != _LEN:
            raise MalformedFileError(path, f"a Checkpoint.value has wire type {wire}, not 2")
        yield _value(buf, *value, path)


def _value(buf: memoryview, start: int, end: int, path: str) -> _Piece:
    tag: str | None = None
    tensor: tuple[int, int] | None = None
    for number, wire, value in _fields(buf, start, end, path, "a Checkpoint.Value"):
        if number in (1, 2, 3) and wire != _LEN:
            raise MalformedFileError(path, f"Checkpoint.Value field {number} has wire type {wire}")
        if number == 1:
            if tag is not None:
                raise MalformedFileError(path, f"a Checkpoint.Value has two tags ({tag!r})")
            tag = _text(buf, *value, MAX_TAG_BYTES, path, "a tag")
            if not tag or "\0" in tag:
                raise MalformedFileError(path, f"a tag is empty or holds NUL: {tag!r}")
        elif number == 2:
            if tensor is not None:
                raise MalformedFileError(path, "a Checkpoint.Value has two tensors")
            tensor = value
        elif number == 3:
            raise MalformedFileError(
                path, f"holds a MapParameter (maptensor) {tag!r}, which jisu does not read"
            )
    if tag is None:
        raise MalformedFileError(path, "a Checkpoint.Value has no tag")
    if tensor is None:
        raise MalformedFileError(path, f"the value {tag!r} has no tensor")
    tensor_type, dims, content = _tensor(buf, *tensor, path, tag)
    return _Piece(tag, tensor_type, dims, content)


def _tensor(
    buf: memoryview, start: int, end: int, path: str, tag: str
) -> tuple[str, tuple[int, ...], memoryview]:
    dims: list[int] = []
    tensor_type: str | None = None
    content: memoryview | None = None
    where = f"the tensor {tag!r}"

    def add_dim(d: int) -> None:
        if d >= 1 << 63:
            raise MalformedFileError(path, f"{where} has a negative dim ({d - (1 << 64)})")
        if len(dims) >= MAX_RANK:
            raise MalformedFileError(path, f"{where} has more than {MAX_RANK} dims")
        dims.append(d)

    for number, wire, value in _fields(buf, start, end, path, where):
        if number == 1 and wire == _VARINT:
            add_dim(value)
        elif number == 1 and wire == _LEN:  # packed dims: protobuf accepts both
            at, stop = value
            while at < stop:
                d, at = _varint(buf, at, stop, path, where)
                add_dim(d)
        elif number in (2, 3) and wire != _LEN:
            raise MalformedFileError(path, f"{where}: field {number} has wire type {wire}")
        elif number == 2:
            if tensor_type is not None:
                raise MalformedFileError(path, f"{where} has two tensor_types")
            tensor_type = _text(buf, *value, _MAX_TYPE_BYTES, path, f"{where}'s tensor_type")
            if tensor_type not in DTYPES and tensor_type != _STR:
                raise MalformedFileError(
                    path,
                    f"{where} has tensor_type {tensor_type!r}; jisu reads "
                    f"{', '.join([*DTYPES, _STR])}",
                )
        elif number == 3:
            if content is not None:
                raise MalformedFileError(path, f"{where} has two tensor_contents")
            content = buf[value[0] : value[1]]
    if tensor_type is None or content is None:
        raise MalformedFileError(path, f"{where} lacks its tensor_type or tensor_content")
    return tensor_type, tuple(dims), content


def _text(buf: memoryview, start: int, end: int, limit: int, path: str, what: str) -> str:
    if end - start > limit:
        raise MalformedFileError(path, f"{what} is {end - start} bytes long (at most {limit})")
    try:
        return bytes(buf[start:end]).decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedFileError(path, f"{what} is not UTF-8: {bytes(buf[start:end])!r}") from None


def _fields(buf: memoryview, start: int, end: int, path: str, where: str):
    """``(field number, wire type, value)`` of the message in ``buf[start:end]``; the value
    is an int (varint) or a ``(start, end)`` span (length-delimited); fixed-size fields are
    skipped. Every length is checked against ``end``."""
    at = start
    while at < end:
        key, at = _varint(buf, at, end, path, where)
        number, wire = key >> 3, key & 7
        if number == 0 or number >= 1 << 29:
            raise MalformedFileError(path, f"{where}: bad field number {number}")
        if wire == _VARINT:
            value, at = _varint(buf, at, end, path, where)
            yield number, wire, value
        elif wire == _LEN:
            length, at = _varint(buf, at, end, path, where)
            if length > end - at:
                raise MalformedFileError(
                    path, f"{where}: a field of {length} bytes runs past its end (truncated?)"
                )
            yield number, wire, (at, at + length)
            at += length
        elif wire in _SKIP:
            at += _SKIP[wire]
            if at > end:
                raise MalformedFileError(path, f"{where}: a fixed-size field is truncated")
        else:
            raise MalformedFileError(path, f"{where}: wire type {wire} is not valid here")


def _varint(buf: memoryview, at: int, end: int, path: str, where: str) -> tuple[int, int]:
    value = shift = 0
    for i in range(10):
        if at >= end:
            raise MalformedFileError(path, f"{where}: truncated inside a number")
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if i == 9 and byte > 1:
                break
            return value, at
        shift += 7
    raise MalformedFileError(path, f"{where}: a number longer than 64 bits")


# --------------------------------------------------------------------------- writing
def tensor_type_of(tensor: torch.Tensor, name: str) -> str:
    """MindSpore's ``tensor_type`` for ``tensor``'s dtype (TypeError for others)."""
    try:
        return TENSOR_TYPES[tensor.dtype]
    except KeyError:
        raise TypeError(
            f"save_checkpoint: {name!r} is a {tensor.dtype} tensor; MindSpore checkpoints hold "
            f"{', '.join(str(d) for d in TENSOR_TYPES)}. Received: dtype={tensor.dtype}"
        ) from None


def write_ckpt(f: IO[bytes], items: Iterable[tuple[str, Value]], *, crc_check: bool = False):
    """Write ``(name, tensor or str)`` pairs to ``f`` in MindSpore's format, one value per
    parameter (split every :data:`SLICE_BYTES`, as MindSpore does), then the CRC trailer when
    ``crc_check``. The caller checks names and types."""
    crc = 0
    for name, value in items:
        for chunk in _encode(name, value):
            f.write(chunk)
            if crc_check:
                crc = zlib.crc32(chunk, crc)
    if crc_check:
        f.write(_CRC_MARK + crc.to_bytes(10, "big"))


def _encode(name: str, value: Value) -> Iterable[bytes | memoryview]:
    """The serialized one-value ``Checkpoint`` messages of ``value``, as byte chunks."""
    if isinstance(value, str):
        dims, tensor_type = [0], _STR
        content = memoryview(np.array(value).tobytes())  # NumPy's UTF-32, as MindSpore
    else:
        tensor_type = tensor_type_of(value, name)
        dims = list(value.shape)
        flat = value.detach().cpu().contiguous().reshape(-1)
        content = memoryview(flat.view(torch.uint8).numpy())
    tag = name.encode("utf-8")
    head = b"".join(b"\x08" + _uvarint(d) for d in dims)
    head += b"\x12" + _uvarint(len(tensor_type)) + tensor_type.encode()
    starts = range(0, len(content), SLICE_BYTES) if len(content) else [0]
    for at in starts:
        part = content[at : at + SLICE_BYTES]
        tensor = head + b"\x1a" + _uvarint(len(part))
        tensor_len = len(tensor) + len(part)
        entry = b"\x0a" + _uvarint(len(tag)) + tag + b"\x12" + _uvarint(tensor_len)
        yield b"\x0a" + _uvarint(len(entry) + tensor_len) + entry + tensor
        yield part


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def looks_like_ckpt(head: bytes) -> bool:
    """Whether a file's first bytes may start a MindSpore checkpoint: a ``Checkpoint.value``
    field (``0x0a``, a length) whose ``Value`` starts with its tag (``0x0a``). A torch file or
    a checkpoint of jisu's earlier format starts with ``PK`` (a zip archive) instead."""
    if len(head) < 3 or head[0] != 0x0A:
        return False
    at = 1
    while at < len(head) and head[at] & 0x80:
        at += 1
    return at + 1 < len(head) and head[at + 1] == 0x0A
