"""MindSpore ``.ckpt`` files: jisu reads MindSpore 2.10's files (values recorded by MindSpore in
``tests/fixtures/ms_checkpoint``, see its ``make_fixtures.py``), loads them into plain torch
modules with MindSpore's results, and writes files that MindSpore reads back (also recorded
there). The reader treats files as hostile (a fuzz test)."""

from __future__ import annotations

import json
import os
import shutil
import struct

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from jisu.train import checkpoint as jisu_checkpoint
from jisu.train import ms_checkpoint
from jisu.train.checkpoint import MalformedFileError
from jisu.train.ckpt_state import RESUME_ENTRY
from jisu.train.serialization import load_checkpoint, load_param_into_net, save_checkpoint

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_checkpoint")
MS_NET = os.path.join(HERE, "ms_net.ckpt")
MS_DTYPES = {
    "Float32": torch.float32,
    "Float16": torch.float16,
    "Float64": torch.float64,
    "BFloat16": torch.bfloat16,
    "Int64": torch.int64,
    "Int32": torch.int32,
    "Int8": torch.int8,
    "UInt8": torch.uint8,
    "Bool": torch.bool,
}


def _json(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


def _npz(name):
    with np.load(os.path.join(HERE, name), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


class TorchNet(nn.Module):
    """The fixture's MindSpore net as plain torch (pad_mode="pad", padding=1)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=True)
        self.bn = nn.BatchNorm2d(4, eps=1e-5)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(4 * 5 * 5, 3)

    def forward(self, x):
        return self.fc(self.flatten(self.relu(self.bn(self.conv(x)))))


# --------------------------------------------------------------------------- reading
@pytest.mark.parametrize("name", ["ms_net.ckpt", "ms_net_crc.ckpt"])
def test_reads_mindspore_file_as_mindspore_does(name):
    expected, meta = _npz("ms_net_expected.npz"), _json("ms_net_expected.json")
    params = load_checkpoint(os.path.join(HERE, name))
    assert list(params) == meta["order"]
    for key, dtype in meta["dtypes"].items():
        if dtype.startswith("str:"):
            assert params[key] == dtype[4:]
            continue
        assert params[key].dtype == MS_DTYPES[dtype], key
        np.testing.assert_array_equal(params[key].numpy(), expected[key])
        assert params[key].shape == expected[key].shape


def test_load_param_into_plain_torch_module_gives_mindspore_logits():
    expected = _npz("ms_net_expected.npz")
    net = TorchNet()
    not_loaded, ckpt_not_loaded = load_param_into_net(net, load_checkpoint(MS_NET))
    assert not_loaded == []
    assert ckpt_not_loaded == ["epoch_num", "half", "note"]
    net.eval()
    with torch.no_grad():
        logits = net(torch.from_numpy(expected["__input__"]))
    np.testing.assert_allclose(logits.numpy(), expected["__logits__"], rtol=1e-5, atol=1e-6)


def test_load_checkpoint_with_net_and_jisu_entry_point():
    expected = _npz("ms_net_expected.npz")
    for load in (
        lambda n: load_checkpoint(MS_NET, net=n),
        lambda n: jisu_checkpoint.load_checkpoint(MS_NET, n),
    ):
        net = TorchNet().eval()
        params = load(net)
        assert params["note"] == "hello ckpt"
        torch.testing.assert_close(
            net.bn.running_var, torch.from_numpy(expected["bn.moving_variance"])
        )
        with torch.no_grad():
            logits = net(torch.from_numpy(expected["__input__"]))
        np.testing.assert_allclose(logits.numpy(), expected["__logits__"], rtol=1e-5, atol=1e-6)


def test_load_param_into_net_returns_what_mindspore_returns():
    recorded = _json("ms_load_param_results.json")
    params = load_checkpoint(MS_NET)
    partial = {k: v for k, v in params.items() if not k.startswith("fc.")}
    partial["extra.weight"] = params["fc.weight"]
    with pytest.warns(UserWarning, match="not loaded"):
        result = load_param_into_net(TorchNet(), partial)
    assert [list(r) for r in result] == recorded["partial"]
    # a checkpoint of a wrapper: found under its prefix; MindSpore leaves ckpt_not_load full
    net = TorchNet()
    prefixed = {"network." + k: v for k, v in params.items()}
    with pytest.warns(UserWarning, match="prefix 'network.'"):
        result = load_param_into_net(net, prefixed)
    assert [list(r) for r in result] == recorded["prefixed"]
    torch.testing.assert_close(net.fc.bias, params["fc.bias"])
    # strict_load=True: no prefix search (MindSpore 2.10, run once: nothing loaded)
    fc = {"net.weight": torch.ones(3, 100), "net.bias": torch.ones(3)}
    with pytest.warns(UserWarning, match="not loaded"):
        result = load_param_into_net(nn.Linear(100, 3), fc, strict_load=True)
    assert result == (["weight", "bias"], ["net.weight", "net.bias"])


def test_load_param_into_net_checks_shapes_and_dtypes():
    params = dict(load_checkpoint(MS_NET))
    params["fc.bias"] = torch.zeros(5)
    with pytest.raises(RuntimeError, match=r"'fc.bias' has shape \(3,\) in the net but \(5,\)"):
        load_param_into_net(TorchNet(), params)
    params["fc.bias"] = torch.ones(3, 1, 1, dtype=torch.float64)  # trailing 1s, a float cast
    net = TorchNet()
    load_param_into_net(net, params)
    assert net.fc.bias.dtype == torch.float32 and net.fc.bias.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(
        RuntimeError, match=r"'fc\.bias' is torch\.float32 in the net but torch\.float64"
    ):
        load_param_into_net(TorchNet(), params, strict_load=True)
    params["fc.bias"] = torch.ones(3, dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"'fc\.bias' is torch\.float32"):
        load_param_into_net(TorchNet(), params)
    with pytest.raises(TypeError, match=r"nn\.Module"):
        load_param_into_net(object(), params)


def test_filters_like_mindspore():
    assert list(load_checkpoint(MS_NET, specify_prefix="bn")) == [
        "bn.moving_mean",
        "bn.moving_variance",
        "bn.gamma",
        "bn.beta",
    ]
    assert "conv.weight" not in load_checkpoint(MS_NET, filter_prefix=["conv", "fc"])
    assert list(load_checkpoint(MS_NET, choice_func=lambda n: n == "half")) == ["half"]
    with pytest.raises(ValueError, match=r"empty after filter.*none passed specify_prefix"):
        load_checkpoint(MS_NET, specify_prefix="nothing")
    with pytest.raises(ValueError, match="'dec_key'"):
        load_checkpoint(MS_NET, dec_key=b"0123456789abcdef")
    with pytest.raises(ValueError, match="format must be 'ckpt' or 'safetensors'"):
        load_checkpoint(MS_NET, format="mindir")


# --------------------------------------------------------------------------- writing
def _jisu_inputs():
    arrays, dtypes = _npz("jisu_inputs.npz"), _json("jisu_inputs.json")
    return {
        k: torch.from_numpy(arrays[k]).to(getattr(torch, dtypes[k].split(".")[1])) for k in arrays
    }


def test_mindspore_read_what_jisu_wrote():
    """MindSpore 2.10 loaded jisu_written.ckpt in make_fixtures.py; this is what it held."""
    inputs = _jisu_inputs()
    read, meta = (
        _npz("jisu_written_read_by_mindspore.npz"),
        _json("jisu_written_read_by_mindspore.json"),
    )
    assert meta["order"] == [*inputs, "step", "lr", "flag", "tag"]
    for name, tensor in inputs.items():
        assert MS_DTYPES[meta["dtypes"][name]] == tensor.dtype, name
        np.testing.assert_array_equal(
            read[name], tensor.float().numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
        )
    assert (meta["dtypes"]["step"], int(read["step"])) == ("Int64", 11)
    assert (meta["dtypes"]["lr"], float(read["lr"])) == ("Float32", 0.125)
    assert (meta["dtypes"]["flag"], bool(read["flag"])) == ("Bool", True)
    assert meta["dtypes"]["tag"] == "str:jisu wrote me"


def test_jisu_writes_mindspore_bytes(tmp_path):
    """jisu's file of MindSpore's tensors is byte for byte the file MindSpore wrote, and
    MindSpore's re-save of jisu's file is jisu's file."""
    save_checkpoint(load_checkpoint(MS_NET), str(tmp_path / "again"))
    with open(MS_NET, "rb") as a, open(tmp_path / "again.ckpt", "rb") as b:
        assert a.read() == b.read()
    save_checkpoint(load_checkpoint(MS_NET), str(tmp_path / "crc.ckpt"), crc_check=True)
    with (
        open(os.path.join(HERE, "ms_net_crc.ckpt"), "rb") as a,
        open(tmp_path / "crc.ckpt", "rb") as b,
    ):
        assert a.read() == b.read()
    resaved = load_checkpoint(os.path.join(HERE, "ms_resaved_jisu.ckpt"))
    for name, tensor in _jisu_inputs().items():
        assert torch.equal(resaved[name], tensor), name
    assert resaved["tag"] == "jisu wrote me"


def test_round_trip_forms_and_names(tmp_path):
    net = TorchNet()
    save_checkpoint(net, str(tmp_path / "net"), append_dict={"epoch": 3, "name": "x"})
    back = load_checkpoint(str(tmp_path / "net.ckpt"))
    assert back["bn.moving_variance"].tolist() == [1.0] * 4
    assert torch.equal(back["fc.weight"], net.fc.weight.detach())
    assert back["epoch"].dtype == torch.int64 and back["name"] == "x"
    save_checkpoint(
        [{"name": "a", "data": torch.arange(6).reshape(2, 3)}], str(tmp_path / "modelckpt")
    )
    assert os.path.exists(tmp_path / "modelckpt")  # ends with "ckpt": no suffix, as MindSpore
    assert torch.equal(
        load_checkpoint(str(tmp_path / "modelckpt"))["a"], torch.arange(6).reshape(2, 3)
    )
    save_checkpoint(net, str(tmp_path / "fc.ckpt"), choice_func=lambda n: n.startswith("fc"))
    assert list(load_checkpoint(str(tmp_path / "fc.ckpt"))) == ["fc.weight", "fc.bias"]
    with pytest.raises(ValueError, match="'enc_key'"):
        save_checkpoint(net, str(tmp_path / "e.ckpt"), enc_key=b"k" * 16)
    with pytest.raises(TypeError, match="complex64"):
        save_checkpoint({"c": torch.zeros(2, dtype=torch.complex64)}, str(tmp_path / "c.ckpt"))


def test_split_tensors_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(ms_checkpoint, "SLICE_BYTES", 7)
    value = torch.arange(10, dtype=torch.float32).reshape(2, 5)
    save_checkpoint({"w": value, "e": torch.zeros(0, 3)}, str(tmp_path / "s.ckpt"))
    data = (tmp_path / "s.ckpt").read_bytes()
    assert data.count(b"\x0a\x01w") == 6  # 40 bytes in 7-byte parts, each tagged "w"
    back = load_checkpoint(str(tmp_path / "s.ckpt"))
    assert torch.equal(back["w"], value) and back["e"].shape == (0, 3)


# --------------------------------------------------------------------------- hostile files
def _uvarint(v):
    return ms_checkpoint._uvarint(v)


def _value(tag=b"w", dims=(2,), tensor_type=b"Float32", content=b"\0" * 8):
    tensor = b"".join(b"\x08" + _uvarint(d) for d in dims)
    tensor += b"\x12" + _uvarint(len(tensor_type)) + tensor_type
    tensor += b"\x1a" + _uvarint(len(content)) + content
    entry = b"\x0a" + _uvarint(len(tag)) + tag + b"\x12" + _uvarint(len(tensor)) + tensor
    return b"\x0a" + _uvarint(len(entry)) + entry


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (_value(tensor_type=b"Complex64"), "tensor_type 'Complex64'"),
        (_value(dims=((1 << 64) - 1,)), "negative dim"),
        (_value(dims=(1 << 40, 1 << 40)), "dims are too large"),
        (_value(dims=(0, 1 << 40, 1 << 40)), "dims are too large"),
        (_value(dims=(1 << 20, 1 << 20)), "dims need 1099511627776 x 4 bytes"),
        (_value(dims=(3,)), "dims need 3 x 4 bytes, the file holds 8"),
        (_value(dims=(1,) * 33, content=b"\0" * 4), "more than 32 dims"),
        (_value(tag=b"x" * 5000), "tag is 5000 bytes"),
        (_value(tag=b"\xff"), "not UTF-8"),
        (_value(tag=b""), "empty"),
        (_value(tensor_type=b"Bool", content=b"\x00\x02"), "bytes other than 0 and 1"),
        (_value() + _value(tag=b"v") + _value(), "tag 'w' twice"),
        (_value()[:-3], "runs past its end"),
        (b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "longer than 64 bits"),
        (b"\x0b", "wire type 3"),
    ],
)
def test_malformed_files_are_refused(tmp_path, data, reason):
    path = tmp_path / "bad.ckpt"
    path.write_bytes(data)
    with pytest.raises(MalformedFileError, match=reason) as info:
        load_checkpoint(str(path))
    assert str(path) in str(info.value)


def test_damage_and_size_limit(tmp_path, monkeypatch):
    with open(os.path.join(HERE, "ms_net_crc.ckpt"), "rb") as f:
        data = bytearray(f.read())
    data[100] ^= 0x01  # inside a tensor's bytes: only the CRC sees it
    (tmp_path / "flip.ckpt").write_bytes(bytes(data))
    with pytest.raises(MalformedFileError, match="CRC-32"):
        load_checkpoint(str(tmp_path / "flip.ckpt"))
    shutil.copy(MS_NET, tmp_path / "big.ckpt")
    monkeypatch.setattr(ms_checkpoint, "MAX_FILE_BYTES", 1000)
    with pytest.raises(MalformedFileError, match="2101 bytes, more than"):
        load_checkpoint(str(tmp_path / "big.ckpt"))
    with pytest.raises(MalformedFileError, match="not a regular file"):
        load_checkpoint(str(tmp_path))


def _check_result(result):
    for name, value in result.items():
        assert isinstance(name, str) and name
        assert isinstance(value, (torch.Tensor, str))
        if isinstance(value, torch.Tensor):
            assert value.numel() * value.element_size() <= 1 << 20


with open(MS_NET, "rb") as _f:
    _ORIGINAL = _f.read()
_FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


@_FUZZ
@given(st.integers(0, len(_ORIGINAL)))
def test_fuzz_truncations(cut):
    try:
        _check_result(ms_checkpoint.parse_ckpt(_ORIGINAL[:cut]))
    except MalformedFileError:
        pass


@_FUZZ
@given(
    st.lists(
        st.tuples(st.integers(0, len(_ORIGINAL) - 1), st.integers(0, 7)), min_size=1, max_size=8
    )
)
def test_fuzz_bit_flips(flips):
    data = bytearray(_ORIGINAL)
    for at, bit in flips:
        data[at] ^= 1 << bit
    try:
        _check_result(ms_checkpoint.parse_ckpt(bytes(data)))
    except MalformedFileError:
        pass


@_FUZZ
@given(st.binary(max_size=400))
def test_fuzz_random_bytes(data):
    try:
        _check_result(ms_checkpoint.parse_ckpt(data))
    except MalformedFileError:
        pass


@_FUZZ
@given(
    st.lists(st.integers(0, (1 << 64) - 1), max_size=40),
    st.sampled_from([b"Float32", b"Bool", b"str", b"BFloat16", b"UInt64", b"Int4", b""]),
    st.binary(max_size=64),
)
def test_fuzz_huge_dims(dims, tensor_type, content):
    try:
        _check_result(ms_checkpoint.parse_ckpt(_value(b"w", dims, tensor_type, content)))
    except MalformedFileError:
        pass


def test_packed_dims_accepted():
    """protobuf readers accept a packed repeated field too (MindSpore writes unpacked)."""
    packed = b"\x0a\x02" + _uvarint(2) + _uvarint(3)
    tensor = packed + b"\x12\x05Int16" + b"\x1a\x0c" + struct.pack("<6h", *range(6))
    entry = b"\x0a\x01w\x12" + _uvarint(len(tensor)) + tensor
    out = ms_checkpoint.parse_ckpt(b"\x0a" + _uvarint(len(entry)) + entry)
    assert out["w"].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_a_mindspore_conv1d_weight_loads_into_torchs_three_dimensional_one(tmp_path):
    # MindSpore stores a Conv1d weight as (out, in, 1, k); torch's is (out, in, k)
    conv = torch.nn.Conv1d(2, 3, 5)
    weight = torch.arange(30, dtype=torch.float32).reshape(3, 2, 1, 5)
    param_not_load, _ = load_param_into_net(conv, {"weight": weight, "bias": torch.ones(3)})
    assert param_not_load == [] and torch.equal(conv.weight.detach(), weight.squeeze(2))


def test_save_checkpoint_of_a_models_train_step(tmp_path):
    """save_checkpoint(cb_params.train_network, ...) (the zoo's tinynet EmaEvalCallBack):
    MindSpore 2.0.0 wrote ['0.bias', '0.weight', '1.beta', '1.gamma', '1.moving_mean',
    '1.moving_variance', 'global_step', 'learning_rate', 'moments.0.bias', ...,
    'momentum'] for TrainOneStepCell(WithLossCell(Dense + BatchNorm1d)); jisu's train step
    saves the same names (and its resume entry, with num_batches_tracked)."""
    import jisu
    from jisu import nn as jnn

    net = jnn.SequentialCell([jnn.Dense(3, 2), jnn.BatchNorm1d(2)])
    opt = jnn.Momentum(net.trainable_params(), 0.1, 0.9)
    model = jisu.Model(net, loss_fn=jnn.MSELoss(), optimizer=opt)
    model.train_network(torch.randn(4, 3), torch.randn(4, 2))
    path = str(tmp_path / "train.ckpt")
    save_checkpoint(model.train_network, path)
    names = ["0.bias", "0.weight", "1.beta", "1.gamma", "1.moving_mean", "1.moving_variance"]
    names += ["global_step", "learning_rate", "moments.0.bias", "moments.0.weight"]
    names += ["moments.1.beta", "moments.1.gamma", "momentum"]
    state = load_checkpoint(path)
    assert sorted(state) == sorted([*names, RESUME_ENTRY])
    torch.testing.assert_close(state["0.weight"], net[0].weight.detach())
    assert state["0.weight"].name == "0.weight" and not state["0.weight"].requires_grad
