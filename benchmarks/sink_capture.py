"""Sink mode with the step captured as a CUDA graph, against eager and plain PyTorch steps.

For each network and AMP level, ``Model.train`` runs the same batches in four ways, taking
turns: eager (no sink mode), sink mode launching every kernel (``sink_capture="off"``), sink
mode with the whole step captured once and replayed (``"cuda_graph"``, the default) and, for
the networks named in ``--compile``, sink mode through ``torch.compile(mode="reduce-overhead")``;
and a plain PyTorch loop (the same network, optimizer and AMP recipe, no host read per step) as
the reference. Steps/s over the epochs after the first (which holds the warm-up, the capture,
the compilation), medians of ``--rounds``; the ratios are against the eager Model and the plain
loop of the same run.

Networks: a tiny MLP (batch 64), a small residual CNN (32x32, batch 64), ResNet-18 and
ResNet-50 (224x224) at batch 32 and 256; levels O0 and O2 at fp16 (dynamic loss scaling) and,
for the ResNets, O2 at bf16. SGD with momentum (fused on CUDA, so its rates are device tensors)
and a per-step schedule, as training runs it. The batches are made once in pinned host memory,
so the input pipeline is not what is measured.

Usage: python benchmarks/sink_capture.py [--rounds 1] [--only mlp,resnet50-b32] [--compile
mlp,resnet50-b32] [--quick] (--quick: tiny sizes, two epochs, a smoke run that works on CPU).
"""

from __future__ import annotations

import argparse
import logging
import platform
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

import jisu
from jisu.train import Callback


# ------------------------------------------------------------------ networks (plain torch)
class Basic(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(True),
            nn.Conv2d(width, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
        )  # fmt: skip
        self.skip = _shortcut(cin, cout, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.skip(x))


class Bottleneck(Basic):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int) -> None:
        nn.Module.__init__(self)
        cout = width * self.expansion
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(True),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width),
            nn.ReLU(True), nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )  # fmt: skip
        self.skip = _shortcut(cin, cout, stride)


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module:
    if stride == 1 and cin == cout:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


def resnet(block: type[Basic], layers: list[int], classes: int = 1000) -> nn.Module:
    """The ImageNet ResNet of He et al. (ResNet-18: Basic [2, 2, 2, 2]; ResNet-50:
    Bottleneck [3, 4, 6, 3])."""
    stages: list[nn.Module] = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(True),
        nn.MaxPool2d(3, 2, 1),
    ]  # fmt: skip
    cin = 64
    for i, count in enumerate(layers):
        width = 64 * 2**i
        for j in range(count):
            stages.append(block(cin, width, 2 if j == 0 and i > 0 else 1))
            cin = width * block.expansion
    stages += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*stages)


def small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(True),
        Basic(32, 32, 1), Basic(32, 64, 2), Basic(64, 128, 2), Basic(128, 128, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10),
    )  # fmt: skip


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


#: name: (network, input shape of one sample, classes, batch, steps per epoch, levels)
CONFIGS: dict[str, tuple[Callable[[], nn.Module], tuple, int, int, int, tuple]] = {
    "mlp": (mlp, (64,), 10, 64, 300, ("O0", "O2-fp16")),
    "cnn": (small_cnn, (3, 32, 32), 10, 64, 150, ("O0", "O2-fp16")),
    "resnet18-b32": (lambda: resnet(Basic, [2, 2, 2, 2]), (3, 224, 224), 1000, 32, 40,
                     ("O0", "O2-fp16", "O2-bf16")),
    "resnet18-b256": (lambda: resnet(Basic, [2, 2, 2, 2]), (3, 224, 224), 1000, 256, 10,
                      ("O0", "O2-fp16", "O2-bf16")),
    "resnet50-b32": (lambda: resnet(Bottleneck, [3, 4, 6, 3]), (3, 224, 224), 1000, 32, 30,
                     ("O0", "O2-fp16", "O2-bf16")),
    "resnet50-b256": (lambda: resnet(Bottleneck, [3, 4, 6, 3]), (3, 224, 224), 1000, 256, 8,
                      ("O0", "O2-fp16", "O2-bf16")),
}  # fmt: skip


# ------------------------------------------------------------------ measuring
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class EpochClock(Callback):
    """Seconds and steps of each epoch, the device's queue drained at both ends."""

    acts_on_training = False

    def __init__(self, device: torch.device) -> None:
        self.device, self.epochs = device, []

    def on_train_epoch_begin(self, run_context) -> None:
        sync(self.device)
        self._begin, self._steps = time.perf_counter(), run_context.original_args().cur_step_num

    def on_train_epoch_end(self, run_context) -> None:
        sync(self.device)
        steps = run_context.original_args().cur_step_num - self._steps
        self.epochs.append(steps / (time.perf_counter() - self._begin))


def batches(shape: tuple, classes: int, batch: int, steps: int, device: torch.device) -> list:
    """``steps`` batches cycling over 4 made once (pinned on CUDA)."""
    g = torch.Generator().manual_seed(0)
    made = []
    for _ in range(4):
        x, y = torch.randn(batch, *shape, generator=g), torch.randint(0, classes, (batch,))
        made.append((x.pin_memory(), y.pin_memory()) if device.type == "cuda" else (x, y))
    return [made[i % 4] for i in range(steps)]


def parts(level: str, make: Callable[[], nn.Module], device: torch.device, total_steps: int):
    torch.manual_seed(0)
    net = make().to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, fused=device.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - s / (total_steps + 1))
    amp_level, _, name = level.partition("-")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(name)
    return net, opt, sched, amp_level, dtype


def model_rate(config: tuple, level: str, mode: str, epochs: int, device, data) -> tuple:
    make, _, _, _, steps, _ = config
    net, opt, sched, amp_level, dtype = parts(level, make, device, epochs * steps)
    manager = None
    if dtype is not None:  # MindSpore's way to a level at a dtype: convert, then Model at O0
        net = jisu.amp.auto_mixed_precision(net, amp_level, dtype)
        manager = jisu.amp.DynamicLossScaleManager() if dtype == torch.float16 else None
    model = jisu.Model(
        net, nn.CrossEntropyLoss(), opt, lr_scheduler=sched, loss_scale_manager=manager
    )
    sink = mode != "eager"
    if sink:
        jisu.set_context(sink_capture=mode)
    clock = EpochClock(device)
    try:
        model.train(epochs, data, callbacks=[clock], dataset_sink_mode=sink)
    finally:
        jisu.set_context(sink_capture="cuda_graph")
    capture = model._state.step_capture
    return statistics.median(clock.epochs[1:]), capture.describe() if capture else "-"


def plain_rate(config: tuple, level: str, epochs: int, device, data) -> float:
    """The plain PyTorch loop: autocast / a half-precision copy as the level asks, PyTorch's
    GradScaler for fp16, no host read per step (one sync per epoch)."""
    make, _, _, _, steps, _ = config
    net, opt, sched, _, dtype = parts(level, make, device, epochs * steps)
    loss_fn = nn.CrossEntropyLoss()
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    rates = []
    for _ in range(epochs):
        sync(device)
        begin = time.perf_counter()
        for x, y in data:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            with torch.autocast(
                device.type, dtype=dtype or torch.float32, enabled=dtype is not None
            ):
                loss = loss_fn(net(x).float(), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            sched.step()
        sync(device)
        rates.append(len(data) / (time.perf_counter() - begin))
    return statistics.median(rates[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--only", default=",".join(CONFIGS))
    parser.add_argument("--compile", default="mlp,resnet50-b32")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="  [%(name)s] %(message)s")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    print(f"jisu {jisu.__version__}, torch {torch.__version__}, {device} ({name})")
    compiled = set(args.compile.split(",")) if args.compile else set()
    for key in args.only.split(","):
        make, shape, classes, batch, steps, levels = CONFIGS[key]
        if args.quick:
            shape = (3, 64, 64) if len(shape) == 3 and shape[1] == 224 else shape
            batch, steps = min(batch, 8), 6
        config = (make, shape, classes, batch, steps, levels)
        data = batches(shape, classes, batch, steps, device)
        modes = ["eager", "off", "cuda_graph"] + (["reduce-overhead"] if key in compiled else [])
        for level in levels:
            runs: dict[str, list[float]] = {m: [] for m in ["plain", *modes]}
            how: dict[str, str] = {}
            for _ in range(args.rounds):  # the variants take turns
                runs["plain"].append(plain_rate(config, level, args.epochs, device, data))
                for mode in modes:
                    rate, how[mode] = model_rate(config, level, mode, args.epochs, device, data)
                    runs[mode].append(rate)
            rates = {m: statistics.median(r) for m, r in runs.items()}
            eager, plain = rates["eager"], rates["plain"]
            print(f"\n{key} (batch {batch}, {steps} steps/epoch), {level}: steps/s, median of "
                  f"{args.rounds}; x eager Model, x plain loop")  # fmt: skip
            labels = {"plain": "plain PyTorch loop", "eager": "Model, no sink",
                      "off": "Model, sink (no capture)", "cuda_graph": "Model, sink + CUDA graph",
                      "reduce-overhead": "Model, sink + reduce-overhead"}  # fmt: skip
            for mode, rate in rates.items():
                spread = ", ".join(f"{r:.1f}" for r in runs[mode])
                print(
                    f"  {labels[mode]:<32} {rate:9.1f}   {rate / eager:5.2f}x  "
                    f"{rate / plain:5.2f}x   ({spread})"
                )
            for mode in modes[1:]:
                print(f"    {labels[mode]}: {how[mode]}")


if __name__ == "__main__":
    main()
