"""What O1/O2/O3 (bf16) cost against O0 (fp32) per train step on this CPU, with and without
its bf16 instructions, in one run.

The main job's small CNN (``jisu.job.small_cnn``: three conv-BN-ReLU blocks and a linear
head, 32x32 inputs, batch 64, SGD with momentum) on random data, built by
``jisu.amp.build_train_network`` at O0, O1, O2 and O3 (bf16 on CPU). The levels take turns
step by step over the same batches for several rounds; each level's median step counts, and
the ratio is a level's seconds per step / O0's (above 1: slower than fp32).

Each ISA runs in child processes (``--repeats`` of them, the ISAs taking turns):

- ``native``: the CPU as it is;
- ``avx512_core``: oneDNN capped at AVX-512 without its bf16/AMX extensions
  (``ONEDNN_MAX_CPU_ISA=AVX512_CORE``), as on a Skylake/Cascade Lake Xeon: oneDNN's jit
  kernels emulate bf16 with AVX-512;
- ``avx2``: oneDNN and ATen capped at AVX2 (``ONEDNN_MAX_CPU_ISA=AVX2``,
  ``ATEN_CPU_CAPABILITY=avx2``), as on an AVX2-only laptop or desktop: torch then finds no
  oneDNN bf16 support and runs its own reference bf16 convolutions.

The ratios recorded in ``jisu.amp.cpu_bf16.SOFTWARE_BF16_COST`` come from here.

Usage: python benchmarks/amp_cpu.py [--isa native avx512_core avx2] [--steps 8] [--rounds 5]
       [--repeats 3] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

_ISAS = {
    "native": {},  # the CPU as it is
    "avx2": {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"},
    "avx512_core": {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
}
_LEVELS = ("O0", "O1", "O2", "O3")


def child(steps: int, rounds: int, batch: int, threads: int | None) -> dict:
    """Median seconds per step of each level, in this process (its ISA as the parent set)."""
    import torch
    from torch import nn

    if threads:
        torch.set_num_threads(threads)

    import jisu.amp as amp
    from jisu.job import small_cnn

    gen = torch.Generator().manual_seed(0)
    batches = [
        (
            torch.randn(batch, 3, 32, 32, generator=gen),
            torch.randint(0, 10, (batch,), generator=gen),
        )
        for _ in range(steps)
    ]
    loss_fn = nn.CrossEntropyLoss()
    trains = {}
    for level in _LEVELS:
        torch.manual_seed(0)
        net = small_cnn(10)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        trains[level] = amp.build_train_network(net, opt, loss_fn, level=level)
    for step in trains.values():  # warm-up: oneDNN builds its kernels on the first calls
        for x, y in batches[:2]:
            step(x, y)
    times: dict[str, list[float]] = {level: [] for level in _LEVELS}
    for _ in range(rounds):  # the levels take turns step by step: a burst of load from
        for x, y in batches:  # another process slows all of them, not one
            for level, step in trains.items():
                begin = time.perf_counter()
                step(x, y)
                times[level].append(time.perf_counter() - begin)
    return {level: statistics.median(t) for level, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--isa", nargs="+", default=["native", "avx512_core", "avx2"], choices=sorted(_ISAS)
    )
    parser.add_argument("--steps", type=int, default=8, help="steps per level per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="child processes per ISA")
    parser.add_argument(
        "--threads", type=int, default=0, help="intra-op threads (0: torch's default)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.steps, args.rounds, args.batch, args.threads)))
        return
    import torch

    from jisu.amp.cpu_bf16 import cpu_bf16_support

    print(
        f"torch {torch.__version__}, python {platform.python_version()}, "
        f"{torch.get_num_threads()} threads, CPU bf16: {cpu_bf16_support()}"
    )
    ratios: dict[str, list[dict]] = {isa: [] for isa in args.isa}
    for repeat in range(args.repeats):  # the ISAs take turns, as the levels do inside each
        for isa in args.isa:
            env = dict(os.environ, **_ISAS[isa])
            command = [sys.executable, __file__, "--child", "--steps", str(args.steps)]
            command += ["--rounds", str(args.rounds), "--batch", str(args.batch)]
            command += ["--threads", str(args.threads)]
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            ratios[isa].append(result)
            cells = ", ".join(f"{lv} {1e3 * result[lv]:.1f} ms" for lv in _LEVELS)
            print(f"run {repeat + 1} {isa:<12} {cells}", flush=True)
    print(f"\nper-step time / O0's, median (range) of {args.repeats} runs:")
    for isa, runs in ratios.items():
        cells = []
        for level in _LEVELS[1:]:
            each = sorted(run[level] / run["O0"] for run in runs)
            cells.append(f"{level} {statistics.median(each):.2f}x ({each[0]:.2f}-{each[-1]:.2f})")
        print(f"{isa:<12} " + ", ".join(cells))


if __name__ == "__main__":
    main()
