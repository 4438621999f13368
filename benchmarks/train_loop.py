"""Training-loop overhead: jisu's Model (with and without sink mode) against plain loops.

1. A tiny model where the host's per-step work dominates: a 2-layer MLP on 64 features,
   batch 64, 20,000 samples (in memory). Variants, each over the same epochs:
   - plain PyTorch: DataLoader(TensorDataset) + ``loss.item()`` every step (the usual loop);
   - plain PyTorch over pre-made batch tensors (no DataLoader), ``loss.item()`` every step:
     the loop's floor, for reference;
   - jisu ``Model.train`` on a NumpySlicesDataset, without sink mode and with sink mode;
   - the same with a per-step ``OneCycleLR`` (``Model(lr_scheduler=...)``, stepped per
     dispatched step in sink mode too), and the plain loop with it.
2. The digits job end to end (``jisu train``'s ``run``): jisu at its defaults and at O0, each
   against the plain DataLoader + fp32 loop it measures in the same run.

Rates are samples/s over the epochs after the first, medians of ``--repeats`` runs.
Usage: python benchmarks/train_loop.py [--repeats 3] [--epochs 4] [--part 1|2]
"""

from __future__ import annotations

import argparse
import inspect
import platform
import statistics
import time

import numpy as np
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.job import JobConfig, run
from jisu.train import ThroughputMonitor

N, FEATURES, BATCH = 20_000, 64, 64


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, 10))


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, FEATURES)).astype(np.float32)
    return x, (x[:, :10].argmax(1)).astype(np.int64)


def one_cycle(opt: torch.optim.Optimizer, epochs: int) -> torch.optim.lr_scheduler.LRScheduler:
    steps = epochs * -(-N // BATCH)
    return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps)


def plain(batches, epochs: int, schedule: bool = False) -> float:
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    sched = one_cycle(opt, epochs) if schedule else None
    loss_fn = nn.CrossEntropyLoss()
    rates = []
    for _ in range(epochs):
        samples, begin = 0, time.perf_counter()
        for x, y in batches:
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            loss.item()
            samples += x.shape[0]
        rates.append(samples / (time.perf_counter() - begin))
    return statistics.mean(rates[1:])


def jisu_rate(x, y, epochs: int, sink: bool, schedule: bool = False) -> float:
    ds.config.set_seed(0)
    dataset = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=True).batch(BATCH)
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    monitor = ThroughputMonitor(verbose=False)
    extra = {"lr_scheduler": one_cycle(opt, epochs)} if schedule else {}
    model = jisu.Model(net, nn.CrossEntropyLoss(), opt, **extra)
    model.train(epochs, dataset, callbacks=[monitor], dataset_sink_mode=sink)
    return statistics.mean(e["samples_per_second"] for e in monitor.epochs[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--part", type=int, choices=(1, 2), help="only this part")
    args = parser.parse_args()
    print(
        f"jisu {jisu.__version__}, torch {torch.__version__}, python "
        f"{platform.python_version()}, {torch.get_num_threads()} torch threads"
    )
    x, y = data()
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
        batch_size=BATCH,
        shuffle=True,
    )
    tensors = [
        (torch.from_numpy(x[i : i + BATCH]), torch.from_numpy(y[i : i + BATCH]))
        for i in range(0, N, BATCH)
    ]
    variants = {
        "plain PyTorch: DataLoader + loss.item() per step": lambda: plain(loader, args.epochs),
        "plain PyTorch over pre-made tensors (floor)": lambda: plain(tensors, args.epochs),
        "jisu Model.train, no sink": lambda: jisu_rate(x, y, args.epochs, sink=False),
        "jisu Model.train, sink mode": lambda: jisu_rate(x, y, args.epochs, sink=True),
    }
    if "lr_scheduler" in inspect.signature(jisu.Model).parameters:  # (an older jisu in an A/B)
        variants.update(
            {
                "plain PyTorch + OneCycleLR per step": lambda: plain(loader, args.epochs, True),
                "jisu, no sink, OneCycleLR per step": lambda: jisu_rate(
                    x, y, args.epochs, sink=False, schedule=True
                ),
                "jisu, sink mode, OneCycleLR per step": lambda: jisu_rate(
                    x, y, args.epochs, sink=True, schedule=True
                ),
            }
        )
    if args.part != 2:
        part_one(variants, args.repeats)
    if args.part != 1:
        part_two(args.repeats)


def part_one(variants: dict, repeats: int) -> None:
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):  # variants take turns
        for name, measure in variants.items():
            runs[name].append(measure())
    rates = {name: statistics.median(r) for name, r in runs.items()}
    base = rates["plain PyTorch: DataLoader + loss.item() per step"]
    print(f"\n1. tiny MLP ({FEATURES} features, batch {BATCH}, {N} samples): samples/s (median)")
    for name, rate in rates.items():
        print(f"  {name:<52} {rate:9.0f}   {rate / base:.2f}x")
    no_sink, sink = rates["jisu Model.train, no sink"], rates["jisu Model.train, sink mode"]
    print(f"  sink / no sink: {sink / no_sink:.2f}x")


def part_two(repeats: int) -> None:
    print("\n2. the digits job (jisu train), jisu vs the plain loop measured in the same run")
    for label, cfg in (
        ("defaults (O2 bf16, sink, graph)", JobConfig(verbose=False)),
        ("--amp-level O0 (sink, graph)", JobConfig(amp_level="O0", verbose=False)),
    ):
        figures = [run(cfg) for _ in range(repeats)]
        ratios = [f["samples_per_second"] / f["plain_samples_per_second"] for f in figures]
        best = figures[int(np.argsort(ratios)[len(ratios) // 2])]
        print(
            f"  {label:<34} jisu {best['samples_per_second']:6.0f} vs plain "
            f"{best['plain_samples_per_second']:6.0f} samples/s = {statistics.median(ratios):.2f}x "
            f"(runs {', '.join(f'{r:.2f}' for r in ratios)}); accuracy {best['accuracy']:.1%}"
        )


if __name__ == "__main__":
    main()
