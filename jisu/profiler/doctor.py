"""``jisu doctor``: run a user's pipeline or training for a bounded time, measure it, and say
which lever to pull first, with the numbers and the change to make.

``--pipeline module:function`` names a function returning a jisu dataset; ``--train
module:function`` one returning ``(model, dataset)``. ``module`` is an importable module or
a path to a ``.py`` file.

A run that measures both the pipeline and the training ends with one verdict
(:func:`final_verdict`): the training's, with what the pipeline measured alone says about it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import cloudpickle

from ..dataset import config
from .measure import _first, measure_graph_mode, measure_precision
from .training import TrainingProfiler

__all__ = [
    "diagnose_pipeline",
    "diagnose_training",
    "final_verdict",
    "load_callable",
    "measure_graph_mode",
    "measure_precision",
    "pipeline_from",
    "pipeline_text",
    "relate",
    "training_from",
]

#: the shortest time ``diagnose_pipeline`` reads a pipeline for, by default: long enough for
#: the output queue to fill or drain (its start-up alone can take a tenth of a second)
MIN_SECONDS = 2.0
#: what ``jisu doctor --train`` says before it times compiled steps (a terminal or a log)
COMPILING = (
    "timing copies of the model at two AMP levels and eager against compiled after training "
    "(torch.compile: seconds with a warm compile cache, a minute or more on a CPU without one; "
    "--skip-graph-mode skips it)"
)
_OPS_SHOWN = 5  # the costliest ops of a stage listed under it


def load_callable(spec: str) -> Any:
    """``module:function`` or ``path/to/file.py:function`` -> the function.

    A file's folder goes first on ``sys.path`` (as ``python path/to/file.py`` does) so that
    the file can import the modules next to it. It stays there: the function runs after this
    returns, and may import its siblings only then.
    """
    module_name, sep, function = spec.rpartition(":")
    if not sep or not module_name or not function:
        raise ValueError(f"doctor: expected module:function or file.py:function. Received {spec!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"doctor: no such file: {path}")
        folder = os.path.dirname(path)
        if not sys.path or sys.path[0] != folder:
            sys.path.insert(0, folder)
        name = f"jisu_doctor_{os.path.splitext(os.path.basename(path))[0]}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
        # Worker processes cannot import it by this name: its functions travel by value.
        cloudpickle.register_pickle_by_value(module)
    else:
        module = importlib.import_module(module_name)
    target = getattr(module, function, None)
    if not callable(target):
        raise AttributeError(f"doctor: {module_name} has no function {function!r}")
    return target


def _described(value: Any) -> str:
    """What a user's function returned, for an error message: its repr (at most 80
    characters) and its type."""
    text = repr(value)
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"{text} (of type {type(value).__name__})"


def pipeline_from(spec: str) -> Any:
    """Call the ``--pipeline`` function ``spec`` names; returns the jisu dataset it returns.

    Raises:
        TypeError: it returned anything but a jisu dataset (a number, ``None``, a torch
            ``DataLoader``): naming what it returned, instead of measuring nothing.
    """
    from ..dataset.core.node import Dataset

    dataset = load_callable(spec)()
    if not isinstance(dataset, Dataset):
        raise TypeError(
            f"doctor: --pipeline {spec} must return a jisu dataset (a jisu.dataset.Dataset, "
            f"such as ds.NumpySlicesDataset(...).batch(32)); it returned {_described(dataset)}"
        )
    return dataset


def training_from(spec: str) -> tuple[Any, Any]:
    """Call the ``--train`` function ``spec`` names; returns its ``(model, dataset)``.

    The dataset may be a jisu dataset or a re-iterable of batches (a list, a torch
    ``DataLoader``): each of the profiled epochs iterates it anew, so a one-shot iterator (a
    generator) would train its first epoch only. The model is checked where it is trained
    (:func:`diagnose_training`).

    Raises:
        TypeError: it returned something else than a pair, or the pair's dataset is none of
            the above, naming what it returned.
    """
    from ..dataset.core.node import Dataset

    result = load_callable(spec)()
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(
            f"doctor: --train {spec} must return (model, dataset); it returned {_described(result)}"
        )
    model, dataset = result
    reiterable = isinstance(dataset, Iterable) and not isinstance(
        dataset, (Iterator, str, bytes, dict)
    )
    if not isinstance(dataset, Dataset) and not reiterable:
        raise TypeError(
            f"doctor: --train {spec} must return (model, dataset) with a jisu dataset or a "
            "re-iterable of batches (a list, a DataLoader; not a generator, which runs out "
            f"after one epoch); its dataset is {_described(dataset)}"
        )
    return model, dataset


# ---------------------------------------------------------------------------- units


def stage_unit(stage: dict[str, Any]) -> str:
    """What one of a stage's output "rows" is: "batch" or "row".

    A stage summary may say so itself (a ``unit`` key, "batch" or "row"); otherwise a stage
    named ``batch#N`` outputs batches (its "rows" are batches: maps fused into a batch run in
    it) and any other stage rows."""
    unit = stage.get("unit")
    if unit:
        return {"batches": "batch", "rows": "row"}.get(unit, unit)
    return "batch" if str(stage.get("stage", "")).startswith("batch") else "row"


def plural(unit: str) -> str:
    """The plural of a unit: batch -> batches, row -> rows."""
    return unit + ("es" if unit.endswith(("s", "x", "ch", "sh")) else "s")


def format_bytes(count: float) -> str:
    """A byte count with a binary unit that keeps it readable: 512 B, 3.5 KiB, 1.2 MiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def _yields_batches(dataset: Any) -> bool:
    """Whether ``dataset``'s items are batches: a ``batch`` op anywhere in its tree."""
    from ..dataset.ops.batch import BatchDataset

    stack = [dataset]
    while stack:
        node = stack.pop()
        if isinstance(node, BatchDataset):
            return True
        stack.extend(getattr(node, "children", ()))
    return False


# ---------------------------------------------------------------------------- measuring


def diagnose_pipeline(
    dataset: Any,
    batches: int = 50,
    seconds: float = 30.0,
    min_seconds: float = MIN_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Iterate ``dataset`` with the profiler on; returns ``iterator.profile()``'s report with
    ``items`` (batches read), ``items_per_s`` and ``item_unit`` ("batch" or "row") added.

    Reads until it has at least ``batches`` items *and* ``min_seconds`` have passed, or
    ``seconds`` have passed, whichever comes first (epochs follow one another as needed). The
    minimum time is there because a fast pipeline delivers 50 batches in a few hundredths of
    a second, mostly its start-up, too short to see whether its output queue stays full.
    ``clock`` is read once at the start and once after each item (a test gives a fake one).
    """
    previous = config.get_enable_profiler()
    config.set_enable_profiler(True)
    try:
        iterator = dataset.create_tuple_iterator(num_epochs=-1, output_numpy=True)
    finally:
        config.set_enable_profiler(previous)
    begin = end = clock()
    count = 0

    def enough() -> bool:
        elapsed = end - begin
        return elapsed >= seconds or (count >= batches and elapsed >= min_seconds)

    try:
        while True:
            before = count
            for _ in iterator:  # one epoch (num_epochs=-1: the next loop reads the next)
                count += 1
                end = clock()
                if enough():
                    break
            if enough() or count == before:  # done, or an empty epoch: no more to read
                break
        report = iterator.profile()
        report["plan"] = iterator.plan().explain()  # what ran: the stages and their ops
    finally:
        iterator.close()
    report["items"] = count
    report["items_per_s"] = count / max(end - begin, 1e-9)
    report["item_unit"] = "batch" if _yields_batches(dataset) else "row"
    return report


def diagnose_training(
    model: Any,
    dataset: Any,
    steps: int = 20,
    sink: bool = False,
    precision_steps: int = 4,
    graph_steps: int = 4,
    announce: Callable[[str], None] | None = None,
) -> TrainingProfiler:
    """Train ``model`` for 3 short epochs of ``steps`` batches (the first is warm-up).

    Then, with ``precision_steps`` > 0, times copies of the model at O0 and at its own AMP
    level (O2 when it runs at O0; :func:`measure_precision`), and with ``graph_steps`` > 0,
    eager and compiled (:func:`measure_graph_mode`; compiling takes seconds to minutes on a
    CPU), so that the advice on precision and on graph mode follows from this machine's
    numbers. A failure there is a warning, not an error; graph mode not measured (turned
    off, too little data, a failure) is said so in the figures and the advice. ``announce``
    is given :data:`COMPILING` before those minutes, once the training ran a step.

    Raises:
        TypeError: ``model`` is not a :class:`jisu.Model`.
    """
    from ..train.model import Model

    if not isinstance(model, Model):
        raise TypeError(
            "doctor: --train must return (model, dataset) with a jisu.Model (Model(network, "
            f"loss_fn, optimizer)); its model is {_described(model)}"
        )
    profiler = TrainingProfiler(verbose=False)
    model.train(3, _first(dataset, steps), callbacks=[profiler], dataset_sink_mode=sink)
    if announce is not None and graph_steps > 0 and profiler.summary().steps > 0:
        announce(COMPILING)
    if precision_steps > 0:
        try:
            profiler.precision = measure_precision(model, dataset, precision_steps)
        except Exception as exc:  # an extra measurement: the figures above stand without it
            warnings.warn(
                f"jisu doctor: could not time copies of the model at another AMP level "
                f"({type(exc).__name__}: {exc}); the precision advice is not measured",
                stacklevel=2,
            )
    if graph_steps <= 0:
        profiler.graph_note = "turned off"
        return profiler
    try:
        profiler.graph = measure_graph_mode(model, dataset, graph_steps)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        profiler.graph_note = f"the measurement failed: {type(exc).__name__}: {first}"
        warnings.warn(
            f"jisu doctor: could not time eager and compiled copies of the model "
            f"({type(exc).__name__}: {first}); the graph-mode advice is not measured",
            stacklevel=2,
        )
    else:
        if profiler.graph is None:
            profiler.graph_note = "the data set has fewer than 2 batches"
    return profiler


# ---------------------------------------------------------------------------- judging


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


def final_verdict(pipeline: dict[str, Any] | None, training: TrainingProfiler | None) -> str:
    """The one verdict of a doctor run, "what limits it — what to change", for the terminal
    and the report alike.

    A pipeline alone: its bottleneck. A training alone: its verdict. Both (after
    :func:`relate`): the training's verdict, which says whether the model waits for data;
    the pipeline then either names the stage to change (input-bound), or comes second: it is
    not the lever when it delivers well over what the training uses, the next one when not.
    """
    if training is None:
        if pipeline is None:
            return "nothing measured"
        return f"bottleneck {pipeline['bottleneck']} — {pipeline['suggestion']}"
    verdict = f"{training.verdict} — {training.advice}"
    if pipeline is None:
        return verdict
    stage = pipeline["bottleneck"] not in ("none", "consumer")
    if training.verdict == "input-bound" and stage:
        waited = training.summary().shares()["data_wait"]
        return (
            f"input-bound — the model waited for data {waited:.0%} of the time and the "
            f"pipeline's bottleneck is {pipeline['bottleneck']}: {pipeline['suggestion']}"
        )
    supply, demand = pipeline.get("samples_per_s"), pipeline.get("training_samples_per_s")
    if supply is None or demand is None:  # not related: both as measured
        return f"{verdict}; pipeline bottleneck {pipeline['bottleneck']}: {pipeline['suggestion']}"
    ratio = supply / max(demand, 1e-9)
    alone = (
        f"measured alone, the pipeline delivers {supply:.0f} samples/s, {ratio:.1f}x the "
        f"{demand:.0f} samples/s the training uses"
    )
    if training.verdict == "input-bound":  # yet the pipeline alone keeps up
        return f"{verdict} ({alone}: it slows down next to the training)"
    if pipeline["bottleneck"] == "none":
        return f"{verdict}; the input pipeline is not the lever ({alone})"
    where = f" (bottleneck {pipeline['bottleneck']}: {pipeline['suggestion']})" if stage else ""
    return (
        f"{verdict}; then the input pipeline: {alone}, so a faster step would soon wait for "
        f"it{where}"
    )


def pipeline_text(report: dict[str, Any], verdict: bool = True) -> str:
    """The pipeline's figures as text, each stage in its own unit (rows, or batches for a
    batch stage), and (with ``verdict``) its verdict line."""
    item = report.get("item_unit", "batch")
    lines = [f"pipeline: {report['items']} {plural(item)}, {report['items_per_s']:.1f} "
             f"{plural(item)}/s"]  # fmt: skip
    if report.get("plan"):
        lines.append("  " + report["plan"].replace("\n", "\n  "))
    for s in report["stages"]:
        unit = stage_unit(s)
        lines.append(
            f"  stage {s['stage']:<10} workers {s['workers']:>2}  {s['rows_per_s']:8.1f} "
            f"{plural(unit)}/s  {s['ms_per_row']:7.2f} ms/{unit}  busy {s['busy_share']:4.0%}  "
            f"queue empty {s['queue_empty_share']:4.0%}  slots full "
            f"{s['queue_full_share']:4.0%}  {format_bytes(s['bytes_per_row']):>10}/{unit}"
        )
        if s.get("title"):
            lines.append(f"    runs {s['title']}")
        for op in s.get("ops", [])[:_OPS_SHOWN]:
            lines.append(
                f"    {op['share']:4.0%} of its work  {op['ms_per_call']:8.3f} ms/call  {op['op']}"
            )
    out = report["output"]
    lines.append(
        f"  consumer waited {out['consumer_wait_share']:.0%} of the time "
        f"(output queue empty at {out['queue_empty_share']:.0%} of its reads)"
    )
    storage = out.get("storage") or {}
    if storage.get("requests"):
        lines.append(
            f"  object storage: {storage['requests']} requests, "
            f"{format_bytes(storage['bytes'])}, {storage['request_seconds']:.1f} s of requests "
            f"({storage['request_seconds'] / storage['requests'] * 1e3:.1f} ms each)"
        )
    if "samples_per_s" in report:
        lines.append(
            f"  alone it delivers {report['samples_per_s']:.0f} samples/s; the training used "
            f"{report['training_samples_per_s']:.0f} samples/s"
        )
    if verdict:
        lines.append(f"verdict: bottleneck {report['bottleneck']} — {report['suggestion']}")
    return "\n".join(lines)
