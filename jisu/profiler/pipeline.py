"""What limits a pipeline, and what to change: the verdict of ``iterator.profile()``.

The stage figures come from the engine's statistics (:mod:`jisu.dataset.engine.stats`); the op
figures (time per op inside a fused stage,
from a sample of the rows) are joined to the stages through the :mod:`.plan`, so that the
verdict names the op that costs most, its share of its stage, and a change for that op the
user can make without reading jisu's source. :func:`bottleneck` is a pure function of those
figures (tested on fixed numbers).
"""

from __future__ import annotations

from typing import Any

from ..dataset.core.cpus import available_cpus
from ..dataset.core.operation import op_name
from ..dataset.engine.plan import Plan, explicit_workers
from ..dataset.engine.stats import OpTimes

_ELEMENTWISE_TAIL = {"Rescale", "Normalize", "HWC2CHW", "TypeCast"}
_PARTS = {
    "read": "read",
    "assembly": "batch assembly",
    "gather": "gather the rows",
    "wait": "workers waiting for its limit",
}


def _is_python(op: Any) -> bool:
    """Whether ``op`` is the user's Python code rather than one of jisu's ops."""
    module = getattr(op, "__module__", None) or type(op).__module__
    return not module.startswith("jisu.")


def _describe(plan: Plan, node: Any, part: Any) -> dict[str, Any]:
    """The figures' static side for one op: its name and what the advice needs to know."""
    label = f"{node.op_name}#{plan.ids.get(id(node), '?')}"
    if isinstance(part, int):  # a map's operation (a step: fused Rescale/Normalize count once)
        op = node._steps[part][1]
        name = op_name(op)
        return {
            "op": f"{label}: {name}",
            "node": label,
            "name": name,
            "python": _is_python(op),
            "elementwise": type(op).__name__ in _ELEMENTWISE_TAIL,
            "explicit_workers": explicit_workers(node),
            "kind": "map",
        }
    return {
        "op": f"{label}: {_PARTS.get(part, part)}",
        "node": label,
        "name": _PARTS.get(part, part),
        "python": part == "read" and node.parallelism.serial_reads,
        "elementwise": False,
        "explicit_workers": explicit_workers(node),
        "kind": {"read": "read", "wait": "wait"}.get(part, "batch"),
    }


def attach_op_figures(stages: list[dict[str, Any]], plan: Plan, times: OpTimes) -> None:
    """Add to each stage summary its ``ops`` (most costly first: ``op``, ``calls``,
    ``ms_per_call``, ``share`` of the stage's work, ``limit``) and its ``unit`` (``batch`` or
    ``row``: what the stage's items are)."""
    by_name = {s["stage"]: s for s in stages}
    for stage in plan.stages:
        summary = by_name.get(stage.name)
        if summary is None:
            continue
        summary["unit"] = "batch" if hasattr(stage.owner, "batch_size") else "row"
        summary["title"] = plan.title(stage)
        summary["processes"] = stage.processes
        summary.setdefault("ops", [])
    nodes = {plan.ids[id(n)]: n for s in plan.stages for n in s.ops}
    for (key, part), (seconds, calls) in list(times.totals.items()):
        node = nodes.get(key)
        stage = plan.stage_of_op(node) if node is not None else None
        summary = by_name.get(stage.name) if stage is not None else None
        if summary is None:
            continue
        figures = _describe(plan, node, part)
        work = summary.get("compute_s", 0.0)
        figures.update(
            calls=int(calls),
            ms_per_call=1000 * seconds / max(calls, 1),
            share=min(1.0, seconds / work) if work > 0 else 0.0,
            limit=stage.limits.get(id(node)),
            stage_workers=stage.workers,
        )
        summary["ops"].append(figures)
    for summary in stages:
        summary.get("ops", []).sort(key=lambda o: -o["share"])


def _op_change(op: dict[str, Any], stage: dict[str, Any], cpus: int) -> str:
    """The change to make for the op that costs most in a busy stage."""
    node, workers = op["node"], stage["workers"]
    if op["limit"] is not None:
        what = (
            f"its num_parallel_workers={op['explicit_workers']}"
            if op["explicit_workers"]
            else "the serial reads of a Python source"
        )
        return (
            f"{what} lets only {op['limit']} of the stage's {workers} workers run {node} at "
            f"once, so the others wait: raise num_parallel_workers on {node} if its code is "
            "thread-safe"
        )
    if op["kind"] == "read" and op["python"]:
        return (
            "the Python source is read one row at a time: give it num_parallel_workers if "
            "its __getitem__ is thread-safe, or pack the data into record files (jisu convert)"
        )
    if op["elementwise"]:
        return (
            f"move {op['name']} after batch (it then runs once per batch, vectorized) or "
            "run it on the device with map(..., offload=True)"
        )
    if op["python"] and not stage.get("processes"):
        return (
            f"{op['name']} is Python code: if it is pure Python (it holds the GIL), more "
            f"threads do not help — use python_multiprocessing=True on {node}; if it calls "
            f"NumPy/OpenCV, raise num_parallel_workers on {node}"
            + (f" (up to {cpus} CPUs)" if workers < cpus else "")
        )
    if workers < cpus:
        return f"raise num_parallel_workers on {node} (up to {cpus} CPUs)"
    return (
        f"the stage already has a worker per CPU: make {op['name']} cheaper (a smaller "
        "input, a cheaper op, decoding at a reduced size)"
    )


def bottleneck(stages: list[dict[str, Any]], output: dict[str, Any]) -> dict[str, Any]:
    """The stage that limits the pipeline, the op in it that costs most, and what to change.

    Returns ``bottleneck`` (a stage name, ``consumer`` or ``source``), ``suggestion`` (one
    sentence a user can act on) and, when a stage's ops were timed, ``op`` and its ``share``.
    """
    if output["consumer_wait_share"] < 0.05:
        return {
            "bottleneck": "consumer",
            "suggestion": (
                f"the pipeline keeps up: its consumer waited only "
                f"{output['consumer_wait_share']:.0%} of the time for data; speed up the "
                "consumer (the training step) instead"
            ),
        }
    if not stages:
        return {
            "bottleneck": "source",
            "suggestion": "the pipeline runs on one thread (no parallel stage); "
            "set num_parallel_workers on its map or batch",
        }
    top = max(stages, key=lambda s: s["busy_share"])
    cpus = available_cpus()
    unit = top.get("unit", "row")
    if top["busy_share"] >= 0.7:
        title = f" ({top['title']})" if top.get("title") else ""
        busy = (
            f"stage '{top['stage']}'{title} is busy {top['busy_share']:.0%} of the time with "
            f"{top['workers']} worker(s) ({top['ms_per_row']:.2f} ms per {unit})"
        )
        ops = top.get("ops") or []
        if ops:
            op = ops[0]
            return {
                "bottleneck": top["stage"],
                "op": op["op"],
                "share": op["share"],
                "suggestion": (
                    f"{busy}; {op['op']} takes {op['share']:.0%} of its work "
                    f"({op['ms_per_call']:.3f} ms per call): {_op_change(op, top, cpus)}"
                ),
            }
        if top["workers"] < cpus:
            change = (
                f"raise num_parallel_workers of the ops in it (up to {cpus} CPUs); use "
                "python_multiprocessing=True for Python code that holds the GIL"
            )
        else:
            change = (
                "it already has a worker per CPU: make its ops cheaper (elementwise ops after "
                "batch, map(..., offload=True) for the normalize tail, record shards instead "
                "of many small files)"
            )
        return {"bottleneck": top["stage"], "suggestion": f"{busy}: {change}"}
    return {
        "bottleneck": "source",
        "suggestion": (
            f"no stage is busy (the busiest, '{top['stage']}', {top['busy_share']:.0%}) but the "
            "consumer waits: the rows come too slowly from the source; a Python generator runs "
            "on one thread — give it __getitem__ (random access) so that workers can read in "
            "parallel, or pack the data into record files"
        ),
    }


def analyse_pipeline(
    stages: list[dict[str, Any]], output: dict[str, Any], plan: Plan, times: OpTimes | None
) -> dict[str, Any]:
    """The profile of an iterator (installed as the engine's profile analysis): the stage
    and output figures, each stage's ops joined in, the bottleneck and a suggestion."""
    if times is not None:
        attach_op_figures(stages, plan, times)
    return {"stages": stages, "output": output, **bottleneck(stages, output)}
