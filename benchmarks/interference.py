"""Does jisu's pipeline, running in the training process, slow a Python-heavy train step?

SPDL's authors measured a loader's threads in the training process halving a GPU job's step
rate through the GIL. Here a step that is mostly Python dispatch (an eager MLP of 12 small
layers, batch 32, SGD, one torch thread) runs:

- **alone**, over batches made beforehand: the reference;
- **fed**: each step takes its batch from the pipeline, as ``Model.train`` does (the pipeline
  reads ahead on its own threads and works only as far as its prefetch queue allows);
- **beside a flat-out pipeline**: over the batches made beforehand, while a thread of the same
  process drains the pipeline as fast as it can (the worst case: a pipeline that never waits).

Pipelines (in-memory rows, batch 32, then one map call per batch with one worker, so that one
of two cores is left to the step): NumPy work (releases the GIL), pure-Python work in a thread
(holds it, ~0.6 ms per batch), the same Python work in a worker process
(``python_multiprocessing=True``), the thread map with the whole pipeline in a child process
(``config.set_pipeline_process(True)``: the training process only takes batches from shared
memory), and, fed, a ``DataLoader(num_workers=1)`` doing the same
Python work per batch in its worker, for reference. Each pipeline alone produces batches faster
than the step takes them (printed), so a fed step slower than alone is slowed by the pipeline.
Ratios are the step's rate over its rate alone in the same round,
medians of ``--rounds`` interleaved rounds.

Usage: python benchmarks/interference.py [--rounds 3] [--steps 600] [--only "pipeline process"]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import threading
import time

import numpy as np
import torch
from torch import nn

import jisu
import jisu.dataset as ds

BATCH, FEATURES = 32, 64


def network() -> nn.Module:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(12):
        layers += [nn.Linear(FEATURES, FEATURES), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(FEATURES, 10))


def numpy_work(x: np.ndarray) -> np.ndarray:
    """NumPy work on a batch (the GIL released inside the ufuncs)."""
    for _ in range(5):
        x = np.tanh(x * 1.01 + 0.01)
    return x.astype(np.float32)


def python_work(x: np.ndarray) -> np.ndarray:
    """Pure-Python work on a batch, holding the GIL (~0.6 ms on this machine)."""
    values = x.ravel().tolist()
    acc = 0.0
    for _ in range(4):
        for v in values:
            acc = acc * 0.999 + v
    return (x + np.float32(acc * 1e-9)).astype(np.float32)


def rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, FEATURES)).astype(np.float32)
    return x, (x[:, :10].argmax(1)).astype(np.int64)


def pipeline(kind: str, n: int) -> ds.Dataset:
    x, y = rows(n)
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False)
    fn = numpy_work if kind.startswith("numpy") else python_work
    data = data.batch(BATCH, drop_remainder=True)  # one call of the work per batch
    return data.map(
        fn, input_columns="x", num_parallel_workers=1,
        python_multiprocessing=kind == "python-process",
    )  # fmt: skip


class PythonBatches(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        self.x, self.y = rows(n)

    def __len__(self) -> int:
        return len(self.x) // BATCH

    def __getitem__(self, i: int):  # the work on the batch, in the worker (batch_size=None)
        rows = slice(i * BATCH, (i + 1) * BATCH)
        return torch.from_numpy(python_work(self.x[rows])), torch.from_numpy(self.y[rows])


def train(batches, steps: int) -> float:
    """Steps/s of the train step over ``steps`` batches from ``batches`` (an iterator)."""
    net = network()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    begin = None
    for i in range(steps + 20):
        if i == 20:  # after a warm-up
            begin = time.perf_counter()
        x, y = next(batches)
        opt.zero_grad()
        loss_fn(net(torch.as_tensor(x)), torch.as_tensor(y)).backward()
        opt.step()
    return steps / (time.perf_counter() - begin)


def premade(steps: int):
    x, y = rows(BATCH * 8)
    made = [(torch.from_numpy(x[i::8]), torch.from_numpy(y[i::8])) for i in range(8)]
    i = 0
    while True:
        yield made[i % 8]
        i += 1


def iterate(kind: str, data: ds.Dataset):
    """The pipeline's iterator; ``-child`` kinds run it in a pipeline process."""
    ds.config.set_pipeline_process(kind.endswith("-child"))
    try:
        return data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    finally:
        ds.config.set_pipeline_process(False)


def fed(kind: str, steps: int) -> float:
    if kind == "dataloader":
        loader = torch.utils.data.DataLoader(
            PythonBatches(BATCH * (steps + 40)), batch_size=None, num_workers=1
        )
        return train(iter(loader), steps)
    data = pipeline(kind, BATCH * (steps + 40))
    iterator = iterate(kind, data)
    try:
        return train(iter(iterator), steps)
    finally:
        iterator.stop()


def produce(kind: str, batches: int = 600) -> float:
    """Batches/s of the pipeline alone (after 50)."""
    iterator = iterate(kind, pipeline(kind, BATCH * (batches + 50)))
    begin = None
    for i, _ in enumerate(iterator):
        if i == 50:
            begin = time.perf_counter()
    iterator.stop()
    return batches / (time.perf_counter() - begin)


def beside(kind: str, steps: int) -> float:
    stop = threading.Event()
    data = pipeline(kind, BATCH * 200)

    def drain() -> None:
        while not stop.is_set():
            iterator = iterate(kind, data)
            for _ in iterator:
                if stop.is_set():
                    break
            iterator.stop()

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    time.sleep(0.5)  # the pipeline at full speed before the step starts
    try:
        return train(premade(steps), steps)
    finally:
        stop.set()
        thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--only", nargs="*", help="variants whose name contains one of these")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"jisu {jisu.__version__}, torch {torch.__version__}, python "
        f"{platform.python_version()}, 1 torch thread"
    )
    variants = {
        "fed: NumPy map (thread)": lambda: fed("numpy", args.steps),
        "fed: Python map (thread)": lambda: fed("python", args.steps),
        "fed: Python map (process)": lambda: fed("python-process", args.steps),
        "fed: Python map, pipeline process": lambda: fed("python-child", args.steps),
        "fed: NumPy map, pipeline process": lambda: fed("numpy-child", args.steps),
        "fed: DataLoader(num_workers=1), Python": lambda: fed("dataloader", args.steps),
        "beside: NumPy map (thread), flat out": lambda: beside("numpy", args.steps),
        "beside: Python map (thread), flat out": lambda: beside("python", args.steps),
        "beside: Python map (process), flat out": lambda: beside("python-process", args.steps),
        "beside: Python map, pipeline process": lambda: beside("python-child", args.steps),
        "beside: NumPy map, pipeline process": lambda: beside("numpy-child", args.steps),
    }
    if args.only:
        variants = {k: v for k, v in variants.items() if any(o in k for o in args.only)}
    for kind in ("numpy", "python", "python-process", "python-child"):
        print(f"pipeline alone, {kind}: {produce(kind):.0f} batches/s")
    ratios: dict[str, list[float]] = {name: [] for name in variants}
    alone_rates = []
    for _ in range(args.rounds):
        for name, measure in variants.items():
            alone = train(premade(args.steps), args.steps)  # next to each variant: same load
            alone_rates.append(alone)
            ratios[name].append(measure() / alone)
    print(f"\nthe step alone: {statistics.median(alone_rates):.0f} steps/s (median)")
    print("the step's rate against alone (median; the rounds):")
    for name, r in ratios.items():
        spread = ", ".join(f"{v:.2f}" for v in r)
        print(f"  {name:<42} {statistics.median(r):.2f}x   ({spread})")


if __name__ == "__main__":
    main()
