"""Hostile ``.safetensors`` files: every malformed file (header length huge or beyond the file,
offsets outside the data or overlapping, dtype/shape against the byte span, truncation,
garbage JSON, names twice ...) raises ``MalformedFileError`` naming the file and the problem,
quickly, without a crash, a hang or a large allocation. Fuzzed as the ``.ckpt`` reader is
(tests/train/test_mindspore_checkpoint.py)."""

from __future__ import annotations

import json
import os
import resource
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jisu.train import safetensors_format as sf
from jisu.train.safetensors_format import MalformedFileError, parse_safetensors, read_safetensors

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_safetensors")
with open(os.path.join(HERE, "ms_net.safetensors"), "rb") as _f:
    ORIGINAL = _f.read()
with open(os.path.join(HERE, "ms_net_crc.safetensors"), "rb") as _f:
    ORIGINAL_CRC = _f.read()


def _file(header, data=b"", n=None):
    """A safetensors file: a header (dict -> JSON, str or bytes), its length (or ``n``), data."""
    if isinstance(header, dict):
        header = json.dumps(header)
    if isinstance(header, str):
        header = header.encode()
    return struct.pack("<Q", len(header) if n is None else n) + header + data


def _t(dtype="F32", shape=(1,), offsets=(0, 4)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def _crc_file(crc):
    header = json.dumps({"__metadata__": {"format": "ms", "crc_num": crc}, "w": _t()})
    return _file(header, b"\0" * 4)


CASES = [
    (b"", "is 0 bytes; a safetensors file starts with an 8-byte header length"),
    (b"\x02\0\0", "is 3 bytes"),
    (_file("{}", n=(1 << 64) - 1), "header length 18446744073709551615 is over 100000000"),
    (_file("{}", n=1 << 63), "is over 100000000"),
    (_file("{}", n=100), "header length is 100 bytes but only 2 bytes follow it"),
    (_file("{}", n=99_999_999), "only 2 bytes follow"),
    (_file('{"a":'), "not a valid safetensors file: invalid JSON"),
    (_file("[1, 2]"), "invalid JSON"),
    (_file(b'{"\xff": 1}'), "invalid UTF-8"),
    (_file({"a": _t(offsets=(0, 4))}, b"\0" * 2), "not a valid safetensors file"),
    (_file({"a": _t(offsets=(8, 12))}, b"\0" * 4), "invalid offset for tensor `a`"),
    (_file({"a": _t(), "b": _t()}, b"\0" * 4), "invalid offset for tensor"),  # overlap
    (_file({"a": _t(), "b": _t(offsets=(2, 6))}, b"\0" * 6), "invalid offset"),  # overlap
    (_file({"a": _t(), "b": _t(offsets=(8, 12))}, b"\0" * 12), "invalid offset"),  # a gap
    (_file({"a": _t(offsets=(4, 0))}, b"\0" * 4), "invalid offset"),
    (_file({"a": _t()}, b"\0" * 5), "file not fully covered"),  # trailing bytes
    (_file({"a": _t(shape=(2,))}, b"\0" * 4), "invalid shape, data type, or offset"),
    (_file({"a": _t(dtype="F64")}, b"\0" * 4), "invalid shape, data type, or offset"),
    (_file({"a": _t(shape=(1 << 32,) * 3)}, b"\0" * 4), "overflow"),
    (_file({"a": _t(shape=(-1,))}, b"\0" * 4), "invalid JSON"),
    (_file({"a": _t(dtype="Q9")}, b"\0" * 4), "unknown variant `Q9`"),
    (_file({"a": {"dtype": "F32", "shape": [1]}}, b"\0" * 4), "missing field"),
    (_file({"__metadata__": {"k": 1}}), "invalid JSON"),
    (
        _file('{"a":' + json.dumps(_t()) + ',"a":' + json.dumps(_t()) + "}", b"\0" * 4),
        "its header names 'a' twice",
    ),
    (_file({"a": _t(dtype="F8_E4M3", offsets=(0, 1))}, b"\0"), "dtype 'F8_E4M3'; MindSpore's"),
    (_file({"a": _t(dtype="C64", offsets=(0, 8))}, b"\0" * 8), "dtype 'C64'"),
    (_file({"": _t()}, b"\0" * 4), "the tensor name '' is empty"),
    (_file({"a\0b": _t()}, b"\0" * 4), "holds NUL"),
    (_file({"x" * 5000: _t()}, b"\0" * 4), "is longer than 4096 bytes"),
    (_file({"a": _t(shape=(1,) * 33)}, b"\0" * 4), "more than 32 dims"),
    (_file({"a": _t("BOOL", (2,), (0, 2))}, b"\0\2"), "BOOL tensor holds bytes other than"),
    (_file({"a": _t(shape=(0, 1 << 40, 1 << 40), offsets=(0, 0))}), "is too large"),
    (_file({"__metadata__": {"a": "Int4"}, "a": _t()}, b"\0" * 4), "MindSpore's qint4x2"),
    (_file({"__metadata__": {"a": "F99"}, "a": _t()}, b"\0" * 4), "not a MindSpore dtype"),
    (_crc_file("12345"), "is damaged: its header's crc_num is '12345'"),
    (_crc_file("abc"), "crc_num is 'abc'"),
    (_crc_file("-1"), "crc_num is '-1'"),
]


@pytest.mark.parametrize(("data", "reason"), CASES)
def test_malformed_files_are_refused(tmp_path, data, reason):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(MalformedFileError, match=reason) as info:
        read_safetensors(path)
    assert str(path) in str(info.value)
    assert info.value.path == str(path)


def test_refusals_are_quick_and_small(tmp_path):
    """All the cases together: well under a second, and no large allocation (peak RSS)."""
    before, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter()
    for data, _ in CASES * 3:
        with pytest.raises(MalformedFileError):
            parse_safetensors(data)
    assert time.perf_counter() - start < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 64 << 10  # KiB


def test_not_a_file_and_size_limit(tmp_path, monkeypatch):
    with pytest.raises(MalformedFileError, match="not a regular file"):
        read_safetensors(tmp_path)
    fifo = tmp_path / "fifo.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(MalformedFileError, match="not a regular file"):
        read_safetensors(fifo)  # refused, not waited on
    with pytest.raises(FileNotFoundError):
        read_safetensors(tmp_path / "missing.safetensors")
    (tmp_path / "net.safetensors").write_bytes(ORIGINAL)
    monkeypatch.setattr(sf, "MAX_FILE_BYTES", 1000)
    with pytest.raises(MalformedFileError, match=f"is {len(ORIGINAL)} bytes, more than jisu"):
        read_safetensors(tmp_path / "net.safetensors")


def test_a_header_in_any_order_is_read():
    """MindSpore's own reader wants the header's entries in offset order; the format (and
    jisu) does not."""
    data = _file({"b": _t(offsets=(4, 8)), "a": _t(offsets=(0, 4))}, struct.pack("<2f", 1, 2))
    assert {k: v.tolist() for k, v in parse_safetensors(data).items()} == {"a": [1], "b": [2]}


# --------------------------------------------------------------------------- fuzzing
def _check_result(data, result):
    total = 0
    for name, value in result.items():
        assert isinstance(name, str) and name and "\0" not in name
        total += value.numel() * value.element_size()
    assert total <= len(data)


def _parse(data):
    try:
        _check_result(data, parse_safetensors(data))
    except MalformedFileError as exc:
        assert exc.path == "<bytes>" and exc.reason


_FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


@_FUZZ
@given(st.integers(0, len(ORIGINAL)))
def test_fuzz_truncations(cut):
    _parse(ORIGINAL[:cut])


@_FUZZ
@given(
    st.sampled_from([ORIGINAL, ORIGINAL_CRC]),
    st.lists(st.tuples(st.integers(0, len(ORIGINAL) - 1), st.integers(0, 7)), max_size=8),
)
def test_fuzz_bit_flips(original, flips):
    data = bytearray(original)
    for at, bit in flips:
        data[at % len(data)] ^= 1 << bit
    _parse(bytes(data))


@_FUZZ
@given(st.binary(max_size=400))
def test_fuzz_random_bytes(data):
    _parse(data)


@_FUZZ
@given(st.integers(0, (1 << 64) - 1))
def test_fuzz_header_length(n):
    _parse(struct.pack("<Q", n) + ORIGINAL[8:])


_DTYPES = ["BOOL", "U8", "I16", "F32", "BF16", "U64", "F8_E5M2", "C64", "F4", "X"]
_BIG = st.one_of(st.integers(0, 64), st.integers(0, (1 << 64) - 1), st.integers(-5, -1))


@_FUZZ
@given(
    st.dictionaries(
        st.text(max_size=6),
        st.fixed_dictionaries(
            {
                "dtype": st.sampled_from(_DTYPES),
                "shape": st.lists(_BIG, max_size=4),
                "data_offsets": st.lists(_BIG, min_size=2, max_size=2),
            }
        ),
        max_size=4,
    ),
    st.one_of(st.none(), st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3)),
    st.binary(max_size=80),
)
def test_fuzz_headers(tensors, metadata, data):
    header = dict(tensors)
    if metadata is not None:
        header["__metadata__"] = metadata
    _parse(_file(header, data))
