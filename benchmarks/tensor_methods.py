"""Cost of MindSpore's tensor methods on ``torch.Tensor`` (jisu.common.tensor_methods).

Times, with the patches installed and removed (toggled in the same process, alternating in an
order that flips every pair so drift favours neither side):

(a) a micro loop of small torch ops, half of them methods jisu wraps (``transpose(0, 1)``,
    ``sum()``, ``mean(1)``, ``max()``, ``var(1)``, ``repeat``), called in torch's own forms;
(b) a training step of a small conv net on CPU (forward + backward + SGD), whose forward uses
    wrapped methods (``mean``, ``transpose``, ``sum``) as ported code does.

Reported: median time per iteration on each side and the median per-pair ratio (on/off).
Usage: python benchmarks/tensor_methods.py [--repeats 7] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch
from torch import nn

from jisu.common import tensor_methods


def micro(x: torch.Tensor, n: int) -> float:
    begin = time.perf_counter()
    for _ in range(n):
        y = x.transpose(0, 1)
        s = y.sum()
        m = x.mean(1)
        t = x.max()
        v = x.var(1)
        r = x.repeat(2, 1)
        z = torch.add(x, 1.0).relu()  # unwrapped ops, for scale
        _ = (s + t, m + v, r, z * 2.0)
    return (time.perf_counter() - begin) / n


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = torch.max_pool2d(x, 2)
        x = torch.relu(self.conv2(x))
        x = x.mean((2, 3))  # global average pool, as ported code writes it
        x = x.transpose(0, 1).transpose(0, 1)
        return self.fc(x)


def train(steps: int, model: Net, opt: torch.optim.Optimizer, data, labels) -> float:
    begin = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(data), labels, reduction="none").sum()
        loss.backward()
        opt.step()
    return (time.perf_counter() - begin) / steps


def compare(name: str, run, repeats: int) -> None:
    runs: dict[bool, list[float]] = {False: [], True: []}
    run()  # warm up
    for k in range(repeats):
        for on in (False, True) if k % 2 == 0 else (True, False):
            tensor_methods.install() if on else tensor_methods.uninstall()
            runs[on].append(run())
    tensor_methods.install()
    off, on = statistics.median(runs[False]), statistics.median(runs[True])
    ratios = sorted(a / b for a, b in zip(runs[True], runs[False]))
    print(
        f"{name}: off {off * 1e6:,.1f} us/iter; on {on * 1e6:,.1f} us/iter; "
        f"per-pair on/off median {statistics.median(ratios):.3f} "
        f"(range {ratios[0]:.3f}-{ratios[-1]:.3f}, {len(ratios)} pairs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {args.threads} torch thread(s)"
    )
    x = torch.randn(8, 8)
    compare("micro loop (6 wrapped + 3 plain ops)", lambda: micro(x, 3000), args.repeats)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data, labels = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
    compare(
        "train step (conv net, batch 16x3x32x32)",
        lambda: train(20, model, opt, data, labels),
        args.repeats,
    )


if __name__ == "__main__":
    main()
