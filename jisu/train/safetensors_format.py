"""MindSpore's ``.safetensors`` checkpoints, read and written with the ``safetensors`` package.

A safetensors file is an 8-byte little-endian header length ``n``, ``n`` bytes of JSON
(``{"__metadata__": {...}, "conv.weight": {"dtype": "F32", "shape": [4, 3, 3, 3],
"data_offsets": [0, 432]}, ...}``, padded with spaces to a multiple of 8) and the data area:
each tensor's little-endian C-order bytes at its offsets, which cover the area exactly.
MindSpore 2.10's ``save_checkpoint(..., format="safetensors")`` writes it with the package: the
metadata is ``{"format": "ms"}`` (none without a tensor), ``"remove_redundancy"`` when asked,
``"crc_num"`` (the decimal CRC-32 of each name's UTF-8 then its bytes, in name order) with
``crc_check=True``; a metadata key equal to a tensor's name is its dtype (only qint4x2's
``"Int4"``). ``append_dict`` ints, floats and bools are Int64, Float32 and Bool scalars; a str
makes MindSpore's save fail, so jisu refuses one. MindSpore's loader reads :data:`DTYPES` and
returns the names sorted.

The reader treats the file as hostile: its size and header length are checked before anything
is read, the package (Rust) validates the header, dtypes, shapes and offsets, and jisu adds what
it lacks (a name twice, empty or NUL-holding names, dtypes MindSpore does not read, ranks, Bool
bytes, empty tensors with impossible strides, metadata dtype markers, the CRC). Anything wrong
raises :class:`~jisu.dataset.record.validate.MalformedFileError` naming the file and the
problem. Nothing is unpickled.
"""

from __future__ import annotations

import json
import os
import warnings
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping

import safetensors
import safetensors.torch
import torch

from ..dataset.record.validate import MalformedFileError, open_regular
from ..files import atomic_write
from .ms_checkpoint import MAX_RANK, MAX_TAG_BYTES

__all__ = [
    "parse_safetensors",
    "read_safetensors",
    "read_safetensors_metadata",
    "write_safetensors",
]

#: the largest file :func:`read_safetensors` reads (it also refuses one larger than free memory)
MAX_FILE_BYTES = 64 << 30
#: the longest JSON header, as the ``safetensors`` package (and MindSpore's own reader) allow
MAX_HEADER_BYTES = 100_000_000
#: the longest tensor name, in UTF-8 bytes
MAX_NAME_BYTES = MAX_TAG_BYTES

#: the safetensors dtypes MindSpore 2.10's loader reads -> torch dtypes
DTYPES: dict[str, torch.dtype] = {
    "BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16,
    "U16": torch.uint16, "I32": torch.int32, "U32": torch.uint32, "I64": torch.int64,
    "U64": torch.uint64, "F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32,
    "F64": torch.float64,
}  # fmt: skip
_TORCH_DTYPES = list(DTYPES.values())
_METADATA = "__metadata__"
_FORMAT = {"format": "ms"}
_MINDSPORES = {"format": ("ms",), "remove_redundancy": ("True", "False"), "crc_num": ()}
_HEAD = 8


# --------------------------------------------------------------------------- writing
def write_safetensors(
    path: str | os.PathLike,
    items: Iterable[tuple[str, torch.Tensor]],
    metadata: Mapping[str, str] | None = None,
    *,
    crc_check: bool = False,
) -> None:
    """Write ``(name, tensor)`` pairs as MindSpore 2.10 writes a ``.safetensors`` checkpoint.

    The header metadata is ``{"format": "ms"}`` plus ``metadata`` (and ``"crc_num"`` with
    ``crc_check``), none without a tensor: the bytes MindSpore writes (the same ``safetensors``
    serializer; with two metadata keys or more, their order varies from run to run, in
    MindSpore's files too). Built in memory, then written atomically
    (:func:`jisu.files.atomic_write`).

    Args:
        path: the file (written as given; no suffix is added).
        items: the names (MindSpore's parameter names) and CPU or device tensors.
        metadata: extra ``str -> str`` header entries, e.g. ``{"remove_redundancy": "True"}``.
        crc_check: add MindSpore's ``crc_num`` entry.

    Raises:
        TypeError: a name or metadata entry is not a str, a value is not a tensor (MindSpore
            cannot store a str in safetensors), or a dtype MindSpore does not read.
        ValueError: a name is empty, holds NUL, is too long, is ``"__metadata__"`` or comes
            twice, or a metadata key is a tensor's name (MindSpore would read it as a dtype).
    """
    tensors: dict[str, torch.Tensor] = {}
    storages: set[int] = set()
    for name, value in items:
        _check_name_to_write(name)
        if name in tensors:
            raise ValueError(f"write_safetensors: the name {name!r} comes twice")
        tensors[name] = tensor = _tensor_to_write(name, value)
        ptr = tensor.untyped_storage().data_ptr()
        if ptr and ptr in storages:  # tied weights: safetensors refuses memory shared by names
            tensors[name] = tensor = tensor.clone()
        storages.add(tensor.untyped_storage().data_ptr())
    header = _metadata_to_write(metadata, tensors)
    if header is None and tensors:  # MindSpore writes no metadata without a tensor
        header = dict(_FORMAT)
    if crc_check and tensors:
        crc = _crc(((name, tensors[name]) for name in sorted(tensors)), strict=True)
        header = (header or {}) | {"crc_num": str(crc)}
    data = safetensors.torch.save(tensors, metadata=header)
    with atomic_write(os.fspath(path)) as f:
        f.write(data)


def _check_name_to_write(name: object) -> None:
    if not isinstance(name, str):
        raise TypeError(
            f"write_safetensors: names must be str. Received: {name!r} ({type(name).__name__})"
        )
    problem = _name_problem(name)
    if problem is None and name == _METADATA:
        problem = "is the header's reserved key"
    if problem:
        raise ValueError(f"write_safetensors: the name {name!r} {problem}")


def _tensor_to_write(name: str, value: object) -> torch.Tensor:
    if isinstance(value, str):
        raise TypeError(
            f"write_safetensors: {name!r} is a str; MindSpore's safetensors checkpoints hold "
            "tensors only (MindSpore 2.10's save_checkpoint(format='safetensors') fails on a str "
            "append_dict entry): save it in a .ckpt file, or as header metadata"
        )
    if not isinstance(value, torch.Tensor) or value.layout != torch.strided:
        raise TypeError(
            f"write_safetensors: {name!r} must be a dense torch.Tensor. Received: {value!r:.80}"
        )
    if value.dtype not in _TORCH_DTYPES:
        raise TypeError(
            f"write_safetensors: {name!r} is a {value.dtype} tensor; MindSpore's safetensors "
            f"loader reads {', '.join(map(str, _TORCH_DTYPES))}. Received: dtype={value.dtype}"
        )
    return value.detach().cpu().contiguous()


def _metadata_to_write(
    metadata: Mapping[str, str] | None, tensors: Mapping[str, torch.Tensor]
) -> dict[str, str] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise TypeError(f"write_safetensors: metadata must be a dict. Received: {metadata!r}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"write_safetensors: metadata must map str to str. Received: {key!r}: {value!r}"
            )
        if key in tensors:
            raise ValueError(
                f"write_safetensors: the metadata key {key!r} is a tensor's name; MindSpore's "
                "loader reads such an entry as that tensor's dtype"
            )
        allowed = _MINDSPORES.get(key)
        if allowed is not None and value not in allowed:
            raise ValueError(
                f"write_safetensors: the metadata {key!r} is MindSpore's own entry ('format' is "
                "'ms', 'remove_redundancy' 'True' or 'False'; crc_check=True writes 'crc_num'). "
                f"Received: {key!r}: {value!r}"
            )
    return dict(_FORMAT) | dict(metadata)


def _crc(entries: Iterable[tuple[str, torch.Tensor]], strict: bool) -> int:
    """MindSpore's ``crc_num`` of ``(name, tensor)`` pairs in name order: CRC-32 over each
    name's UTF-8 then ``bytes()`` of its NumPy array. ``bytes()`` of a 0-d integer array is
    that many zero bytes (the array is an index), so an integer scalar ``n`` counts as ``n``
    zero bytes; MindSpore fails on a negative one and on a bfloat16 tensor (``strict``: so
    does jisu's writer; the reader counts their bytes)."""
    crc = 0
    for name, tensor in entries:
        crc = zlib.crc32(name.encode("utf-8"), crc)
        integer = not (tensor.is_floating_point() or tensor.dtype == torch.bool)
        if tensor.ndim == 0 and integer and tensor.item() >= 0:  # .item(): uint64 too
            crc = _crc_zeros(crc, tensor.item())
            continue
        if strict and ((tensor.ndim == 0 and integer) or tensor.dtype == torch.bfloat16):
            raise ValueError(
                f"write_safetensors: crc_check cannot count {name!r} ({tensor.dtype}, shape "
                f"{list(tensor.shape)}): MindSpore 2.10's CRC fails on a negative integer scalar "
                "and on bfloat16, in its save and in its crc_check load. Save without crc_check"
            )
        crc = zlib.crc32(tensor.reshape(-1).view(torch.uint8).numpy(), crc)
    return crc


_ZEROS: list[list[int]] = []  # _ZEROS[k]: the CRC register's operator for 2**k zero bytes


def _crc_zeros(crc: int, n: int) -> int:
    """``zlib.crc32(bytes(n), crc)`` in O(log n) steps (zlib's ``crc32_combine`` method)."""
    if n <= 1024:  # bounded work per scalar, even in a hostile file
        return zlib.crc32(bytes(n), crc)
    reg, k = crc ^ 0xFFFFFFFF, 0
    while n:
        if k == len(_ZEROS):  # one zero bit, squared three times: one byte; then squares
            one_bit = [0xEDB88320] + [1 << i for i in range(31)]
            _ZEROS.append(_square(_ZEROS[-1]) if _ZEROS else _square(_square(_square(one_bit))))
        if n & 1:
            reg = _apply(_ZEROS[k], reg)
        n, k = n >> 1, k + 1
    return reg ^ 0xFFFFFFFF


def _apply(operator: list[int], vector: int) -> int:
    out, i = 0, 0
    while vector:
        if vector & 1:
            out ^= operator[i]
        vector, i = vector >> 1, i + 1
    return out


def _square(operator: list[int]) -> list[int]:
    return [_apply(operator, row) for row in operator]


# --------------------------------------------------------------------------- reading
def read_safetensors(
    path: str | os.PathLike, *, crc_check: bool = False
) -> OrderedDict[str, torch.Tensor]:
    """Read a ``.safetensors`` file: ``OrderedDict`` name -> CPU tensor (a fresh copy), in
    name order, as MindSpore's ``load_checkpoint(f, format="safetensors")`` returns them.

    A ``crc_num`` in the header (MindSpore's ``crc_check=True``) is always verified.

    Args:
        path: the file.
        crc_check: warn (as MindSpore does) when the file has no ``crc_num``.

    Raises:
        FileNotFoundError: no such file.
        MalformedFileError: the file is not a regular file, too big, or malformed (the message
            names the file and what is wrong).
    """
    path = os.fspath(path)
    return parse_safetensors(_read_bounded(path), path, crc_check=crc_check)


def read_safetensors_metadata(path: str | os.PathLike) -> dict[str, str] | None:
    """The header metadata of a ``.safetensors`` file (``{"format": "ms", ...}`` for
    MindSpore's), after checking the whole file as :func:`read_safetensors` does."""
    path = os.fspath(path)
    data = _read_bounded(path)
    _deserialize(data, path)
    return _checked_header(data, path)


def parse_safetensors(
    data: bytes, path: str = "<bytes>", *, crc_check: bool = False
) -> OrderedDict[str, torch.Tensor]:
    """Parse the bytes of a ``.safetensors`` file; see :func:`read_safetensors`. ``path``
    names the source in errors."""
    _check_head(data[:_HEAD], len(data), path)
    entries = dict(_deserialize(data, path))
    metadata = _checked_header(data, path)
    out = OrderedDict((name, _tensor(path, name, entries[name])) for name in sorted(entries))
    crc = (metadata or {}).get("crc_num")
    if crc is not None:
        actual = _crc(out.items(), strict=False)
        if not crc.isdecimal() or int(crc) != actual:
            raise MalformedFileError(
                path, f"is damaged: its header's crc_num is {crc!r} but its tensors give {actual}"
            )
    elif crc_check:
        warnings.warn(
            f"load_checkpoint: '{path}' has no crc_num in its header, so it was not checked",
            stacklevel=3,
        )
    return out


def _check_head(head: bytes, size: int, path: str) -> None:
    """Check the header length ``head`` holds against the file's ``size``."""
    if size < _HEAD:
        raise MalformedFileError(
            path, f"is {size} bytes; a safetensors file starts with an 8-byte header length"
        )
    n = int.from_bytes(head, "little")
    if n > MAX_HEADER_BYTES:
        raise MalformedFileError(path, f"its header length {n} is over {MAX_HEADER_BYTES}")
    if n > size - _HEAD:
        raise MalformedFileError(
            path,
            f"its header length is {n} bytes but only {size - _HEAD} bytes follow it "
            "(truncated, or not a safetensors file)",
        )


def _read_bounded(path: str) -> bytes:
    """The bytes of ``path``, after checking its size and its header length against it."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        _check_head(f.read(_HEAD), size, path)
        available = _available_memory()
        if size > MAX_FILE_BYTES or (available is not None and 2 * size > available):
            raise MalformedFileError(
                path,
                f"is {size} bytes, more than jisu reads as a safetensors checkpoint (jisu."
                "train.safetensors_format.MAX_FILE_BYTES, or half the available memory: the "
                "bytes read and the tensors made of them)",
            )
        f.seek(0)
        data = f.read(size + 1)
    if len(data) != size:
        raise MalformedFileError(path, "changed size while it was being read")
    return data


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _deserialize(data: bytes, path: str) -> list[tuple[str, dict]]:
    """The ``safetensors`` package's validation and split: header JSON, dtypes, shapes against
    the byte spans, offsets inside the data area that cover it without gaps or overlaps."""
    try:
        return safetensors.deserialize(data)
    except (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError):
        raise
    except BaseException as exc:  # SafetensorError, or a Rust panic (a BaseException)
        reason = str(exc).removeprefix("Error while deserializing: ")
        raise MalformedFileError(path, f"is not a valid safetensors file: {reason}") from None


def _checked_header(data: bytes, path: str) -> dict[str, str] | None:
    """jisu's checks of a header that ``safetensors`` accepted; returns its metadata."""
    n = int.from_bytes(data[:_HEAD], "little")

    def pairs(items: list[tuple[str, object]]) -> dict:
        seen: dict[str, object] = {}
        for key, value in items:
            if key in seen:
                raise MalformedFileError(path, f"its header names {key!r} twice")
            seen[key] = value
        return seen

    try:
        header = json.loads(data[_HEAD : _HEAD + n].decode("utf-8"), object_pairs_hook=pairs)
    except MalformedFileError:
        raise
    except (ValueError, RecursionError) as exc:
        raise MalformedFileError(path, f"its header is not JSON jisu reads ({exc})") from None
    metadata = header.pop(_METADATA, None)
    for name in header:
        problem = _name_problem(name)
        if problem:
            raise MalformedFileError(path, f"the tensor name {name!r} {problem}")
        info = header[name]
        if info["dtype"] not in DTYPES:
            raise MalformedFileError(
                path,
                f"{name!r} has dtype {info['dtype']!r}; MindSpore's loader (and jisu) read "
                f"{', '.join(DTYPES)}",
            )
        if len(info["shape"]) > MAX_RANK:
            raise MalformedFileError(path, f"{name!r} has more than {MAX_RANK} dims")
        if metadata and name in metadata:
            marker = metadata[name]
            what = "MindSpore's qint4x2" if marker == "Int4" else "not a MindSpore dtype"
            raise MalformedFileError(
                path,
                f"its metadata gives {name!r} the dtype {marker!r} ({what}), which jisu does "
                "not read",
            )
    return metadata


def _tensor(path: str, name: str, entry: dict) -> torch.Tensor:
    dtype, shape, buffer = DTYPES[entry["dtype"]], entry["shape"], entry["data"]
    strides = 1
    for d in shape:
        strides *= max(d, 1)
        if strides > 1 << 62:  # an empty tensor's strides must still fit torch's int64
            raise MalformedFileError(path, f"{name!r}: the shape {shape} is too large")
    if dtype == torch.bool and buffer.translate(None, b"\0\1"):
        raise MalformedFileError(path, f"{name!r}: a BOOL tensor holds bytes other than 0 and 1")
    if not buffer:  # torch.frombuffer refuses an empty buffer
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(buffer, dtype=dtype).reshape(shape)


def _name_problem(name: str) -> str | None:
    if not name:
        return "is empty"
    if "\0" in name:
        return "holds NUL"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_BYTES} bytes"
    return None
