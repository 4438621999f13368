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
size is checked against :data:`MAX_FILE_BYTES` and the free memory before it is read, the
number of its entries against :data:`MAX_ENTRIES` (and, with their cost, the free memory)
before any tensor is built (:mod:`jisu.train.ckpt_table` reads the table in linear time), and
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
from collections.abc import Callable, Iterable, Sequence
from typing import IO

import numpy as np
import torch

from ..dataset.record.validate import MalformedFileError, open_regular
from .ckpt_table import MAX_RANK, MAX_TAG_BYTES, TENSOR_TYPE_NAMES, Piece, entry_table

__all__ = [
    "DTYPES",
    "MAX_ENTRIES",
    "MAX_FILE_BYTES",
    "MAX_RANK",
    "MAX_TAG_BYTES",
    "TENSOR_TYPES",
    "looks_like_ckpt",
    "parse_ckpt",
    "read_ckpt",
    "tensor_type_of",
    "write_ckpt",
]

#: the largest file :func:`read_ckpt` reads (it also refuses one larger than the free memory)
MAX_FILE_BYTES = 64 << 30
#: the most entries :func:`read_ckpt` reads. Each entry becomes a tensor of its own, and torch's
#: objects for one (tensor, storage, ``Parameter``, name, dict slot) cost one to two kilobytes
#: however small its data: a file of 100,000 one-byte tensors (2 MB) takes some 170 MB loaded.
#: The largest checkpoints in use hold far fewer entries (a 70B-parameter transformer about
#: 700 tensors, a 256-expert mixture of experts some 50,000; with Adam's two moments three
#: times that), so a million leaves room for them and bounds the overhead near 2 GiB.
#: Set it (``jisu.train.ms_checkpoint.MAX_ENTRIES = ...``) to read a file with more.
MAX_ENTRIES = 1_000_000
#: what :func:`read_ckpt` counts for each entry beyond its bytes when it checks the free memory
#: (measured: about 1.3 KB for a parsed tiny tensor, 1.7 KB once ``load_checkpoint`` made it a
#: named ``Parameter``)
ENTRY_OVERHEAD_BYTES = 2048
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
assert set(TENSOR_TYPE_NAMES) == {*DTYPES, _STR}  # the table reader's whitelist

_CRC_MARK = b"crc_num"
_CRC_TRAILER = len(_CRC_MARK) + 10

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
        MalformedFileError: the file is not a regular file, empty, too big (more than
            :data:`MAX_FILE_BYTES`, :data:`MAX_ENTRIES` entries, or the free memory), or
            malformed (the message names the file and what is wrong).
    """
    path = os.fspath(path)
    data = _read_bounded(path)
    if not data:
        raise MalformedFileError(path, "is empty (0 bytes): not a checkpoint")
    end = len(data)
    if data[-_CRC_TRAILER:-10] == _CRC_MARK:
        expected = int.from_bytes(data[-10:], "big")
        end -= _CRC_TRAILER
        actual = zlib.crc32(memoryview(data)[:end])
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
    pieces = entry_table(data, end, path, MAX_ENTRIES)
    if not pieces:
        raise MalformedFileError(path, f"holds no entry ({len(data)} bytes): not a checkpoint")
    free = _free_memory()
    need = len(pieces) * ENTRY_OVERHEAD_BYTES + end
    if free is not None and need > free:
        raise MalformedFileError(
            path,
            f"has {len(pieces)} entries, which would take about {need} bytes of memory to "
            f"load, more than the free memory ({free} bytes)",
        )
    return _build(data, pieces, path, keep)


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


def parse_ckpt(
    data: bytes | memoryview, path: str = "<bytes>", keep: Callable[[str], bool] | None = None
) -> OrderedDict[str, Value]:
    """Parse the protobuf bytes of a checkpoint (without its CRC trailer); see
    :func:`read_ckpt`. ``path`` names the source in errors."""
    buf = data if isinstance(data, bytes) else bytes(data)
    return _build(buf, entry_table(buf, len(buf), path, MAX_ENTRIES), path, keep)


def _build(
    buf: bytes, pieces: list[Piece], path: str, keep: Callable[[str], bool] | None
) -> OrderedDict[str, Value]:
    """The values of the checked entries ``pieces`` (consecutive pieces of one tag are the
    parts of one tensor), those that ``keep`` accepts built, in file order."""
    out: OrderedDict[str, Value] = OrderedDict()
    done: set[str] = set()
    i, count = 0, len(pieces)
    while i < count:
        tag = pieces[i][0]
        j = i + 1
        while j < count and pieces[j][0] == tag:
            j += 1
        if tag in done:
            raise MalformedFileError(path, f"holds the tag {tag!r} twice")
        done.add(tag)
        _finish(buf, pieces[i:j] if j > i + 1 else (pieces[i],), path, keep, out)
        while i < j:  # done with: freed as the tensors are built, so the peak stays low
            pieces[i] = None  # type: ignore[call-overload]
            i += 1
    return out


def _finish(
    buf: bytes,
    group: Sequence[Piece],
    path: str,
    keep: Callable[[str], bool] | None,
    out: OrderedDict[str, Value],
) -> None:
    """Check the pieces of one tag against each other and build the value if kept."""
    tag, tensor_type, dims = group[0][:3]
    for piece in group[1:]:
        if piece[1] != tensor_type or piece[2] != dims:
            raise MalformedFileError(
                path,
                f"the parts of {tag!r} disagree: {tensor_type}{list(dims)} "
                f"then {piece[1]}{list(piece[2])}",
            )
    total = group[0][4] - group[0][3] if len(group) == 1 else sum(p[4] - p[3] for p in group)
    if tensor_type == _STR:
        if total % 4:
            where = _where(group[0], total)
            raise MalformedFileError(path, f"{where}: a str's bytes are not UTF-32")
        if keep is None or keep(tag):
            raw = b"".join(buf[p[3] : p[4]] for p in group)
            try:
                out[tag] = raw.decode("utf-32-le").rstrip("\0")
            except UnicodeDecodeError as exc:
                where = _where(group[0], total)
                raise MalformedFileError(path, f"{where}: not UTF-32 text ({exc})") from None
        return
    dtype = DTYPES[tensor_type]
    itemsize = dtype.itemsize
    if dims == (0,) and total == itemsize:  # MindSpore reads dims [0] as a scalar
        dims = ()
    numel = strides = 1
    for d in dims:
        numel *= d
        strides *= max(d, 1)
        if strides > 1 << 62:  # an empty tensor's strides must still fit torch's int64
            raise MalformedFileError(path, f"{_where(group[0], total)}: the dims are too large")
    if numel * itemsize != total:
        raise MalformedFileError(
            path,
            f"{_where(group[0], total)}: the dims need {numel} x {itemsize} bytes, the file "
            f"holds {total}",
        )
    if keep is not None and not keep(tag):
        return
    if len(group) == 1:  # one copy, into memory the tensor owns
        buffer = bytearray(memoryview(buf)[group[0][3] : group[0][4]])
    else:
        buffer = bytearray(total)  # bounded by the file's size (checked above)
        at = 0
        for p in group:
            buffer[at : at + p[4] - p[3]] = memoryview(buf)[p[3] : p[4]]
            at += p[4] - p[3]
    if dtype == torch.bool and buffer.translate(None, b"\0\1"):
        where = _where(group[0], total)
        raise MalformedFileError(path, f"{where}: a Bool tensor holds bytes other than 0 and 1")
    tensor = torch.frombuffer(buffer, dtype=dtype) if total else torch.empty(0, dtype=dtype)
    out[tag] = tensor.reshape(dims) if len(dims) != 1 else tensor


def _where(piece: Piece, total: int) -> str:
    return f"{piece[0]!r} ({piece[1]}, dims {list(piece[2])}, {total} bytes)"


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
