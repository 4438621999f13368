"""Ported scripts against MindSpore on the same CPU: LeNet-5 (the tutorial's network) and a
ResNet-18 on 32x32 images, trained by ``Model.train`` on jisu and on MindSpore 2.10 with the
same data, batch size and optimizer; steady-state steps/s and the time to the first step, side
by side.

One script, two frameworks: the training code below is MindSpore's API, imported from
``mindspore`` or from ``jisu`` (``--framework``), as a ported zoo script is. The driver
(no ``--framework``) runs it in subprocesses, jisu with this Python and MindSpore with
``--ms-python`` (a throwaway venv: ``pip install mindspore==2.10.0 "numpy<2"``; MindSpore is
never a jisu dependency), the frameworks taking turns over ``--rounds`` rounds, and prints the
medians and the jisu/MindSpore ratio of each (steps/s: > 1 means jisu is faster).

    python benchmarks/mindspore_cpu.py --ms-python /work/msvenv/bin/python --rounds 3

Each run is its own process, so the time to the first step includes building the model and the
pipeline and, in GRAPH_MODE, MindSpore's graph compile (jisu's GRAPH_MODE runs the first steps
eagerly and compiles only when the run pays it back: see jisu.train.graph_policy). Import time
is reported apart. The data are random images and labels in memory (NumpySlicesDataset): the
subject is the train step, not the input pipeline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BATCH = 32
WORKLOADS = {"lenet": (1, 32, 10), "resnet18": (3, 32, 10)}  # channels, size, classes


# ---------------------------------------------------------------- the ported training script
def build(ms, workload: str):
    """The network, in MindSpore's API (``ms`` is ``mindspore`` or ``jisu``)."""
    nn = ms.nn
    channels, _, classes = WORKLOADS[workload]
    if workload == "lenet":

        class LeNet5(nn.Cell):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(channels, 6, 5, pad_mode="valid")
                self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
                self.fc1 = nn.Dense(16 * 5 * 5, 120)
                self.fc2 = nn.Dense(120, 84)
                self.fc3 = nn.Dense(84, classes)
                self.relu = nn.ReLU()
                self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
                self.flatten = nn.Flatten()

            def construct(self, x):
                x = self.pool(self.relu(self.conv1(x)))
                x = self.pool(self.relu(self.conv2(x)))
                x = self.flatten(x)
                return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))

        return LeNet5()

    class Block(nn.Cell):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, pad_mode="pad", padding=1)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, pad_mode="pad", padding=1)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.SequentialCell(
                    [nn.Conv2d(cin, cout, 1, stride=stride), nn.BatchNorm2d(cout)]
                )

        def construct(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            skip = x if self.down is None else self.down(x)
            return self.relu(out + skip)

    class ResNet18(nn.Cell):
        def __init__(self):
            super().__init__()
            self.stem = nn.SequentialCell(
                [nn.Conv2d(channels, 64, 3, pad_mode="pad", padding=1), nn.BatchNorm2d(64),
                 nn.ReLU()]
            )  # fmt: skip
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
                cin = cout
            self.layers = nn.SequentialCell(layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.flatten = nn.Flatten()
            self.fc = nn.Dense(512, classes)

        def construct(self, x):
            return self.fc(self.flatten(self.pool(self.layers(self.stem(x)))))

    return ResNet18()


def train_once(framework: str, workload: str, steps: int, mode: str) -> dict:
    """One run in this process: returns the import, first-step and steady-state figures."""
    begin = time.perf_counter()
    if framework == "mindspore":
        import mindspore as ms
        import mindspore.dataset as ds
        from mindspore.train import Callback, Model
    else:
        import jisu as ms
        import jisu.dataset as ds
        from jisu.train import Callback, Model
    import numpy as np

    imported = time.perf_counter() - begin
    ms.set_seed(1)
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_context(device_target="CPU")
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

    built = time.perf_counter()
    net = build(ms, workload)
    loss = ms.nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = ms.nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)
    model = Model(net, loss, opt)
    times = StepTimes()
    model.train(1, data, callbacks=[times], dataset_sink_mode=False)
    gaps = [b - a for a, b in zip(times.ends, times.ends[1:])]
    steady = gaps[len(gaps) // 2 :]  # the second half: compiles and warm-ups are over
    return {
        "import_s": imported,
        "first_step_s": times.ends[0] - built,
        "step_ms": 1e3 * statistics.median(steady),
        "steps_per_s": 1.0 / statistics.median(steady),
        "steps": len(times.ends),
    }


# ---------------------------------------------------------------- the driver
def run_child(python: str, framework: str, workload: str, steps: int, mode: str) -> dict:
    args = [python, os.path.abspath(__file__), "--framework", framework, "--workload", workload]
    args += ["--steps", str(steps), "--mode", mode]
    env = dict(os.environ, GLOG_v="3")  # MindSpore's warnings off: the figures are the output
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{framework} {workload} {mode} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", choices=("jisu", "mindspore"))
    parser.add_argument("--workload", choices=tuple(WORKLOADS), action="append")
    parser.add_argument("--mode", choices=("graph", "pynative"), action="append")
    parser.add_argument("--steps", type=int, default=0, help="per run (0: per workload)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ms-python", default=os.environ.get("MS_PYTHON", ""))
    args = parser.parse_args()
    workloads = args.workload or list(WORKLOADS)
    modes = args.mode or ["graph", "pynative"]
    if args.framework is not None:  # a child: one run, its figures as JSON
        steps = args.steps or {"lenet": 400, "resnet18": 60}[workloads[0]]
        print(json.dumps(train_once(args.framework, workloads[0], steps, modes[0])))
        return
    if not args.ms_python:
        parser.error("--ms-python (a Python with mindspore==2.10.0 installed) is needed")
    import torch

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; batch {BATCH}")
    for workload in workloads:
        steps = args.steps or {"lenet": 400, "resnet18": 60}[workload]
        for mode in modes:
            runs: dict[str, list[dict]] = {"jisu": [], "mindspore": []}
            for r in range(args.rounds):
                order = ["jisu", "mindspore"] if r % 2 == 0 else ["mindspore", "jisu"]
                for framework in order:
                    python = sys.executable if framework == "jisu" else args.ms_python
                    runs[framework].append(run_child(python, framework, workload, steps, mode))
            report(workload, mode, steps, runs)


def report(workload: str, mode: str, steps: int, runs: dict[str, list[dict]]) -> None:
    def med(framework: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[framework])

    print(f"\n{workload}, {mode} mode, {steps} steps of batch {BATCH}, {len(runs['jisu'])} rounds")
    print(f"{'':10} {'steps/s':>9} {'step ms':>9} {'first step s':>13} {'import s':>9}")
    for framework in ("jisu", "mindspore"):
        print(
            f"{framework:10} {med(framework, 'steps_per_s'):9.1f} {med(framework, 'step_ms'):9.2f}"
            f" {med(framework, 'first_step_s'):13.2f} {med(framework, 'import_s'):9.2f}"
        )
    ratios = [j["steps_per_s"] / m["steps_per_s"] for j, m in zip(runs["jisu"], runs["mindspore"])]
    print(
        f"jisu / MindSpore steps/s: median {statistics.median(ratios):.2f}x "
        f"(rounds {', '.join(f'{r:.2f}' for r in ratios)})"
    )


if __name__ == "__main__":
    main()
