"""MindSpore's ``.safetensors`` checkpoints: jisu reads MindSpore 2.10's files with the values
MindSpore reads (recorded in ``tests/fixtures/ms_safetensors``, see its ``make_fixtures.py``),
and writes files MindSpore 2.10 read back with the same values, names and dtypes (also
recorded there), byte for byte what MindSpore writes for the same tensors."""

from __future__ import annotations

import json
import os
import shutil
import warnings

import numpy as np
import pytest
import safetensors
import torch

from jisu.train import safetensors_format as sf
from jisu.train.safetensors_format import (
    MalformedFileError,
    read_safetensors,
    read_safetensors_metadata,
    write_safetensors,
)

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_safetensors")
MS_NET = os.path.join(HERE, "ms_net.safetensors")
MS_NET_CRC = os.path.join(HERE, "ms_net_crc.safetensors")
MS_DTYPES = {
    "Bool": torch.bool,
    "UInt8": torch.uint8,
    "Int8": torch.int8,
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
# the safetensors package MindSpore 2.10 wrote the fixtures with: the same serializer gives
# the same bytes (with one metadata key; with more, their order varies from run to run)
FIXTURE_SAFETENSORS = "0.8.0"


def _json(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


def _npz(name):
    with np.load(os.path.join(HERE, name), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _as_numpy(tensor):
    return (tensor.float() if tensor.dtype == torch.bfloat16 else tensor).numpy()


def _jisu_inputs():
    arrays, dtypes = _npz("jisu_inputs.npz"), _json("jisu_inputs.json")
    return [(k, torch.from_numpy(arrays[k]).to(getattr(torch, dtypes[k]))) for k in arrays]


# --------------------------------------------------------------------------- reading
@pytest.mark.parametrize("name", ["ms_net.safetensors", "ms_net_crc.safetensors"])
def test_reads_mindspore_file_as_mindspore_does(name):
    expected, arrays = _json("ms_expected.json")["files"][name], _npz("ms_expected.npz")
    loaded = read_safetensors(os.path.join(HERE, name), crc_check=name.endswith("crc.safetensors"))
    assert list(loaded) == expected["order"]  # MindSpore's loader sorts the names
    for key, value in loaded.items():
        assert value.dtype == MS_DTYPES[expected["dtypes"][key]], key
        np.testing.assert_array_equal(_as_numpy(value), arrays[f"{name}/{key}"], err_msg=key)
    assert read_safetensors_metadata(os.path.join(HERE, name)) == expected["metadata"]


def test_append_dict_scalars_are_mindspores_types():
    loaded = read_safetensors(MS_NET)
    assert loaded["epoch_num"].shape == () and loaded["epoch_num"].dtype == torch.int64
    assert loaded["epoch_num"].item() == 7
    assert loaded["lr"].dtype == torch.float32 and loaded["lr"].item() == 0.25
    assert loaded["flag"].dtype == torch.bool and loaded["flag"].item() is True
    assert loaded["bhalf"].dtype == torch.bfloat16


def test_mindspore_cannot_store_a_str_and_neither_does_jisu(tmp_path):
    kind, message = _json("ms_expected.json")["errors"]["str_append_dict"]
    assert kind == "SafetensorError" and "Unknown dtype" in message
    with pytest.raises(TypeError, match="'note' is a str; MindSpore's safetensors"):
        write_safetensors(tmp_path / "s.safetensors", [("note", "hello")])
    assert not os.listdir(tmp_path)


# --------------------------------------------------------------------------- writing
def test_mindspore_read_what_jisu_wrote():
    inputs = dict(_jisu_inputs())
    read, arrays = (
        _json("jisu_written_read_by_mindspore.json"),
        _npz("jisu_written_read_by_mindspore.npz"),
    )
    for name in ("jisu_written.safetensors", "jisu_written_crc.safetensors"):
        kept = {k: v for k, v in inputs.items() if "crc" not in name or v.dtype != torch.bfloat16}
        assert read[name]["order"] == sorted(kept)  # MindSpore verified the crc_num too
        for key, value in kept.items():
            assert MS_DTYPES[read[name]["dtypes"][key]] == value.dtype, key
            np.testing.assert_array_equal(arrays[f"{name}/{key}"], _as_numpy(value), err_msg=key)


@pytest.mark.skipif(
    safetensors.__version__ != FIXTURE_SAFETENSORS, reason="another safetensors serializer"
)
def test_jisu_writes_mindspores_bytes(tmp_path):
    write_safetensors(tmp_path / "net.safetensors", read_safetensors(MS_NET).items())
    with open(MS_NET, "rb") as f:
        assert (tmp_path / "net.safetensors").read_bytes() == f.read()
    write_safetensors(tmp_path / "inputs.safetensors", _jisu_inputs())
    with open(os.path.join(HERE, "jisu_written.safetensors"), "rb") as f:
        assert (tmp_path / "inputs.safetensors").read_bytes() == f.read()  # byte-stable


def test_jisu_crc_num_is_mindspores(tmp_path):
    """MindSpore's CRC counts an integer scalar n as n zero bytes (``bytes()`` of a 0-d int
    array); jisu's writer gives the crc_num MindSpore gave the same tensors."""
    path = tmp_path / "crc.safetensors"
    write_safetensors(path, read_safetensors(MS_NET_CRC).items(), crc_check=True)
    assert read_safetensors_metadata(path) == read_safetensors_metadata(MS_NET_CRC)
    assert sf._crc_zeros(123, 70001) == __import__("zlib").crc32(bytes(70001), 123)


def test_write_crc_refuses_what_mindsporess_crc_fails_on(tmp_path):
    assert _json("ms_expected.json")["errors"]["crc_bf16"][0] == "ValueError"
    for value in (torch.ones(2, dtype=torch.bfloat16), torch.tensor(-3)):
        with pytest.raises(ValueError, match="crc_check cannot count 'x'"):
            write_safetensors(tmp_path / "c.safetensors", [("x", value)], crc_check=True)
    write_safetensors(tmp_path / "c.safetensors", [("x", torch.tensor(-3))])  # without: fine


def test_round_trip_of_forms(tmp_path):
    base = torch.arange(12.0).reshape(3, 4)
    param = torch.nn.Parameter(torch.randn(2, 2))
    items = [
        ("t", base),
        ("tied", base),  # the same tensor under two names (safetensors refuses shared memory)
        ("view", base[1]),  # a view of it
        ("transposed", base.t()),  # not contiguous
        ("param", param),  # requires grad
        ("u64", torch.tensor([2**64 - 1, 0], dtype=torch.uint64)),
        ("empty", torch.zeros(0, 5, dtype=torch.int16)),
        ("名前/é", torch.tensor(1.5, dtype=torch.float64)),
    ]
    write_safetensors(tmp_path / "f.safetensors", items, {"remove_redundancy": "False"})
    back = read_safetensors(tmp_path / "f.safetensors")
    assert list(back) == sorted(name for name, _ in items)
    for name, value in items:
        assert back[name].dtype == value.dtype and torch.equal(back[name], value.detach()), name
        assert not back[name].requires_grad
    meta = read_safetensors_metadata(tmp_path / "f.safetensors")
    assert meta == {"format": "ms", "remove_redundancy": "False"}


def test_no_tensor_writes_no_metadata_as_mindspore(tmp_path):
    write_safetensors(tmp_path / "e.safetensors", [])
    assert read_safetensors(tmp_path / "e.safetensors") == {}
    assert read_safetensors_metadata(tmp_path / "e.safetensors") is None


@pytest.mark.parametrize(
    ("items", "metadata", "error", "match"),
    [
        ([("w", torch.zeros(2, dtype=torch.complex64))], None, TypeError, "complex64 tensor"),
        ([("w", np.zeros(2))], None, TypeError, "dense torch.Tensor"),
        ([("w", torch.zeros(2).to_sparse())], None, TypeError, "dense torch.Tensor"),
        ([(3, torch.zeros(2))], None, TypeError, "names must be str"),
        ([("", torch.zeros(2))], None, ValueError, "is empty"),
        ([("a\0b", torch.zeros(2))], None, ValueError, "holds NUL"),
        ([("x" * 5000, torch.zeros(2))], None, ValueError, "longer than 4096"),
        ([("__metadata__", torch.zeros(2))], None, ValueError, "reserved key"),
        ([("w", torch.zeros(2)), ("w", torch.ones(2))], None, ValueError, "'w' comes twice"),
        ([("w", torch.zeros(2))], {"k": 1}, TypeError, "metadata must map str to str"),
        ([("w", torch.zeros(2))], ["k"], TypeError, "metadata must be a dict"),
        ([("w", torch.zeros(2))], {"w": "Int4"}, ValueError, "metadata key 'w' is a tensor"),
        ([("w", torch.zeros(2))], {"format": "pt"}, ValueError, "'format' is MindSpore's own"),
        ([("w", torch.zeros(2))], {"crc_num": "1"}, ValueError, "crc_check=True writes"),
        ([("w", torch.zeros(2))], {"remove_redundancy": "yes"}, ValueError, "'True' or 'False'"),
    ],
)
def test_writer_refusals(tmp_path, items, metadata, error, match):
    with pytest.raises(error, match=match):
        write_safetensors(tmp_path / "bad.safetensors", items, metadata)
    assert not os.listdir(tmp_path)


def test_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "a.safetensors"
    write_safetensors(path, [("w", torch.ones(3))])
    before = path.read_bytes()
    monkeypatch.setattr(sf, "atomic_write", _failing_atomic_write(sf.atomic_write))
    with pytest.raises(OSError, match="No space"):
        write_safetensors(path, [("w", torch.zeros(3))])
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["a.safetensors"]  # no temporary file left


def _failing_atomic_write(atomic_write):
    import contextlib

    @contextlib.contextmanager
    def failing(path, mode="wb"):
        with atomic_write(path, mode) as f:
            f.write(b"partial")
            yield _Full()

    return failing


class _Full:
    def write(self, data):
        raise OSError(28, "No space left on device")


def test_crc_damage_and_warning(tmp_path):
    data = bytearray(open(MS_NET_CRC, "rb").read())  # noqa: SIM115
    data[-5] ^= 0x01  # inside a tensor's bytes: only the crc_num sees it
    (tmp_path / "flip.safetensors").write_bytes(bytes(data))
    with pytest.raises(MalformedFileError, match="is damaged: its header's crc_num is"):
        read_safetensors(tmp_path / "flip.safetensors")
    with pytest.warns(UserWarning, match="has no crc_num"):
        read_safetensors(MS_NET, crc_check=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_safetensors(MS_NET_CRC, crc_check=True)


def test_a_copy_is_independent_of_the_file(tmp_path):
    shutil.copy(MS_NET, tmp_path / "n.safetensors")
    loaded = read_safetensors(tmp_path / "n.safetensors")
    loaded["conv.weight"].add_(1)  # writable, own memory
    os.remove(tmp_path / "n.safetensors")
    assert torch.equal(loaded["conv.weight"], read_safetensors(MS_NET)["conv.weight"] + 1)


# --------------------------------------------------------------------------- save_checkpoint
def _wired() -> bool:
    """Whether jisu's save_checkpoint writes safetensors (H1's wiring of this module): before
    it, the call raised "jisu writes MindSpore's 'ckpt' format only"."""
    import tempfile

    from jisu.train.serialization import save_checkpoint

    with tempfile.TemporaryDirectory() as folder:
        try:
            save_checkpoint({"w": torch.ones(1)}, os.path.join(folder, "w"), format="safetensors")
        except ValueError as exc:
            return "format only" not in str(exc)
    return True


@pytest.mark.skipif(not _wired(), reason="save_checkpoint(format='safetensors') is not wired yet")
def test_save_checkpoint_safetensors_is_mindspores_file(tmp_path):
    from jisu.train.serialization import load_checkpoint, save_checkpoint

    params = read_safetensors(MS_NET)
    append = {"epoch_num": 7, "lr": 0.25, "flag": True}
    net_params = {k: v for k, v in params.items() if k not in ("epoch_num", "lr", "flag")}
    path = str(tmp_path / "net.safetensors")
    save_checkpoint(net_params, path, append_dict=append, format="safetensors")
    assert read_safetensors_metadata(path) == {"format": "ms"}
    back = read_safetensors(path)
    assert list(back) == _json("ms_expected.json")["files"]["ms_net.safetensors"]["order"]
    for key, value in params.items():
        assert back[key].dtype == value.dtype and torch.equal(back[key], value), key
    loaded = load_checkpoint(path, format="safetensors")
    assert torch.equal(loaded["conv.weight"], params["conv.weight"])
