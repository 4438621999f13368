"""``jisu doctor``: run a user's pipeline or training for a bounded time, measure it, and say
which lever to pull first, with the numbers and the change to make.

``--pipeline module:function`` names a function returning a jisu dataset; ``--train
module:function`` one returning ``(model, dataset)``. ``module`` is an importable module or
a path to a ``.py`` file.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import os
import sys
import time
from typing import Any

from ..dataset import config
from .training import TrainingProfiler


def load_callable(spec: str) -> Any:
    """``module:function`` or ``path/to/file.py:function`` -> the function."""
    module_name, sep, function = spec.rpartition(":")
    if not sep or not module_name or not function:
        raise ValueError(f"doctor: expected module:function or file.py:function. Received {spec!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"doctor: no such file: {path}")
        name = f"jisu_doctor_{os.path.splitext(os.path.basename(path))[0]}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # so that its functions pickle (worker processes)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    target = getattr(module, function, None)
    if not callable(target):
        raise AttributeError(f"doctor: {module_name} has no function {function!r}")
    return target


def diagnose_pipeline(dataset: Any, batches: int = 50, seconds: float = 30.0) -> dict[str, Any]:
    """Iterate ``dataset`` with the profiler on for up to ``batches`` items or ``seconds``."""
    previous = config.get_enable_profiler()
    config.set_enable_profiler(True)
    try:
        iterator = dataset.create_tuple_iterator(num_epochs=-1, output_numpy=True)
    finally:
        config.set_enable_profiler(previous)
    begin, count = time.perf_counter(), 0
    try:
        for _ in iterator:
            count += 1
            if count >= batches or time.perf_counter() - begin > seconds:
                break
        report = iterator.profile()
    finally:
        iterator.close()
    report["items"] = count
    report["items_per_s"] = count / max(time.perf_counter() - begin, 1e-9)
    return report


class _FirstBatches:
    """The first ``count`` batches of ``dataset``, as a re-iterable (one "epoch" each)."""

    def __init__(self, dataset: Any, count: int) -> None:
        self.dataset, self.count = dataset, count

    def __iter__(self):
        return itertools.islice(iter(self.dataset), self.count)

    def __len__(self) -> int:
        return self.count


def diagnose_training(
    model: Any, dataset: Any, steps: int = 20, sink: bool = False
) -> TrainingProfiler:
    """Train ``model`` for 3 short epochs of ``steps`` batches (the first is warm-up)."""
    from ..dataset.datasets import Dataset

    data = dataset.take(steps) if isinstance(dataset, Dataset) else _FirstBatches(dataset, steps)
    profiler = TrainingProfiler(verbose=False)
    model.train(3, data, callbacks=[profiler], dataset_sink_mode=sink)
    return profiler


def relate(pipeline: dict[str, Any], training: TrainingProfiler, batch_size: int) -> None:
    """Judge the pipeline against what the training consumes (in place): a pipeline that
    alone delivers well over the training's rate is not the thing to change."""
    supply = pipeline["items_per_s"] * batch_size
    summary = training.summary()
    demand = summary.samples / max(summary.wall, 1e-9)
    pipeline["samples_per_s"], pipeline["training_samples_per_s"] = supply, demand
    if supply >= 1.2 * demand and training.verdict != "input-bound":
        pipeline["bottleneck"] = "none"
        pipeline["suggestion"] = (
            f"alone it delivers {supply:.0f} samples/s, {supply / max(demand, 1e-9):.1f}x "
            f"the {demand:.0f} samples/s the training uses: no change needed here "
            f"(its busiest stage: {pipeline['suggestion']})"
        )


def pipeline_text(report: dict[str, Any]) -> str:
    lines = [f"pipeline: {report['items']} batches, {report['items_per_s']:.1f} batches/s"]
    for s in report["stages"]:
        lines.append(
            f"  stage {s['stage']:<10} workers {s['workers']:>2}  {s['rows_per_s']:8.1f} rows/s  "
            f"{s['ms_per_row']:7.2f} ms/row  busy {s['busy_share']:4.0%}  queue empty "
            f"{s['queue_empty_share']:4.0%}  slots full {s['queue_full_share']:4.0%}  "
            f"{s['bytes_per_row']:10,.0f} bytes/row"
        )
    out = report["output"]
    lines.append(
        f"  consumer waited {out['consumer_wait_share']:.0%} of the time "
        f"(output queue empty at {out['queue_empty_share']:.0%} of its reads)"
    )
    lines.append(f"verdict: bottleneck {report['bottleneck']} — {report['suggestion']}")
    return "\n".join(lines)
