"""The model zoo's other jisu.nn layers against MindSpore's recorded outputs
(tests/fixtures/nn_layers_zoo, made by its make_fixtures.py: MindSpore 2.10, and 2.0.0 for
``ResizeBilinear``, ``SSIM`` and ``PSNR``), their MindSpore parameter names, shapes and order,
and formulas where MindSpore has no CPU kernel (``InstanceNorm*``, ``Unfold``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from jisu import nn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nn_layers_zoo"
CASES = json.loads((FIXTURES / "cases.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "layers.npz"))
CASES_200 = json.loads((FIXTURES / "ms200.json").read_text())
ARRAYS_200 = dict(np.load(FIXTURES / "ms200.npz"))
assert CASES.pop("mindspore") == "2.10.0" and CASES_200.pop("mindspore") == "2.0.0"
ALL = {**{k: (v, ARRAYS) for k, v in CASES.items()}, **{k: (v, ARRAYS_200) for k, v in
       CASES_200.items()}}  # fmt: skip


def _tuples(kwargs: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) and k != "ksizes" else v for k, v in kwargs.items()}


def build(name: str) -> tuple[torch.nn.Module, dict, dict]:
    """The jisu layer of a case holding the case's MindSpore parameter values (set by name)."""
    spec, arrays = ALL[name]
    kwargs = _tuples(spec["kwargs"])
    for key in ("ksizes", "strides", "rates"):
        if key in kwargs:
            kwargs[key] = list(kwargs[key])
    layer = getattr(nn, spec["kind"])(**kwargs)
    named = dict(layer.parameters_and_names())
    assert list(named) == [p[0] for p in spec["params"]], name
    for pname, _, trainable in spec["params"]:
        target = named[pname]
        value = torch.from_numpy(arrays[f"{name}/param/{pname}"])
        if spec["kind"] == "Conv1dTranspose" and pname == "weight":
            value = value.squeeze(2)  # MindSpore keeps an (in, out, 1, k) weight
        assert target.shape == value.shape, (name, pname)
        assert (isinstance(target, torch.nn.Parameter) and target.requires_grad) == trainable
        with torch.no_grad():
            target.copy_(value)
    layer.train(spec["train"])
    return layer, spec, arrays


#: MindSpore 2.10's max_norm clipping gives two equal looked-up rows different norms (its
#: ClipByNorm over a (5, 3) lookup): jisu clips each row to max_norm, checked by formula below
MINDSPORE_BUGS = {"embeddinglookup_norm"}
RUN = sorted(k for k, (v, _) in ALL.items() if "no_output" not in v and k not in MINDSPORE_BUGS)


@pytest.mark.parametrize("name", RUN)
def test_matches_mindspore(name: str) -> None:
    layer, spec, arrays = build(name)
    xs = [torch.from_numpy(arrays[f"{name}/x{i}"]) for i in range(4) if f"{name}/x{i}" in arrays]
    call = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["call"].items()}
    got = layer(*xs, **call).detach().numpy()
    want = arrays[f"{name}/y"]
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5)
    named = dict(layer.parameters_and_names())
    for key in arrays:
        if key.startswith(f"{name}/after/"):
            pname = key.split("/after/")[1]
            np.testing.assert_allclose(named[pname].numpy(), arrays[key], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ no CPU kernel in MindSpore
@pytest.mark.parametrize("name", sorted(k for k in CASES if k.startswith("instnorm")))
def test_instance_norm_formula(name: str) -> None:
    """Each sample and channel by its own statistics (train and eval), then gamma/beta;
    MindSpore's names and order (recorded) hold."""
    layer, spec, arrays = build(name)
    rng = np.random.default_rng(3)
    channels = spec["kwargs"]["num_features"]
    x = rng.standard_normal((2, channels, *[4, 5, 3][: layer._ndim - 2])).astype(np.float32)
    x[:, :, ...] += np.arange(x.shape[1], dtype=np.float32).reshape(1, -1, *[1] * (x.ndim - 2))
    axes = tuple(range(2, x.ndim))
    for train in (True, False):
        layer.train(train)
        got = layer(torch.from_numpy(x)).detach().numpy()
        mean = x.mean(axes, keepdims=True)
        var = x.var(axes, keepdims=True)
        shape = (1, -1, *[1] * (x.ndim - 2))
        gamma = arrays[f"{name}/param/gamma"].reshape(shape)
        beta = arrays[f"{name}/param/beta"].reshape(shape)
        want = (x - mean) / np.sqrt(var + spec["kwargs"].get("eps", 1e-5)) * gamma + beta
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # MindSpore's documented rule: moving = momentum * moving + (1 - momentum) * batch
    layer, spec, arrays = build(name)
    layer.train(True)
    momentum = spec["kwargs"].get("momentum", 0.1)
    layer(torch.from_numpy(x))
    old = arrays[f"{name}/param/moving_mean"]
    batch = x.mean(axes).mean(0)
    np.testing.assert_allclose(
        layer.running_mean.numpy(), momentum * old + (1 - momentum) * batch, rtol=1e-5, atol=1e-6
    )


def _patches(x: np.ndarray, k, s, r, padding: str) -> np.ndarray:
    """TensorFlow's extract_image_patches, written out (NCHW in, depth = (row, col, C))."""
    n, c, h, w = x.shape
    eff = [(k[i] - 1) * r[i] + 1 for i in range(2)]
    if padding == "same":
        out = [math.ceil(size / s[i]) for i, size in enumerate((h, w))]
        pad = [max((out[i] - 1) * s[i] + eff[i] - size, 0) for i, size in enumerate((h, w))]
        x = np.pad(x, ((0, 0), (0, 0), (pad[0] // 2, pad[0] - pad[0] // 2),
                       (pad[1] // 2, pad[1] - pad[1] // 2)))  # fmt: skip
    oh = (x.shape[2] - eff[0]) // s[0] + 1
    ow = (x.shape[3] - eff[1]) // s[1] + 1
    y = np.zeros((n, k[0] * k[1] * c, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            for a in range(k[0]):
                for b in range(k[1]):
                    pix = x[:, :, i * s[0] + a * r[0], j * s[1] + b * r[1]]
                    y[:, (a * k[1] + b) * c : (a * k[1] + b + 1) * c, i, j] = pix
    return y


@pytest.mark.parametrize("name", ["unfold_valid", "unfold_same"])
def test_unfold_is_extract_image_patches(name: str) -> None:
    layer, spec, _ = build(name)
    kw = spec["kwargs"]
    x = np.random.default_rng(5).standard_normal((2, 3, 7, 8)).astype(np.float32)
    want = _patches(x, kw["ksizes"][1:3], kw["strides"][1:3], kw["rates"][1:3],
                    kw.get("padding", "valid"))  # fmt: skip
    np.testing.assert_allclose(layer(torch.from_numpy(x)).numpy(), want, rtol=1e-6)


# ------------------------------------------------------------------ default initialization
DEFAULTS = {
    "conv3d": lambda: nn.Conv3d(32, 64, 3, has_bias=True),
    "convt3d": lambda: nn.Conv3dTranspose(32, 16, 3, has_bias=True),
    "convt1d": lambda: nn.Conv1dTranspose(64, 32, 5, has_bias=True),
    "conv2dbnact": lambda: nn.Conv2dBnAct(64, 64, 3, has_bias=True),
    "densebnact": lambda: nn.DenseBnAct(256, 128),
    "embeddinglookup": lambda: nn.EmbeddingLookup(1000, 32),
    "linear": lambda: nn.Linear(256, 128),
    "bidense": lambda: nn.BiDense(64, 32, 16),
}


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_default_init_matches_mindspore_distribution(name: str) -> None:
    torch.manual_seed(0)
    named = dict(DEFAULTS[name]().parameters_and_names())
    keys = [k for k in ARRAYS if k.startswith(f"defaults/{name}/")]
    assert keys
    for key in keys:
        ms_max, ms_std, ms_mean, size = ARRAYS[key]
        v = named[key.split("/", 2)[2]].detach().double()
        assert v.numel() == size
        if ms_std == 0:  # a constant (zeros)
            assert torch.all(v == ms_mean), key
            continue
        tol = max(4 / math.sqrt(size) + 0.01, 0.05)
        assert abs(v.std().item() - ms_std) / ms_std < tol, key
        if "embedding" not in name and "normal" not in key and ms_max < 0.5 and ms_std > 0.02:
            assert abs(v.abs().max().item() - ms_max) / ms_max < tol, key


# ------------------------------------------------------------------ contract and errors
def test_layers_are_torch_layers() -> None:
    pairs = [
        (nn.GroupNorm(2, 4), torch.nn.GroupNorm),
        (nn.InstanceNorm2d(3), torch.nn.InstanceNorm2d),
        (nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm),
        (nn.Conv3d(2, 3, 3), torch.nn.Conv3d),
        (nn.Conv3dTranspose(2, 3, 3), torch.nn.ConvTranspose3d),
        (nn.Conv1dTranspose(2, 3, 3), torch.nn.ConvTranspose1d),
        (nn.PReLU(), torch.nn.PReLU),
        (nn.HSwish(), torch.nn.Hardswish),
        (nn.MaxPool1d(2), torch.nn.MaxPool1d),
    ]
    for layer, kind in pairs:
        assert isinstance(layer, kind) and isinstance(layer, nn.Cell)
    bn = nn.SyncBatchNorm(3)
    assert torch.nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(3)) is not None
    assert bn.momentum == pytest.approx(0.1)
    assert nn.layer.CellList is nn.CellList
    assert nn.Sequential is nn.SequentialCell  # zoo code's name (MindSpore has none)


def test_get_activation_knows_the_new_names() -> None:
    for name, kind in (("hswish", nn.HSwish), ("elu", nn.ELU), ("prelu", nn.PReLU),
                       ("silu", nn.SiLU), ("hsigmoid", nn.HSigmoid)):  # fmt: skip
        assert isinstance(nn.get_activation(name), kind)
    conv = nn.Conv2dBnAct(3, 4, 3, activation="hswish")
    assert isinstance(conv.activation, nn.HSwish)


def test_argument_errors() -> None:
    with pytest.raises(ValueError, match="num_channels must be divisible"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"length|channel"):
        nn.PReLU(3, [0.1, 0.2])
    with pytest.raises(TypeError, match="central_fraction"):
        nn.CentralCrop(1)
    with pytest.raises(ValueError, match=r"\[1, row, col, 1\]"):
        nn.Unfold([2, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1])
    with pytest.raises(ValueError, match="exactly one"):
        nn.ResizeBilinear()(torch.zeros(1, 1, 2, 2))
    with pytest.raises(ValueError, match="output_padding"):
        nn.Conv3dTranspose(2, 2, 3, output_padding=1)
    with pytest.raises(ValueError, match="row of x1"):
        nn.MatMul()(torch.zeros(2, 3), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="sparse"):
        nn.EmbeddingLookup(4, 2, sparse=False)
    with pytest.raises(TypeError, match="momentum"):
        nn.InstanceNorm2d(3, momentum=1)


def test_one_hot_out_of_range_and_embedding_lookup_rows() -> None:
    hot = nn.OneHot(depth=3)(torch.tensor([-1, 3, 1]))
    assert hot.tolist() == [[0, 0, 0], [0, 0, 0], [0, 1, 0]]
    table = nn.EmbeddingLookup(4, 2)
    out = table(torch.tensor([[5, 1]]))
    assert out[0, 0].abs().sum() == 0 and torch.equal(out[0, 1], table.embedding_table[1])


def test_embedding_lookup_max_norm_clips_each_row() -> None:
    layer, _, arrays = build("embeddinglookup_norm")
    ids = torch.tensor([1, 1, 4, 0])
    rows = torch.from_numpy(arrays["embeddinglookup_norm/param/embedding_table"])[ids]
    norms = rows.norm(dim=-1, keepdim=True)
    want = rows * torch.where(norms > 0.5, 0.5 / norms, torch.ones_like(norms))
    torch.testing.assert_close(layer(ids), want)


def test_batchnorm3d_and_syncbn_train_in_one_process() -> None:
    x = torch.randn(4, 3, 2, 2, 2)
    for layer in (nn.BatchNorm3d(3), nn.SyncBatchNorm(3)):
        y = layer(x)
        assert torch.allclose(y.mean((0, 2, 3, 4)), torch.zeros(3), atol=1e-5)
        y.sum().backward()


def test_nn_init_is_torchs_initializers_as_zoo_code_calls_them() -> None:
    conv, bn = nn.Conv2d(3, 4, 3, has_bias=True), nn.BatchNorm2d(4)
    nn.init.kaiming_normal_(conv.weight, a=0, mode="fan_in")
    nn.init.constant_(conv.bias, 0)
    nn.init.constant_(bn.weight, 1)
    assert torch.equal(conv.bias, torch.zeros(4)) and torch.equal(bn.weight, torch.ones(4))


_SYNC_SCRIPT = """
import os, socket, sys, torch, torch.distributed as dist, torch.multiprocessing as mp

def run(rank, port, x, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    from jisu import nn
    bn = nn.SyncBatchNorm(3, momentum=0.5)
    part = x[rank * 2 : rank * 2 + 2].clone().requires_grad_(True)
    y = bn(part)
    (y * torch.arange(y.numel()).reshape(y.shape)).sum().backward()
    torch.save((y.detach(), part.grad, bn.running_mean, bn.running_var), f"{out}/{rank}.pt")
    dist.destroy_process_group()

if __name__ == "__main__":
    sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]; sock.close()
    torch.manual_seed(0)
    mp.spawn(run, args=(port, torch.randn(4, 3, 2, 2), sys.argv[1]), nprocs=2)
"""


def test_syncbn_syncs_cpu_processes(tmp_path) -> None:
    """Two gloo processes of two samples each: the outputs, moving statistics and gradients
    of torch's BatchNorm2d over all four samples (torch syncs accelerator tensors only; jisu
    all-reduces the statistics of host tensors)."""
    import subprocess
    import sys

    script = tmp_path / "sync.py"
    script.write_text(_SYNC_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], timeout=120)
    assert done.returncode == 0
    torch.manual_seed(0)
    x = torch.randn(4, 3, 2, 2, requires_grad=True)
    ref = torch.nn.BatchNorm2d(3, momentum=0.5)
    y = ref(x)
    weights = torch.arange(24.0).reshape(2, 3, 2, 2).repeat(2, 1, 1, 1)
    (y * weights).sum().backward()
    parts = [torch.load(tmp_path / f"{rank}.pt") for rank in (0, 1)]
    torch.testing.assert_close(torch.cat([p[0] for p in parts]), y.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.cat([p[1] for p in parts]), x.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(parts[0][2], ref.running_mean)
    torch.testing.assert_close(parts[1][3], ref.running_var)


def test_embedding_table_is_the_tables_mindspore_name():
    emb = nn.Embedding(5, 3)
    assert emb.embedding_table is emb.weight
    assert [name for name, _ in emb.parameters_and_names()] == ["embedding_table"]


def test_layer_norm_holds_mindspores_primitive_attribute():
    # MindSpore 2.10, nn.LayerNorm((4,), epsilon=1e-6) on x = arange(24).reshape(2, 3, 4) ** 1.5
    # / 10: ln.layer_norm(x, ln.gamma, ln.beta) printed LayerNorm (2, 3, 1) (2, 3, 1)
    # [-1.14099, -0.63527, 0.28942, 1.48684] True 9.979251861572266 (y[0, 0], y == ln(x),
    # mean[1, 2, 0]); mindcv's ConvNextLayerNorm calls it.
    ln = nn.LayerNorm((4,), epsilon=1e-6)
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) ** 1.5 / 10
    y, mean, var = ln.layer_norm(x, ln.gamma, ln.beta)
    assert type(ln.layer_norm).__name__ == "LayerNorm"
    assert mean.shape == var.shape == (2, 3, 1)
    np.testing.assert_allclose(
        y[0, 0].detach().numpy(), [-1.14099, -0.63527, 0.28942, 1.48684], atol=1e-5
    )
    torch.testing.assert_close(y, ln(x))
    assert float(mean[1, 2, 0]) == pytest.approx(9.979251861572266, rel=1e-6)
