"""Checkpoints as hostile files: nothing in them runs, damage is refused naming the file, a
full disk is said in words and leaves the previous checkpoint."""

from __future__ import annotations

import builtins
import errno
import functools
import io
import os
import struct
import tempfile
import zipfile
import zlib

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import jisu
from jisu.dataset.record.validate import MalformedFileError
from tests.test_files import use_full_disk

COMMENT = b"jisu-checkpoint v1 crc32=%08x"  # the documented format, written out independently


def small_state():
    torch.manual_seed(0)
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.ones(3, 4)).sum().backward()
    opt.step()
    return {"network": net.state_dict(), "optimizer": opt.state_dict(), "epoch": 1}


class RunsCode:
    """Pickles as a call of ``exec`` that writes ``marker``: what a hostile checkpoint does."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.exec, (f"open({self.marker!r}, 'w').write('ran')",))


def torch_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def with_checksum(data: bytes) -> bytes:
    """What an attacker who knows the format writes: a valid checksum over any content."""
    comment = COMMENT % zlib.crc32(data)
    assert data[-22:-18] == b"PK\x05\x06" and data[-2:] == b"\0\0"
    return data[:-2] + struct.pack("<H", len(comment)) + comment


@functools.cache
def checkpoint_bytes() -> bytes:
    """The bytes jisu.save_checkpoint writes for small_state()."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "a.ckpt")
        jisu.save_checkpoint(small_state(), path)
        with open(path, "rb") as f:
            return f.read()


def assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)


def test_the_file_is_a_torch_zip_whose_comment_is_the_crc_of_the_rest(tmp_path):
    path = tmp_path / "a.ckpt"
    jisu.save_checkpoint(small_state(), str(path))
    data = path.read_bytes()
    comment = zipfile.ZipFile(path).comment
    original = data[: -len(comment) - 2] + b"\0\0"  # the archive as torch wrote it
    assert comment == COMMENT % zlib.crc32(original)
    assert_same(torch.load(path, weights_only=True)["network"], small_state()["network"])


@pytest.mark.parametrize("signed", [True, False], ids=["with-checksum", "no-checksum"])
def test_a_checkpoint_that_would_run_code_is_refused_and_nothing_runs(tmp_path, signed):
    marker = tmp_path / "marker"
    data = torch_bytes({"network": {}, "payload": RunsCode(marker)})
    path = tmp_path / "evil.ckpt"
    path.write_bytes(with_checksum(data) if signed else data)
    with pytest.raises(MalformedFileError, match="could run code") as caught:
        jisu.load_checkpoint(str(path), crc_check=False)
    assert str(path) in str(caught.value)
    assert "exec" in str(caught.value)  # says what was refused
    assert not marker.exists()
    with pytest.raises(MalformedFileError):
        jisu.load_checkpoint(str(path), model=None)
    assert not marker.exists()


def test_saving_a_value_that_could_not_be_loaded_safely_is_refused(tmp_path):
    path = tmp_path / "a.ckpt"
    with pytest.raises(TypeError, match=r"save_obj\['best'\] is a numpy.float64"):
        jisu.save_checkpoint({"network": {}, "best": np.float64(0.5)}, str(path))
    with pytest.raises(TypeError, match=r"save_obj\['extra'\]\[1\] is a .*RunsCode"):
        jisu.save_checkpoint({"network": {}, "extra": [1, RunsCode(path)]}, str(path))
    with pytest.raises(TypeError, match=r"save_obj must be an nn\.Module or a dict"):
        jisu.save_checkpoint([torch.ones(1)], str(path))
    assert not path.exists()


def test_every_single_byte_change_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "a.ckpt"
    path.write_bytes(checkpoint_bytes())
    good = path.read_bytes()
    outcomes = set()
    with open(path, "r+b") as f:  # damage in place: rewriting whole files is slow
        for i in range(len(good)):
            put_byte(f, i, good[i] ^ 0xFF)
            with pytest.raises(MalformedFileError) as caught:
                jisu.load_checkpoint(str(path))
            assert str(path) in str(caught.value)
            outcomes.add(caught.value.reason.split(":")[0])
            put_byte(f, i, good[i])
    # the body, the zip end record, the checksum digits and the checksum marker were all hit
    assert {"is damaged", "has no jisu checksum"} <= outcomes


def put_byte(f, where, value):
    f.seek(where)
    f.write(bytes([value]))
    f.flush()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    changes=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=6),
    keep=st.one_of(st.none(), st.floats(0, 1, exclude_max=True)),
)
def test_damaged_files_give_the_same_weights_or_one_clear_error(tmp_path, changes, keep):
    path = tmp_path / "a.ckpt"
    state = small_state()
    data = bytearray(checkpoint_bytes())
    for where, value in changes:
        data[int(where * len(data))] = value
    if keep is not None:
        data = data[: int(keep * len(data))]
    path.write_bytes(data)
    try:
        loaded = jisu.load_checkpoint(str(path))
    except MalformedFileError as exc:
        assert str(path) in str(exc)
    else:  # only when the changes wrote the bytes that were there
        assert_same(loaded["network"], state["network"])
        assert_same(loaded["optimizer"]["state"][0], state["optimizer"]["state"][0])


def test_a_file_without_checksum_is_refused_unless_asked_and_then_loads_safely(tmp_path):
    path = tmp_path / "old.ckpt"
    state = small_state()
    torch.save(state, path)  # what jisu wrote before checksums
    with pytest.raises(MalformedFileError, match=r"no jisu checksum.*crc_check=False"):
        jisu.load_checkpoint(str(path))
    net = nn.Linear(4, 2)
    jisu.load_checkpoint(str(path), net=net, crc_check=False)
    assert_same(net.state_dict(), state["network"])
    path.write_bytes(b"not a checkpoint at all" * 10)
    with pytest.raises(MalformedFileError, match=r"is not a checkpoint \(not a torch\.save zip"):
        jisu.load_checkpoint(str(path), crc_check=False)


def test_a_well_formed_file_that_is_not_a_checkpoint_is_refused(tmp_path):
    path = tmp_path / "a.ckpt"
    jisu.save_checkpoint({"weights": {}}, str(path))
    with pytest.raises(MalformedFileError, match="not a jisu checkpoint"):
        jisu.load_checkpoint(str(path))
    jisu.save_checkpoint({"network": {}, "epoch": -3}, str(path))
    with pytest.raises(MalformedFileError, match="bad 'epoch'"):
        jisu.load_checkpoint(str(path))
    jisu.save_checkpoint({"network": {}, "rng_state": {"torch": torch.zeros(3)}}, str(path))
    with pytest.raises(MalformedFileError, match="bad 'rng_state'"):
        jisu.load_checkpoint(str(path))


def test_a_full_disk_is_said_and_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "a.ckpt"
    jisu.save_checkpoint({"network": {"w": torch.ones(2)}}, str(path))
    use_full_disk(monkeypatch)
    big = {"network": {"w": torch.zeros(100_000)}}  # past the file buffer: torch sees the error
    with pytest.raises(OSError, match="No space left on the device") as caught:
        jisu.save_checkpoint(big, str(path))
    assert caught.value.errno == errno.ENOSPC
    assert f"'{tmp_path}'" in str(caught.value) and "'a.ckpt'" in str(caught.value)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["a.ckpt"]  # no temporary file left
    assert jisu.load_checkpoint(str(path))["network"]["w"].tolist() == [1.0, 1.0]
