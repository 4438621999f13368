"""GRAPH_MODE's rule against its alternatives: eager (PYNATIVE_MODE), auto (GRAPH_MODE as
jisu runs it by default: compile only when the run pays it back) and always (GRAPH_MODE with
``graph_compile="always"``: ``torch.compile`` at the first step), on the LeNet tutorial's
network (one MNIST epoch: 1875 steps of batch 32) and a ResNet-18 on 32x32 images, through
``Model.train``.

Each run is a process of its own; the modes take turns over ``--rounds`` rounds. Round 1 runs
with an empty torch compile cache (a cold compile, as on a new machine), later rounds with the
cache round 1 filled (warm), so "always" shows both. Auto starts from its priors (an empty
record file) and, from round 2, from what earlier rounds recorded. Reported per mode: the wall
time of the whole ``Model.train`` call (compile included), the steady-state step time (the
median of the second half of the steps), and auto's choice.

    python benchmarks/graph_mode.py --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mindspore_cpu import BATCH, WORKLOADS, build  # the same ported networks

MODES = ("eager", "auto", "always")
STEPS = {"lenet": 1875, "resnet18": 100}


def train_once(workload: str, mode: str, steps: int) -> dict:
    import numpy as np

    import jisu
    import jisu.dataset as ds
    from jisu.train import Callback, Model
    from jisu.train.steps import CompiledStep

    jisu.set_seed(1)
    jisu.set_context(mode=jisu.PYNATIVE_MODE if mode == "eager" else jisu.GRAPH_MODE)
    jisu.set_context(graph_compile="always" if mode == "always" else "auto")
    channels, size, classes = WORKLOADS[workload]
    rng = np.random.default_rng(0)
    images = rng.standard_normal((steps * BATCH, channels, size, size)).astype(np.float32)
    labels = rng.integers(0, classes, steps * BATCH).astype(np.int32)
    data = ds.NumpySlicesDataset({"image": images, "label": labels}, shuffle=False)
    data = data.batch(BATCH, drop_remainder=True)

    class StepTimes(Callback):
        def __init__(self):
            super().__init__()
            self.ends = []

        def on_train_step_end(self, run_context):
            self.ends.append(time.perf_counter())

    net = build(jisu, workload)
    loss = jisu.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = jisu.nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    model = Model(net, loss, opt)
    times = StepTimes()
    begin = time.perf_counter()
    model.train(1, data, callbacks=[times], dataset_sink_mode=False)
    wall = time.perf_counter() - begin
    gaps = [b - a for a, b in zip(times.ends, times.ends[1:])]
    step = model.train_network
    return {
        "wall_s": wall,
        "step_ms": 1e3 * statistics.median(gaps[len(gaps) // 2 :]),
        "choice": step.describe() if isinstance(step, CompiledStep) else "eager",
        "compiled": bool(isinstance(step, CompiledStep) and step.is_compiled),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workload", choices=tuple(WORKLOADS), action="append")
    parser.add_argument("--steps", type=int, default=0, help="per run (0: per workload)")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "MODE"))
    args = parser.parse_args()
    if args.child:
        workload, mode = args.child
        print(json.dumps(train_once(workload, mode, args.steps or STEPS[workload])))
        return
    import torch

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; batch {BATCH}")
    scratch = tempfile.mkdtemp(prefix="jisu-graph-bench-")
    env = dict(
        os.environ,
        TORCHINDUCTOR_CACHE_DIR=os.path.join(scratch, "inductor"),  # empty: round 1 is cold
        JISU_GRAPH_RECORDS=os.path.join(scratch, "records.json"),  # auto starts from priors
    )
    for workload in args.workload or list(WORKLOADS):
        steps = args.steps or STEPS[workload]
        runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
        for r in range(args.rounds):
            for mode in MODES[r % 3 :] + MODES[: r % 3]:  # each mode first in turn
                cmd = [sys.executable, os.path.abspath(__file__), "--child", workload, mode]
                cmd += ["--steps", str(steps)]
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
                if done.returncode != 0:
                    raise RuntimeError(f"{workload} {mode}:\n{done.stderr[-3000:]}")
                runs[mode].append(json.loads(done.stdout.strip().splitlines()[-1]))
        report(workload, steps, runs)


def report(workload: str, steps: int, runs: dict[str, list[dict]]) -> None:
    eager_wall = statistics.median(r["wall_s"] for r in runs["eager"])
    eager_step = statistics.median(r["step_ms"] for r in runs["eager"])
    print(f"\n{workload}: {steps} steps of batch {BATCH}, {len(runs['eager'])} rounds")
    print(f"{'mode':8} {'run s (rounds)':>30} {'vs eager':>9} {'step ms':>8} {'vs eager':>9}")
    for mode, mode_runs in runs.items():
        walls = [r["wall_s"] for r in mode_runs]
        wall, step = statistics.median(walls), statistics.median(r["step_ms"] for r in mode_runs)
        rounds = ", ".join(f"{w:.1f}" for w in walls)
        print(
            f"{mode:8} {wall:8.1f} ({rounds:>19}) {eager_wall / wall:8.2f}x {step:8.2f} "
            f"{eager_step / step:8.2f}x"
        )
    for i, run in enumerate(runs["auto"], 1):
        print(f"auto, round {i}: {run['choice'].splitlines()[-1]}")
    print("(vs eager: eager's time / the mode's, > 1 is faster; round 1 of 'always' is cold)")


if __name__ == "__main__":
    main()
