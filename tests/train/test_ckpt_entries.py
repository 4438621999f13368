"""The ``.ckpt`` entry table under load: a cap on the number of entries, work and memory
linear in the entries (counted deterministically: profiler events and tracemalloc, no clock),
and a fuzzer of many-entry files with damaged entry headers, in which the fast reader of
plainly laid-out entries must agree with the general protobuf reader."""

from __future__ import annotations

import io
import sys
import tracemalloc

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jisu.train import ckpt_table, ms_checkpoint
from jisu.train.checkpoint import MalformedFileError
from jisu.train.serialization import load_checkpoint


def _tiny_file(n: int, dtype=torch.float32) -> bytes:
    buf = io.BytesIO()
    ms_checkpoint.write_ckpt(buf, ((f"layer.{i}.w", torch.ones(2, dtype=dtype)) for i in range(n)))
    return buf.getvalue()


def test_entry_count_is_capped_before_anything_is_built(tmp_path, monkeypatch):
    assert ms_checkpoint.MAX_ENTRIES == 1_000_000
    monkeypatch.setattr(ms_checkpoint, "MAX_ENTRIES", 1000)
    (tmp_path / "ok.ckpt").write_bytes(_tiny_file(1000))
    assert len(load_checkpoint(str(tmp_path / "ok.ckpt"))) == 1000
    (tmp_path / "many.ckpt").write_bytes(_tiny_file(1001))
    with pytest.raises(MalformedFileError, match="more than 1000 entries") as info:
        load_checkpoint(str(tmp_path / "many.ckpt"))
    assert str(tmp_path / "many.ckpt") in str(info.value)
    assert "MAX_ENTRIES" in str(info.value)


def test_entries_beyond_the_free_memory_are_refused(tmp_path, monkeypatch):
    (tmp_path / "t.ckpt").write_bytes(_tiny_file(100))
    monkeypatch.setattr(ms_checkpoint, "_free_memory", lambda: 100 * 1024)
    with pytest.raises(MalformedFileError, match="100 entries, which would take about"):
        load_checkpoint(str(tmp_path / "t.ckpt"))


def _profile_events(data: bytes) -> int:
    """How many Python and C calls parsing ``data`` makes (deterministic)."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += 1

    sys.setprofile(profile)
    try:
        ms_checkpoint.parse_ckpt(data)
    finally:
        sys.setprofile(None)
    return count


def test_parse_work_is_linear_and_small_per_entry():
    small, large = _tiny_file(500), _tiny_file(2000)
    calls_small, calls_large = _profile_events(small), _profile_events(large)
    assert calls_large <= 4.1 * calls_small
    # profiler events (a call and its return) per entry: 40 here; 86 before the fast path
    assert calls_large / 2000 < 50


def _peak(data: bytes) -> int:
    tracemalloc.start()
    try:
        out = ms_checkpoint.parse_ckpt(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(out)
    return peak


def test_parse_memory_is_linear_in_the_entries():
    small, large = _tiny_file(1000), _tiny_file(4000)
    assert _peak(large) <= 4.4 * _peak(small)
    assert _peak(large) <= 12 * len(large)  # Python objects per entry, besides torch's


def test_what_jisu_and_mindspore_write_takes_the_fast_path():
    """Every value as MindSpore lays it out (jisu writes the same bytes) is read by the fast
    path, and it gives what the general reader gives."""
    data = _tiny_file(3) + _value(b"s", [0], b"str", "ab".encode("utf-32-le"), False)
    data += _value(b"scalar", [], b"Int64", bytes(8), False)
    table = ckpt_table.entry_table(data, len(data), "<t>", 10)
    assert [p[:3] for p in table] == [
        ("layer.0.w", "Float32", (2,)),
        ("layer.1.w", "Float32", (2,)),
        ("layer.2.w", "Float32", (2,)),
        ("s", "str", (0,)),
        ("scalar", "Int64", ()),
    ]
    for number, _wire, (start, end), _ in _top_fields(data):
        assert number == 1
        assert ckpt_table._plain_value(data, start, end) == ckpt_table._value(
            data, start, end, "<t>"
        )
    assert _general_table(data) == table


def _top_fields(data: bytes):
    at = 0
    while at < len(data):
        field = ckpt_table._field(data, at, len(data), "<t>", "the file")
        at = field[3]
        yield field


# --------------------------------------------------------------------------- fuzzing
def _value(tag: bytes, dims, tensor_type: bytes, content: bytes, packed: bool) -> bytes:
    uv = ms_checkpoint._uvarint
    if packed and dims:
        body = b"".join(uv(d) for d in dims)
        tensor = b"\x0a" + uv(len(body)) + body
    else:
        tensor = b"".join(b"\x08" + uv(d) for d in dims)
    tensor += b"\x12" + uv(len(tensor_type)) + tensor_type
    tensor += b"\x1a" + uv(len(content)) + content
    entry = b"\x0a" + uv(len(tag)) + tag + b"\x12" + uv(len(tensor)) + tensor
    return b"\x0a" + uv(len(entry)) + entry


_ENTRY = st.tuples(
    st.sampled_from([b"w", b"b", b"layer.1.weight", b"", b"\xff", b"a\0b", b"x" * 130]),
    st.lists(st.integers(0, 4) | st.sampled_from([1 << 62, (1 << 64) - 1]), max_size=3),
    st.sampled_from([b"Float32", b"Bool", b"Int8", b"str", b"Float64", b"Complex64", b""]),
    st.binary(max_size=24),
    st.booleans(),
)
_FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def _general_table(data: bytes):
    """The table read by the general protobuf reader alone."""
    original = ckpt_table._plain_value
    ckpt_table._plain_value = lambda buf, at, end: None
    try:
        return ckpt_table.entry_table(data, len(data), "<f>", 10_000)
    finally:
        ckpt_table._plain_value = original


def _outcome(read):
    try:
        return read()
    except MalformedFileError as exc:
        return ("error", str(exc))


@_FUZZ
@given(
    st.lists(_ENTRY, max_size=30),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    st.integers(0, 10_000),
)
def test_fuzz_entry_tables(entries, damage, cut):
    """Many entries, some damaged in their headers (byte overwrites, a cut): the table reader
    either refuses with MalformedFileError or gives exactly what the general reader gives, and
    what parses holds no tensor bigger than the file."""
    data = bytearray(b"".join(_value(*e) for e in entries))
    for at, byte in damage:
        if data:
            data[at % len(data)] = byte
    data = bytes(data[: len(data) - cut % (len(data) + 1) if cut % 3 == 0 else len(data)])
    fast = _outcome(lambda: ckpt_table.entry_table(data, len(data), "<f>", 10_000))
    assert fast == _outcome(lambda: _general_table(data))
    try:
        result = ms_checkpoint.parse_ckpt(data)
    except MalformedFileError:
        return
    for name, value in result.items():
        assert isinstance(name, str) and name and "\0" not in name
        if isinstance(value, torch.Tensor):
            assert value.numel() * value.element_size() <= len(data)
