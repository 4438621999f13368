"""The entry table of a MindSpore ``.ckpt`` (see :mod:`jisu.train.ms_checkpoint` for the
format): each ``Checkpoint.Value`` checked and listed as ``(tag, tensor_type, dims, start,
end)``, the content a span of the file's bytes (nothing is copied or allocated per entry but
that small tuple), at most ``max_entries`` of them.

The time is linear in the file with a small cost per entry: a value laid out as MindSpore and
jisu write it (tag, then the tensor: unpacked dims, type, content, nothing else) is read by
:func:`_plain_value` in a handful of byte comparisons; anything else (other field orders,
packed dims, unknown fields, and every damaged value) goes through the general protobuf
reader :func:`_value`, which accepts what protobuf accepts and names what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..dataset.record.validate import MalformedFileError

#: the longest tag (parameter name), in UTF-8 bytes
MAX_TAG_BYTES = 4096
#: the highest rank of a tensor
MAX_RANK = 32
#: MindSpore's ``tensor_type`` strings that jisu reads (``"str"``: an ``append_dict`` string)
TENSOR_TYPE_NAMES = (
    "Bool", "Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64",
    "Float16", "BFloat16", "Float32", "Float64", "str",
)  # fmt: skip
_TYPES = {name.encode(): name for name in TENSOR_TYPE_NAMES}
_MAX_TYPE_BYTES = 16

# wire types
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_SKIP = {_I64: 8, _I32: 4}
_BIG = 1 << 63

#: one entry: tag, tensor_type, dims, and the span of its content in the file's bytes
Piece = tuple[str, str, tuple[int, ...], int, int]


def entry_table(buf: bytes, end: int, path: str, max_entries: int) -> list[Piece]:
    """The ``Checkpoint.value`` entries of ``buf[:end]``, each checked, in file order.

    Raises:
        MalformedFileError: the bytes are not a checkpoint, or hold more than
            ``max_entries`` entries (checked as they are counted: nothing more is read).
    """
    pieces: list[Piece] = []
    append = pieces.append
    at = 0
    while at < end:
        number, wire, value, at = _field(buf, at, end, path, "the file")
        if number != 1:
            continue  # an unknown field: skipped, as protobuf does
        if wire != _LEN:
            raise MalformedFileError(path, f"a Checkpoint.value has wire type {wire}, not 2")
        if len(pieces) >= max_entries:
            raise MalformedFileError(
                path,
                f"holds more than {max_entries} entries, more than jisu reads "
                "(jisu.train.ms_checkpoint.MAX_ENTRIES; each entry becomes a tensor of its "
                "own, which costs memory beyond its bytes)",
            )
        start, stop = value
        append(_plain_value(buf, start, stop) or _value(buf, start, stop, path))
    return pieces


def _plain_value(buf: bytes, at: int, end: int) -> Piece | None:
    """A value laid out exactly as MindSpore writes it, with every check passed; None for
    anything else (the general reader then reads it or says what is wrong)."""
    if end - at < 4 or buf[at] != 0x0A:
        return None
    n = buf[at + 1]
    at += 2
    stop = at + n
    if not 0 < n < 0x80 or stop + 2 > end or buf[stop] != 0x12:
        return None
    try:
        tag = buf[at:stop].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\0" in tag:
        return None
    n, at = _short_varint(buf, stop + 1, end)
    if at + n != end:  # the tensor must fill the value: nothing after it
        return None
    dims = []
    while at < end and buf[at] == 0x08:
        d, at = _short_varint(buf, at + 1, end)
        if d < 0 or len(dims) == MAX_RANK:
            return None
        dims.append(d)
    if at + 2 > end or buf[at] != 0x12:
        return None
    n = buf[at + 1]
    tensor_type = _TYPES.get(buf[at + 2 : at + 2 + n]) if n <= _MAX_TYPE_BYTES else None
    at += 2 + n
    if tensor_type is None or at >= end or buf[at] != 0x1A:
        return None
    n, at = _short_varint(buf, at + 1, end)
    if n < 0 or at + n != end:
        return None
    return tag, tensor_type, tuple(dims), at, end


def _short_varint(buf: bytes, at: int, end: int) -> tuple[int, int]:
    """A varint below 2**63 at ``at``, and where it ends; ``(-1, at)`` for anything else."""
    value = shift = 0
    while at < end and shift < 63:
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value, at) if value < _BIG else (-1, at)
        shift += 7
    return -1, at


# --------------------------------------------------------------------------- the general reader
def _value(buf: bytes, start: int, end: int, path: str) -> Piece:
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
    return (tag, *_tensor(buf, *tensor, path, tag))


def _tensor(
    buf: bytes, start: int, end: int, path: str, tag: str
) -> tuple[str, tuple[int, ...], int, int]:
    dims: list[int] = []
    tensor_type: str | None = None
    content: tuple[int, int] | None = None
    where = f"the tensor {tag!r}"

    def add_dim(d: int) -> None:
        if d >= _BIG:
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
            if tensor_type not in TENSOR_TYPE_NAMES:
                raise MalformedFileError(
                    path,
                    f"{where} has tensor_type {tensor_type!r}; jisu reads "
                    f"{', '.join(TENSOR_TYPE_NAMES)}",
                )
        elif number == 3:
            if content is not None:
                raise MalformedFileError(path, f"{where} has two tensor_contents")
            content = value
    if tensor_type is None or content is None:
        raise MalformedFileError(path, f"{where} lacks its tensor_type or tensor_content")
    return tensor_type, tuple(dims), *content


def _text(buf: bytes, start: int, end: int, limit: int, path: str, what: str) -> str:
    if end - start > limit:
        raise MalformedFileError(path, f"{what} is {end - start} bytes long (at most {limit})")
    try:
        return buf[start:end].decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedFileError(path, f"{what} is not UTF-8: {buf[start:end]!r}") from None


def _fields(buf: bytes, start: int, end: int, path: str, where: str) -> Iterator[tuple]:
    """``(field number, wire type, value)`` of the message in ``buf[start:end]``; the value
    is an int (varint) or a ``(start, end)`` span (length-delimited); fixed-size fields are
    skipped. Every length is checked against ``end``."""
    at = start
    while at < end:
        number, wire, value, at = _field(buf, at, end, path, where)
        if value is not None:
            yield number, wire, value


def _field(buf: bytes, at: int, end: int, path: str, where: str) -> tuple[int, int, object, int]:
    """The field at ``at``: ``(number, wire type, value or None, where the next starts)``."""
    key, at = _varint(buf, at, end, path, where)
    number, wire = key >> 3, key & 7
    if number == 0 or number >= 1 << 29:
        raise MalformedFileError(path, f"{where}: bad field number {number}")
    if wire == _VARINT:
        value, at = _varint(buf, at, end, path, where)
        return number, wire, value, at
    if wire == _LEN:
        length, at = _varint(buf, at, end, path, where)
        if length > end - at:
            raise MalformedFileError(
                path, f"{where}: a field of {length} bytes runs past its end (truncated?)"
            )
        return number, wire, (at, at + length), at + length
    if wire in _SKIP:
        at += _SKIP[wire]
        if at > end:
            raise MalformedFileError(path, f"{where}: a fixed-size field is truncated")
        return number, wire, None, at
    raise MalformedFileError(path, f"{where}: wire type {wire} is not valid here")


def _varint(buf: bytes, at: int, end: int, path: str, where: str) -> tuple[int, int]:
    if at < end and buf[at] < 0x80:  # the common one-byte number
        return buf[at], at + 1
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
