"""Train-step time at each mixed-precision level against plain PyTorch, in one run.

A small ResNet-style CNN (4 residual blocks, BatchNorm, 32x32 inputs, batch 64, SGD with
momentum) on random data. Variants take turns over the same batches (medians):

- plain PyTorch fp32: ``loss.backward(); opt.step()`` (the baseline of every ratio);
- plain PyTorch autocast: ``torch.autocast`` (+ ``GradScaler`` for fp16), the usual recipe;
- jisu O0, O1, O2, O3 via ``jisu.amp.build_train_network`` (O2 with fp16 adds jisu's
  device-side dynamic loss scaling).

On CPU the low dtype is bf16; on a CUDA device both fp16 and bf16 are run.
Usage: python benchmarks/amp_step.py [--steps 10] [--rounds 5] [--batch 64]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
from torch import nn

import jisu
import jisu.amp as amp


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.skip(x))


def resnet() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
        Block(32, 32, 1), Block(32, 64, 2), Block(64, 128, 2), Block(128, 128, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10),
    )  # fmt: skip


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_variants(steps: dict, batches, device: str, rounds: int = 5) -> dict:
    """Median seconds per step of each variant. Variants take turns (``rounds`` rounds of
    ``len(batches)`` steps each, after a warm-up), so drift in the machine's speed is spread
    over all of them instead of favouring whichever ran first."""
    for step in steps.values():
        for x, y in batches[:3]:
            step(x, y)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            for x, y in batches:
                sync(device)
                begin = time.perf_counter()
                step(x, y)
                sync(device)
                times[name].append(time.perf_counter() - begin)
    return {name: statistics.median(t) for name, t in times.items()}


def plain_step(net, opt, loss_fn, device: str, dtype: torch.dtype | None):
    scaler = torch.amp.GradScaler(device) if dtype == torch.float16 else None

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        if dtype is None:
            loss = loss_fn(net(x), y)
        else:
            with torch.autocast(device, dtype=dtype):
                loss = loss_fn(net(x), y)
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss.detach()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps per variant per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(
        f"jisu {jisu.__version__}, torch {torch.__version__}, python "
        f"{platform.python_version()}, {torch.get_num_threads()} threads"
    )
    for device in devices:
        name = torch.cuda.get_device_name() if device == "cuda" else platform.processor() or "CPU"
        gen = torch.Generator().manual_seed(0)
        batches = [
            (
                torch.randn(args.batch, 3, 32, 32, generator=gen).to(device),
                torch.randint(0, 10, (args.batch,), generator=gen).to(device),
            )
            for _ in range(args.steps)
        ]
        loss_fn = nn.CrossEntropyLoss()
        dtypes = [torch.bfloat16] if device == "cpu" else [torch.float16, torch.bfloat16]

        def fresh(device=device):
            torch.manual_seed(0)
            net = resnet().to(device)
            return net, torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

        steps = {"plain PyTorch fp32": plain_step(*fresh(), loss_fn, device, None)}
        steps["jisu O0 (fp32)"] = amp.build_train_network(*fresh(), loss_fn, level="O0")
        for dtype in dtypes:
            short = str(dtype).replace("torch.", "")
            scaler = " + GradScaler" if dtype == torch.float16 else ""
            steps[f"plain PyTorch autocast {short}{scaler}"] = plain_step(
                *fresh(), loss_fn, device, dtype
            )
            for level in ("O1", "O2", "O3"):
                steps[f"jisu {level} {short}"] = amp.build_train_network(
                    *fresh(), loss_fn, level=level, cast_model_type=dtype
                )
        results = time_variants(steps, batches, device, args.rounds)
        base = results["plain PyTorch fp32"]
        print(f"\n{device} ({name}), batch {args.batch}: ms per train step (median)")
        for label, t in results.items():
            print(f"  {label:<38} {t * 1e3:8.1f}   {base / t:.2f}x")


if __name__ == "__main__":
    main()
