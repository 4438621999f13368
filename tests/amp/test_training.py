"""A small CNN on the handwritten digits (jisu's embedded copy) learns as well at O1/O2/O3
as at O0."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import jisu.amp as amp
from jisu.job_data import load_digits


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 16, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 10),
    )  # fmt: skip


@pytest.fixture(scope="module")
def digits():
    images, labels = load_digits()
    x = torch.tensor(images / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    return x, torch.tensor(labels), order[:1400], order[1400:]


def accuracy(level: str, dtype: torch.dtype | None, digits, device: str) -> float:
    x, y, train, test = digits
    x, y = x.to(device), y.to(device)
    torch.manual_seed(0)  # the same initial weights at every level
    net = cnn().to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    step = amp.build_train_network(
        net, opt, nn.CrossEntropyLoss(), level=level, cast_model_type=dtype
    )
    shuffle = torch.Generator().manual_seed(1)
    for _ in range(8):
        order = train[torch.randperm(len(train), generator=shuffle)]
        for i in range(0, len(order), 64):
            batch = order[i : i + 64].to(device)
            step(x[batch], y[batch])
    step.network.eval()
    with torch.no_grad():
        return (
            (step.network(x[test.to(device)]).argmax(1) == y[test.to(device)]).float().mean().item()
        )


@pytest.mark.parametrize(
    "dtype, device",
    [
        (torch.bfloat16, "cpu"),
        pytest.param(
            torch.float16, "cuda",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
        ),
    ],
)  # fmt: skip
def test_every_level_reaches_the_fp32_accuracy_within_one_point(
    digits, one_intra_op_thread, dtype, device
):
    reference = accuracy("O0", None, digits, device)
    assert reference > 0.95  # the network does learn
    for level in ("O1", "O2", "O3"):
        got = accuracy(level, dtype, digits, device)
        assert got >= reference - 0.01, f"{level}: {got:.4f} against O0's {reference:.4f}"
