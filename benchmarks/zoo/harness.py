"""Try projects of MindSpore's model zoo on jisu, level by level, and tell what stops each one.

For each project (a driver ``drivers/<name>.py``), a child process copies the project from the
local snapshot into a temporary directory, swaps ``mindspore`` for ``jisu`` in its imports,
forces its device target to CPU and runs the driver's levels: ``imports`` -> ``forward`` ->
``train`` -> ``reload`` -> ``export`` (see ``runner.py``). The zoo's code is never copied into
jisu's repository. ::

    python benchmarks/zoo/harness.py --zoo /work/zoo/mindspore-ai+models --all --json results.json
    python benchmarks/zoo/harness.py --zoo ... resnet lstm --verbose   # some projects
    python benchmarks/zoo/harness.py --zoo ... --all --graph           # train in GRAPH_MODE

prints a table: project x level reached, the losses of the train level, and the first blocker
(exception, message, innermost frame in jisu or the project, and the area of jisu it points at).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEVELS = ("imports", "forward", "train", "reload", "export")

#: jisu module prefix -> the area a missing name belongs to (the status file's owners)
AREAS = (
    ("jisu.ops.operations", "ops.operations"),
    ("jisu.ops.functional", "functional+composite"),
    ("jisu.ops.composite", "functional+composite"),
    ("jisu.ops", "functional+composite"),
    ("jisu.numpy", "numpy"),
    ("jisu.nn", "nn layer"),
    ("jisu.common.initializer", "paths"),
    ("jisu.common", "paths"),
    ("jisu.dataset", "dataset"),
    ("jisu.train", "train"),
    ("jisu.communication", "paths"),
    ("jisu.context", "context"),
    ("jisu", "paths"),
)
_FILE_AREAS = (
    ("jisu/ops/operations", "ops.operations"),
    ("jisu/ops/", "functional+composite"),
    ("jisu/numpy", "numpy"),
    ("jisu/nn/", "nn layer"),
    ("jisu/common", "Tensor/common"),
    ("jisu/dataset", "dataset"),
    ("jisu/train", "train"),
    ("jisu/amp", "train"),
    ("jisu/context", "context"),
)


#: MindSpore 2.0's public ``nn.Cell`` methods: a project's cell missing one is a Cell gap
CELL_METHODS = set(
    [
        "add_flags",
        "add_flags_recursive",
        "apply",
        "auto_cast_inputs",
        "cast_inputs",
        "cast_param",
        "cells",
        "cells_and_names",
        "check_names",
        "cls_name",
        "compile",
        "compile_and_run",
        "construct",
        "extend_repr",
        "flatten_weights",
        "get_flags",
        "get_inputs",
        "get_mixed_precision_type",
        "get_parameters",
        "get_scope",
        "init_parameters_data",
        "insert_child_to_cell",
        "insert_param_to_cell",
        "name_cells",
        "parameters_and_names",
        "parameters_dict",
        "param_prefix",
        "recompute",
        "register_backward_hook",
        "register_forward_hook",
        "register_forward_pre_hook",
        "remove_redundant_parameters",
        "run_construct",
        "set_boost",
        "set_broadcast_flag",
        "set_comm_fusion",
        "set_data_parallel",
        "set_grad",
        "set_inputs",
        "set_jit_config",
        "set_mixed_precision_type",
        "set_param_fl",
        "set_param_ps",
        "set_train",
        "shard",
        "to_float",
        "trainable_params",
        "untrainable_params",
        "update_cell_prefix",
        "update_cell_type",
        "update_parameters_name",
    ]
)


def drivers(folder: str | None = None) -> list[str]:
    """The names of every driver in ``folder`` (default: drivers/ here), sorted."""
    path = Path(folder) if folder else HERE / "drivers"
    return sorted(p.stem for p in path.glob("*.py") if not p.stem.startswith("_"))


def area(error: dict) -> str:
    """The area of jisu a failure points at: from a missing module/attribute name, else the
    innermost jisu frame, else "project/driver"."""
    message = error.get("message", "")
    if error.get("level") == "export" and message.startswith("export:"):
        return "export"  # the exporter's limit (jisu's export names the network and reason)
    if error.get("area_hint"):
        return error["area_hint"]
    match = re.search(
        r"module '(jisu[\w.]*)' has no attribute|No module named '(jisu[\w.]*)'"
        r"|cannot import name '\w+' from '(jisu[\w.]*)'",
        message,
    )
    if match:
        module = match.group(1) or match.group(2) or match.group(3)
        for prefix, name in AREAS:
            if module == prefix or module.startswith(prefix + "."):
                return name
    if re.search(r"'(Tensor|Parameter)' object has no attribute|Tensor\.\w+", message):
        return "Tensor method"
    match = re.search(r"object has no attribute '(\w+)'", message)
    if match and match.group(1) in CELL_METHODS:
        return "nn layer (Cell method)"
    where = error.get("where") or ""
    for prefix, name in _FILE_AREAS:
        if where.startswith(prefix):
            return name
    if error.get("type") in ("NotFalling", "NonFinite", "Mismatch"):
        return "train"
    if error.get("type") == "NotProvided":
        return "export"
    return "project/driver"


def _last_error(stderr: str) -> str:
    """The exception line and innermost frame of a child's traceback."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    frames = [line.strip() for line in lines if line.strip().startswith('File "')]
    last = lines[-1] if lines else "(no output)"
    return f"{last[:400]}" + (f" @ {frames[-1][:200]}" if frames else "")


def run_one(name: str, args: argparse.Namespace) -> dict:
    """Run one driver in a child process; its JSON result (partial on a timeout)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    cmd = [
        sys.executable,
        str(HERE / "runner.py"),
        "--zoo",
        args.zoo,
        "--project",
        name,
        "--json",
        str(out),
        "--steps",
        str(args.steps),
        "--levels",
        args.levels,
    ]
    cmd += ["--drivers", args.drivers] if args.drivers else []
    cmd += ["--graph"] * args.graph + ["--verbose"] * args.verbose + ["--keep"] * args.keep
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, timeout=args.timeout, capture_output=not args.verbose, text=True)
        crash = proc.returncode != 0 and _last_error(proc.stderr or "")
    except subprocess.TimeoutExpired:
        crash = f"timeout after {args.timeout} s"
    try:
        result = json.loads(out.read_text() or "{}")
    except (OSError, json.JSONDecodeError):
        result = {}
    out.unlink(missing_ok=True)
    result.setdefault("project", name)
    result.setdefault("levels", {})
    result["seconds"] = round(time.perf_counter() - start, 1)
    if crash:
        todo = [lv for lv in LEVELS if lv not in result["levels"]]
        last = next((lv for lv in reversed(LEVELS) if lv in result["levels"]), None)
        hit = last if last and "ok" not in result["levels"][last] else (todo[0] if todo else None)
        if hit:
            result["levels"][hit] = {"ok": False, "error": {"type": "Crash", "message": crash}}
    summarize(result)
    return result


def summarize(result: dict) -> None:
    """Add ``reached`` (the last level passed), ``blocker`` and ``area`` to a result."""
    reached, blocker = "none", None
    for lv in LEVELS:
        record = result["levels"].get(lv)
        if record is None:
            continue
        if record.get("ok"):
            reached = lv
        else:
            blocker = dict(record.get("error") or {}, level=lv)
            break
    result["reached"] = reached
    result["blocker"] = blocker
    result["area"] = area(blocker) if blocker else None


def losses_text(result: dict) -> str:
    losses = (result["levels"].get("train") or {}).get("losses")
    return f"{losses[0]:.4g} -> {losses[-1]:.4g}" if losses else ""


def table(results: list[dict]) -> str:
    """The project x level table, one line a project."""
    lines = [f"{'project':<16} {'reached':<8} {'loss first -> last':<20} {'s':>5}  first blocker"]
    for r in results:
        b = r.get("blocker")
        text = ""
        if b:
            text = f"[{b['level']}] {b.get('type')}: {b.get('message', '')[:110]}"
            if b.get("where"):
                text += f" @ {b['where']}"
            text += f"  ({r.get('area')})"
        graph = (r["levels"].get("train") or {}).get("graph")
        if graph:
            text = f"graph: {graph}; " + text
        lines.append(
            f"{r['project']:<16} {r['reached']:<8} {losses_text(r):<20} {r['seconds']:>5}  {text}"
        )
    return "\n".join(lines)


def markdown(results: list[dict]) -> str:
    """The table as Markdown: project, path, level reached, losses, first blocker and area."""
    lines = [
        "| project | zoo path | reached | train loss (first -> last) | first blocker | area |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        b = r.get("blocker")
        text = ""
        if b:
            text = f"[{b['level']}] {b.get('type')}: {b.get('message', '')[:160]}"
            if b.get("where"):
                text += f" (`{b['where']}`)"
        graph = (r["levels"].get("train") or {}).get("graph")
        if graph:
            text = f"GRAPH_MODE: {graph}. " + text
        text = text.replace("|", "\\|")
        lines.append(
            f"| {r['project']} | {r.get('path', '')} | {r['reached']} | {losses_text(r)} | "
            f"{text} | {r.get('area') or ''} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("projects", nargs="*", help="driver names (see drivers/)")
    parser.add_argument("--zoo", required=True, help="local snapshot of mindspore-ai/models")
    parser.add_argument("--all", action="store_true", help="every driver")
    parser.add_argument("--drivers", help="a folder of your own drivers (default: drivers/ here)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--markdown", help="write the table as Markdown here")
    parser.add_argument(
        "--merge",
        nargs="*",
        default=[],
        help="earlier --json files: their results for projects not run now join the table",
    )
    parser.add_argument("--steps", type=int, default=6, help="train steps (default 6)")
    parser.add_argument("--graph", action="store_true", help="train in GRAPH_MODE")
    parser.add_argument("--levels", default=",".join(LEVELS))
    parser.add_argument("--timeout", type=float, default=300, help="seconds per project")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    parser.add_argument("--verbose", action="store_true", help="show the projects' output")
    args = parser.parse_args()
    names = drivers(args.drivers) if args.all else args.projects
    unknown = sorted(set(names) - set(drivers(args.drivers)))
    if unknown or not (names or args.merge):
        parser.error(f"unknown projects {unknown}; drivers: {', '.join(drivers(args.drivers))}")
    results = []
    for name in names:
        results.append(run_one(name, args))
        print(table(results[-1:]).splitlines()[-1], flush=True)
    ran = {r["project"] for r in results}
    for path in args.merge:
        for r in json.loads(Path(path).read_text()):
            if r["project"] not in ran:
                ran.add(r["project"])
                results.append(r)
    results.sort(key=lambda r: r["project"])
    print()
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    if args.markdown:
        Path(args.markdown).write_text(markdown(results) + "\n")


if __name__ == "__main__":
    main()
