"""jisu.nn layers against MindSpore 2.10's recorded outputs (tests/fixtures/nn_layers, made by
its make_fixtures.py with MindSpore), plus the torch-module contract and argument errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from jisu import nn
from jisu.amp import auto_mixed_precision

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nn_layers"
CASES = json.loads((FIXTURES / "cases.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "layers.npz"))

#: MindSpore's parameter attribute -> jisu's (torch's) attribute
TORCH_NAMES = {
    "weight": "weight",
    "bias": "bias",
    "gamma": "weight",
    "beta": "bias",
    "moving_mean": "running_mean",
    "moving_variance": "running_var",
    "embedding_table": "weight",
}


def _tuples(kwargs: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}


def build(name: str) -> torch.nn.Module:
    """The jisu layer of a fixture case, holding the case's MindSpore weights."""
    spec = CASES[name]
    layer = getattr(nn, spec["kind"])(**_tuples(spec["kwargs"]))
    for ms_name, torch_name in TORCH_NAMES.items():
        key = f"{name}/{ms_name}"
        if key not in ARRAYS:
            continue
        target = getattr(layer, torch_name)
        value = torch.from_numpy(ARRAYS[key])
        if spec["kind"] == "Conv1d" and ms_name == "weight":
            value = value.squeeze(2)  # MindSpore keeps a (out, in, 1, k) weight
        assert target.shape == value.shape, (name, ms_name)
        with torch.no_grad():
            target.copy_(value)
    layer.train(spec["train"])
    return layer


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mindspore(name: str) -> None:
    layer = build(name)
    x = torch.from_numpy(ARRAYS[f"{name}/x"])
    want = ARRAYS[f"{name}/y"]
    got = layer(x).detach().numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if CASES[name]["kind"].startswith("BatchNorm"):
        for ms_name, torch_name in (
            ("moving_mean", "running_mean"),
            ("moving_variance", "running_var"),
        ):
            np.testing.assert_allclose(
                getattr(layer, torch_name).numpy(),
                ARRAYS[f"{name}/{ms_name}_after"],
                rtol=1e-5,
                atol=1e-6,
            )


# ------------------------------------------------------------------ default initialization
@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("dense", lambda: nn.Dense(512, 256)),
        ("conv", lambda: nn.Conv2d(64, 128, 3, has_bias=True)),
        ("convt", lambda: nn.Conv2dTranspose(64, 32, 3, has_bias=True)),
        ("embedding", lambda: nn.Embedding(1000, 64)),
    ],
)
def test_default_init_matches_mindspore_distribution(name: str, make) -> None:
    torch.manual_seed(0)
    layer = make()
    for attr in ("weight", "bias", "embedding_table"):
        key = f"defaults/{name}/{attr}"
        if key not in ARRAYS:
            continue
        ms_max, ms_std, _, size = ARRAYS[key]
        v = getattr(layer, "weight" if attr == "embedding_table" else attr).detach()
        assert v.numel() == size
        tol = 4 / math.sqrt(size) + 0.01
        assert abs(v.std().item() - ms_std) / ms_std < max(tol, 0.05), attr
        if name != "embedding":  # uniform: the bound is sharp
            assert abs(v.abs().max().item() - ms_max) / ms_max < max(tol, 0.05), attr


def test_layer_defaults_are_mindspore_s() -> None:
    conv = nn.Conv2d(3, 8, 3)
    assert conv.pad_mode == "same" and conv.bias is None and conv.has_bias is False
    assert nn.Dense(3, 4).bias is not None
    pool = nn.MaxPool2d()
    assert pool.kernel_size == (1, 1) and pool.stride == (1, 1) and pool.pad_mode == "valid"
    bn = nn.BatchNorm2d(4)
    assert bn.momentum == pytest.approx(0.1) and bn.eps == 1e-5
    assert torch.equal(bn.weight, torch.ones(4)) and torch.equal(bn.running_var, torch.ones(4))
    assert nn.LayerNorm((5,)).eps == 1e-7
    assert nn.GELU().approximate == "tanh" and nn.LeakyReLU().negative_slope == 0.2
    assert nn.Dropout().p == 0.5


# ------------------------------------------------------------------ torch contract
def test_layers_are_torch_layers_and_cells() -> None:
    pairs = [
        (nn.Dense(3, 4), torch.nn.Linear),
        (nn.Conv2d(3, 4, 3), torch.nn.Conv2d),
        (nn.Conv2dTranspose(3, 4, 3), torch.nn.ConvTranspose2d),
        (nn.BatchNorm2d(3), torch.nn.BatchNorm2d),
        (nn.BatchNorm1d(3), torch.nn.BatchNorm1d),
        (nn.LayerNorm((3,)), torch.nn.LayerNorm),
        (nn.Embedding(5, 3), torch.nn.Embedding),
        (nn.MaxPool2d(2), torch.nn.MaxPool2d),
        (nn.ReLU(), torch.nn.ReLU),
        (nn.Flatten(), torch.nn.Flatten),
    ]
    for layer, kind in pairs:
        assert isinstance(layer, kind) and isinstance(layer, nn.Cell), kind


def test_mindspore_names_and_trainable_params() -> None:
    bn = nn.BatchNorm2d(3)
    names = [n for n, _ in bn.parameters_and_names()]
    # MindSpore's order: its _BatchNorm creates the moving statistics before gamma/beta
    assert names == ["moving_mean", "moving_variance", "gamma", "beta"]
    assert len(nn.BatchNorm2d(3).trainable_params()) == 2
    frozen = nn.BatchNorm2d(3, affine=False)
    assert frozen.trainable_params() == [] and frozen.weight is not None
    dense = nn.Dense(3, 4)
    assert [tuple(p.shape) for p in dense.trainable_params()] == [(4, 3), (4,)]
    assert [n for n, _ in nn.Embedding(5, 2).parameters_and_names()] == ["embedding_table"]
    assert set(nn.Conv2d(3, 4, 3, has_bias=True).state_dict()) == {"weight", "bias"}


def test_parameters_named_twice() -> None:
    dense = nn.Dense(3, 4)
    dense.trainable_params()
    assert len(dense.trainable_params()) == 2


def test_construct_is_forward_and_backward_works() -> None:
    conv = nn.Conv2d(2, 3, 3, stride=2, has_bias=True)
    x = torch.randn(1, 2, 8, 8, requires_grad=True)
    assert torch.equal(conv(x), conv.construct(x))
    conv(x).sum().backward()
    assert conv.weight.grad is not None and x.grad is not None


def test_dropout_train_drops_p_and_scales() -> None:
    torch.manual_seed(0)
    x = torch.ones(200_000)
    for layer, drop in ((nn.Dropout(keep_prob=0.8), 0.2), (nn.Dropout(keep_prob=0.9, p=0.3), 0.3)):
        y = layer.set_train(True)(x)
        assert (y == 0).float().mean().item() == pytest.approx(drop, abs=0.01)
        assert torch.allclose(y[y != 0], torch.tensor(1 / (1 - drop)))


def test_embedding_padding_row_is_zero_and_learns() -> None:
    emb = nn.Embedding(6, 3, padding_idx=2)
    assert torch.equal(emb.weight[2], torch.zeros(3))
    emb(torch.tensor([2, 2])).sum().backward()
    assert torch.equal(emb.weight.grad[2], torch.full((3,), 2.0))  # MindSpore: not masked


def test_dense_activation_cell_and_weight_tensor() -> None:
    w = torch.arange(6.0).reshape(2, 3)
    dense = nn.Dense(3, 2, weight_init=w, bias_init="zeros", activation=nn.Tanh())
    x = torch.tensor([[1.0, -1.0, 0.5]])
    assert torch.allclose(dense(x), torch.tanh(x @ w.T))


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: nn.Dense(0, 3), ValueError, "Dense: in_channels"),
        (lambda: nn.Dense(3.0, 3), TypeError, "Dense: in_channels"),
        (lambda: nn.Dense(3, 3, activation=3), TypeError, "Dense: activation"),
        (lambda: nn.Dense(3, 3, activation="nope"), ValueError, "Dense: unknown activation"),
        (
            lambda: nn.Dense(3, 3, weight_init=torch.zeros(2, 2)),
            ValueError,
            "Dense: bad weight_init",
        ),
        (lambda: nn.Conv2d(3, 4, 3, pad_mode="full"), ValueError, "Conv2d: pad_mode"),
        (lambda: nn.Conv2d(3, 4, 3, padding=1), ValueError, "Conv2d: padding must be 0"),
        (lambda: nn.Conv2d(3, 4, 3, pad_mode="pad", padding=(1, 2)), TypeError, "Conv2d: padding"),
        (lambda: nn.Conv2d(3, 4, 3, group=2), ValueError, "Conv2d: in_channels and out"),
        (lambda: nn.Conv2d(3, 4, 3, data_format="NHWC"), ValueError, "Conv2d: only data_format"),
        (lambda: nn.Conv2d(3, 4, 0), ValueError, "Conv2d: every kernel_size"),
        (lambda: nn.Conv2dTranspose(3, 4, 3, output_padding=1), ValueError, "output_padding"),
        (lambda: nn.BatchNorm2d(3, momentum=1.5), ValueError, "BatchNorm2d: momentum"),
        (lambda: nn.BatchNorm2d(3, use_batch_statistics=1), ValueError, "use_batch_statistics"),
        (lambda: nn.LayerNorm(5), TypeError, "LayerNorm: normalized_shape"),
        (lambda: nn.MaxPool2d(2, pad_mode="same", padding=1), ValueError, "MaxPool2d: padding"),
        (lambda: nn.AvgPool2d(2, pad_mode="x"), ValueError, "AvgPool2d: pad_mode"),
        (lambda: nn.Dropout(keep_prob=0.0), ValueError, "Dropout: keep_prob"),
        (lambda: nn.Dropout(keep_prob=1), TypeError, "Dropout: keep_prob"),
        (lambda: nn.Dropout(p=1.0), ValueError, "Dropout: p"),
        (lambda: nn.Embedding(5, 3, padding_idx=5), ValueError, "Embedding: padding_idx"),
        (lambda: nn.Softmax(axis=1.0), TypeError, "Softmax: axis"),
    ],
)
def test_bad_arguments(make, error, match) -> None:
    with pytest.raises(error, match=match):
        make()


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="BatchNorm2d: the input must have 4"):
        nn.BatchNorm2d(3)(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="Flatten: start_dim"):
        nn.Flatten(start_dim=3)(torch.zeros(2, 3))


# ------------------------------------------------------------------ model-zoo networks
class LeNet5(nn.Cell):
    """MindSpore model zoo's LeNet5, written with jisu.nn."""

    def __init__(self, num_class: int = 10, num_channel: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init="normal")
        self.fc2 = nn.Dense(120, 84, weight_init="normal")
        self.fc3 = nn.Dense(84, num_class, weight_init="normal")
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


class Bottleneck(nn.Cell):
    """MindSpore model zoo's ResNet-50 bottleneck block, written with jisu.nn."""

    expansion = 4

    def __init__(self, in_channel: int, out_channel: int, stride: int = 1) -> None:
        super().__init__()
        channel = out_channel // self.expansion
        self.conv1 = nn.Conv2d(in_channel, channel, 1, weight_init="he_normal")
        self.bn1 = nn.BatchNorm2d(channel)
        self.conv2 = nn.Conv2d(channel, channel, 3, stride=stride, weight_init="he_normal")
        self.bn2 = nn.BatchNorm2d(channel)
        self.conv3 = nn.Conv2d(channel, out_channel, 1, weight_init="he_normal")
        self.bn3 = nn.BatchNorm2d(out_channel, gamma_init="zeros")
        self.relu = nn.ReLU()
        self.down_sample = nn.SequentialCell(
            [nn.Conv2d(in_channel, out_channel, 1, stride=stride), nn.BatchNorm2d(out_channel)]
        )

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        identity = self.down_sample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


def test_lenet5_builds_and_runs() -> None:
    net = LeNet5()
    assert net(torch.randn(4, 1, 32, 32)).shape == (4, 10)
    assert len(net.trainable_params()) == 8  # MindSpore convs have no bias by default


def test_bottleneck_runs_and_amp_o2_keeps_batchnorm_fp32() -> None:
    block = Bottleneck(16, 32, stride=2)
    assert block(torch.randn(2, 16, 9, 9)).shape == (2, 32, 5, 5)  # "same", stride 2: ceil
    names = [n for n, _ in block.parameters_and_names()]
    assert "bn1.gamma" in names and "down_sample.1.moving_variance" in names
    net = auto_mixed_precision(block, "O2", dtype=torch.bfloat16)
    plan = {name: compute for name, _, compute, _ in net.cast_plan()}
    assert plan["bn1"] == plan["down_sample.1"] == "fp32"
    assert plan["conv1"] == plan["down_sample.0"] == "bf16"
    # what the forward really sees (functional_call swaps in the low-precision copies);
    # jisu.amp hands a norm a low-precision input, torch's kernel computing in fp32
    seen: dict[str, tuple] = {}

    def record(name: str):
        def hook(module: torch.nn.Module, _args: tuple) -> None:
            stats = getattr(module, "running_var", None)
            seen[name] = (module.weight.dtype, None if stats is None else stats.dtype)

        return hook

    block.bn2.register_forward_pre_hook(record("bn2"))
    block.down_sample[1].register_forward_pre_hook(record("down_bn"))
    block.conv2.register_forward_pre_hook(record("conv2"))
    out = net(torch.randn(2, 16, 9, 9))
    assert seen["bn2"] == seen["down_bn"] == (torch.float32, torch.float32)
    assert seen["conv2"] == (torch.bfloat16, None)
    assert out.shape == (2, 32, 5, 5) and torch.isfinite(out.float()).all()


@pytest.mark.parametrize("mode, numpy_mode", [("CONSTANT", "constant"), ("REFLECT", "reflect"),
                                              ("SYMMETRIC", "symmetric")])  # fmt: skip
def test_pad_matches_numpys_modes_of_the_same_names(mode, numpy_mode) -> None:
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    paddings = ((1, 0), (0, 0), (2, 1), (3, 2))
    if mode == "SYMMETRIC":
        paddings = ((0, 1), (0, 0), (2, 1), (3, 4))  # up to the size of the dim
    got = nn.Pad(paddings, mode)(torch.from_numpy(x))
    np.testing.assert_array_equal(got.numpy(), np.pad(x, paddings, mode=numpy_mode))
    # MindSpore's documented example (its docstring's output)
    two = torch.tensor([[1.0, 2, 3], [4, 5, 6]])
    want = {
        "CONSTANT": [[0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 2, 3, 0, 0], [0, 0, 4, 5, 6, 0, 0],
                     [0, 0, 0, 0, 0, 0, 0]],
        "REFLECT": [[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4],
                    [3, 2, 1, 2, 3, 2, 1]],
        "SYMMETRIC": [[2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5],
                      [5, 4, 4, 5, 6, 6, 5]],
    }[mode]  # fmt: skip
    assert nn.Pad(((1, 1), (2, 2)), mode)(two).tolist() == want


def test_pad_gradients_flow_and_bad_paddings_are_refused() -> None:
    x = torch.ones(1, 1, 3, 3, requires_grad=True)
    nn.Pad(((0, 0), (0, 0), (1, 1), (1, 1)), "SYMMETRIC")(x).sum().backward()
    assert x.grad[0, 0].tolist() == [[4, 2, 4], [2, 1, 2], [4, 2, 4]]  # corners copied 4 times
    with pytest.raises(TypeError, match="paddings must be a tuple"):
        nn.Pad([[1, 1]])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        nn.Pad(((1, 1, 1),))
    with pytest.raises(ValueError, match="mode must be one of"):
        nn.Pad(((1, 1),), "EDGE")
    with pytest.raises(ValueError, match="2 pairs for a 4-d input"):
        nn.Pad(((1, 1), (1, 1)))(torch.ones(1, 1, 2, 2))
    with pytest.raises(ValueError, match="REFLECT padding of dim 1 must be <= 1"):
        nn.Pad(((0, 0), (2, 0)), "REFLECT")(torch.ones(2, 2))
