"""Checkpoints as hostile files: nothing in them runs, damage is refused naming the file, a
full disk is said in words and leaves the previous checkpoint. Both readers: the MindSpore
``.ckpt`` jisu writes now (its CRC trailer and its resume entry, unpickled with
``weights_only``), and jisu's earlier torch-zip format (read only), whose files are written
here from the documented format, as nothing in jisu writes them any more."""

from __future__ import annotations

import builtins
import errno
import functools
import io
import os
import struct
import tempfile
import warnings
import zlib

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

import jisu
from jisu.dataset.record.validate import MalformedFileError
from jisu.train.ckpt_state import RESUME_ENTRY
from jisu.train.serialization import write_checkpoint
from tests.test_files import use_full_disk

COMMENT = b"jisu-checkpoint v1 crc32=%08x"  # the earlier format, written out independently
CRC_MARK = b"crc_num"  # MindSpore's trailer: the mark and the CRC-32 as 10 big-endian bytes


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
def checkpoint_bytes(kind: str = "earlier") -> bytes:
    """The bytes of small_state() in jisu's earlier format, or ("mindspore") the bytes
    jisu.save_checkpoint writes, with the CRC trailer, for the same network and optimizer
    (a train step)."""
    if kind == "earlier":
        return with_checksum(torch_bytes(small_state()))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "a.ckpt")
        jisu.save_checkpoint(small_step(), path, crc_check=True)
        with open(path, "rb") as f:
            return f.read()


class Step:
    """A train step as the model zoo saves it: ``save_checkpoint(cb_params.train_network)``."""

    def __init__(self, network, optimizer):
        self.network, self.optimizer = network, optimizer


def small_step():
    torch.manual_seed(0)
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.ones(3, 4)).sum().backward()
    opt.step()
    return Step(net, opt)


def load_into_fresh(path, **kwargs):
    """Load ``path`` into a fresh Linear and SGD; returns their state dicts."""
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.5, momentum=0.5)
    jisu.load_checkpoint(str(path), net=net, optimizer=opt, **kwargs)
    return net.state_dict(), opt.state_dict()


def assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)


def test_a_file_jisu_writes_with_crc_check_ends_with_mindspores_crc_of_the_rest(tmp_path):
    data = checkpoint_bytes("mindspore")
    assert data[-17:-10] == CRC_MARK
    assert int.from_bytes(data[-10:], "big") == zlib.crc32(data[:-17])
    path = tmp_path / "a.ckpt"
    path.write_bytes(data)
    net, opt = load_into_fresh(path)
    step = small_step()
    assert_same(net, step.network.state_dict())
    assert_same(opt["state"][0], step.optimizer.state_dict()["state"][0])


def test_a_file_of_the_earlier_format_still_loads(tmp_path):
    path = tmp_path / "old.ckpt"
    path.write_bytes(checkpoint_bytes("earlier"))
    net, opt = load_into_fresh(path)
    assert_same(net, small_state()["network"])
    assert_same(opt["state"][0], small_state()["optimizer"]["state"][0])
    flat = jisu.load_checkpoint(str(path))  # MindSpore's flat dict, torch's names
    assert list(flat) == ["weight", "bias"] and flat["weight"].name == "weight"
    torch.testing.assert_close(flat["weight"].data, small_state()["network"]["weight"])


@pytest.mark.parametrize("signed", [True, False], ids=["with-checksum", "no-checksum"])
def test_a_checkpoint_that_would_run_code_is_refused_and_nothing_runs(tmp_path, signed):
    marker = tmp_path / "marker"
    data = torch_bytes({"network": {}, "payload": RunsCode(marker)})
    path = tmp_path / "evil.ckpt"
    path.write_bytes(with_checksum(data) if signed else data)
    with pytest.raises(MalformedFileError) as caught:
        jisu.load_checkpoint(str(path))
    assert str(path) in str(caught.value)
    if signed:
        assert "could run code" in str(caught.value)
        assert "exec" in str(caught.value)  # says what was refused
    else:  # a torch zip without jisu's checksum is never unpickled
        assert "no jisu checksum" in str(caught.value)
    assert not marker.exists()


def test_a_resume_entry_that_would_run_code_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "marker"
    evil = torch_bytes({"format": 1, "epoch": 0, "payload": RunsCode(marker)})
    path = tmp_path / "evil.ckpt"
    items = [("weight", torch.zeros(2, 4)), ("bias", torch.zeros(2))]
    items.append((RESUME_ENTRY, torch.frombuffer(bytearray(evil), dtype=torch.uint8)))
    write_checkpoint(str(path), items)
    flat = jisu.load_checkpoint(str(path))  # the entry is read as bytes, never unpickled
    with pytest.raises(MalformedFileError, match="could run code") as caught:
        jisu.load_param_into_net(nn.Linear(4, 2), flat)
    assert "exec" in str(caught.value)
    m = jisu.Model(nn.Linear(4, 2), nn.MSELoss(), torch.optim.SGD(nn.Linear(4, 2).parameters()))
    with pytest.raises(MalformedFileError, match="could run code") as caught:
        jisu.load_checkpoint(str(path), model=m)
    assert str(path) in str(caught.value)
    assert not marker.exists()


def test_saving_a_value_that_could_not_be_loaded_safely_is_refused(tmp_path):
    path = tmp_path / "a.ckpt"
    with pytest.raises(TypeError, match=r"resume state\['best'\] is a numpy.float64"):
        write_checkpoint(str(path), [], {"best": np.float64(0.5)})
    with pytest.raises(TypeError, match=r"resume state\['extra'\]\[1\] is a .*RunsCode"):
        write_checkpoint(str(path), [], {"extra": [1, RunsCode(path)]})
    with pytest.raises(TypeError, match=r"'best' must be a tensor or str"):
        jisu.save_checkpoint({"best": np.float64(0.5)}, str(path))
    with pytest.raises(TypeError, match=r"a list save_obj holds"):
        jisu.save_checkpoint([torch.ones(1)], str(path))
    with pytest.raises(TypeError, match=r"save_obj must be a torch module"):
        jisu.save_checkpoint(object(), str(path))
    assert not path.exists()


@pytest.mark.parametrize("kind", ["mindspore", "earlier"])
def test_every_single_byte_change_is_refused_naming_the_file(tmp_path, kind):
    path = tmp_path / "a.ckpt"
    path.write_bytes(checkpoint_bytes(kind))
    good = path.read_bytes()
    outcomes = set()
    with open(path, "r+b") as f:  # damage in place: rewriting whole files is slow
        for i in range(len(good)):
            put_byte(f, i, good[i] ^ 0xFF)
            with pytest.raises(MalformedFileError) as caught:
                load_into_fresh(path)
            assert str(path) in str(caught.value)
            outcomes.add(caught.value.reason.split(":")[0])
            put_byte(f, i, good[i])
    if kind == "earlier":  # the body, the zip end record, the checksum digits and marker
        assert {"is damaged", "has no jisu checksum"} <= outcomes
    else:  # the body and the CRC (a damaged mark leaves bytes that are not protobuf)
        assert "is damaged" in outcomes and len(outcomes) > 1


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
    kind=st.sampled_from(["mindspore", "earlier"]),
)
def test_damaged_files_give_the_same_weights_or_one_clear_error(tmp_path, changes, keep, kind):
    path = tmp_path / "a.ckpt"
    state = small_state()
    data = bytearray(checkpoint_bytes(kind))
    for where, value in changes:
        data[int(where * len(data))] = value
    if keep is not None:
        data = data[: int(keep * len(data))]
    path.write_bytes(data)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            net, opt = load_into_fresh(path, crc_check=True)
    except MalformedFileError as exc:
        assert str(path) in str(exc)
        return
    if any("has no CRC trailer" in str(w.message) for w in caught):
        # cut at an entry's end, with the trailer: MindSpore's format cannot tell such a
        # file from a whole one written without a CRC; crc_check=True said it is unchecked
        assert kind == "mindspore"
        return
    # only when the changes wrote the bytes that were there
    assert_same(net, state["network"])
    assert_same(opt["state"][0], state["optimizer"]["state"][0])


def test_a_file_without_checksum_is_refused_or_warned_about(tmp_path):
    path = tmp_path / "old.ckpt"
    torch.save(small_state(), path)  # what jisu wrote before checksums: never unpickled
    with pytest.raises(MalformedFileError, match=r"no jisu checksum.*weights_only=True"):
        jisu.load_checkpoint(str(path))
    path.write_bytes(b"not a checkpoint at all" * 10)
    with pytest.raises(MalformedFileError):
        jisu.load_checkpoint(str(path))
    jisu.save_checkpoint(small_step(), str(path))  # MindSpore's default: no trailer
    assert path.read_bytes()[-17:-10] != CRC_MARK
    with pytest.warns(UserWarning, match="has no CRC trailer"):
        jisu.load_checkpoint(str(path), crc_check=True)  # MindSpore warns too


def test_a_well_formed_file_that_is_not_a_checkpoint_is_refused(tmp_path):
    path = tmp_path / "a.ckpt"
    path.write_bytes(with_checksum(torch_bytes({"weights": {}})))
    with pytest.raises(MalformedFileError, match="not a jisu checkpoint"):
        jisu.load_checkpoint(str(path))
    path.write_bytes(with_checksum(torch_bytes({"network": {}, "epoch": -3})))
    with pytest.raises(MalformedFileError, match="bad 'epoch'"):
        jisu.load_checkpoint(str(path))
    bad_rng = {"network": {}, "rng_state": {"torch": torch.zeros(3)}}
    path.write_bytes(with_checksum(torch_bytes(bad_rng)))
    with pytest.raises(MalformedFileError, match="bad 'rng_state'"):
        jisu.load_checkpoint(str(path))
    # the resume entry of the new files is checked the same way when it is used
    m = jisu.Model(nn.Linear(4, 2), nn.MSELoss(), torch.optim.SGD(nn.Linear(4, 2).parameters()))
    for resume, reason in [
        ({"epoch": -3}, "bad 'epoch'"),
        ({"rng_state": {"torch": torch.zeros(3)}}, "bad 'rng_state'"),
        ({"buffers": [1]}, "bad 'buffers'"),
    ]:
        write_checkpoint(str(path), [], resume)
        with pytest.raises(MalformedFileError, match=reason):
            jisu.load_checkpoint(str(path), model=m)
    for value, reason in [
        (torch.zeros(3), "not a uint8 vector"),
        (torch.frombuffer(bytearray(torch_bytes({"epoch": 1})), dtype=torch.uint8), "format"),
        (torch.tensor([1, 2, 3], dtype=torch.uint8), "damaged"),
    ]:
        write_checkpoint(str(path), [(RESUME_ENTRY, value)])
        with pytest.raises(MalformedFileError, match=reason):
            jisu.load_checkpoint(str(path), model=m)


def test_a_full_disk_is_said_and_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "a.ckpt"
    jisu.save_checkpoint({"w": torch.ones(2)}, str(path))
    use_full_disk(monkeypatch)
    big = {"w": torch.zeros(100_000)}  # past the file buffer
    with pytest.raises(OSError, match="No space left on the device") as caught:
        jisu.save_checkpoint(big, str(path))
    assert caught.value.errno == errno.ENOSPC
    assert f"'{tmp_path}'" in str(caught.value) and "'a.ckpt'" in str(caught.value)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["a.ckpt"]  # no temporary file left
    assert jisu.load_checkpoint(str(path))["w"].tolist() == [1.0, 1.0]
