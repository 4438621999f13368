"""The ``jisu doctor`` report: one self-contained HTML page (no network needed to view it).

Charts are drawn by matplotlib (``jisu[plots]``) and embedded as inline SVG: per-stage
throughput and worker busy share, the output queue's occupancy over time, and the training
step-time breakdown; then the verdict, the numbers, and the environment (CPUs, versions,
device). Without matplotlib the page says so where the charts would be and keeps the rest.
"""

from __future__ import annotations

import html
import io
import os
import platform
import time
from typing import Any

import numpy as np
import torch

from .. import plots
from .._version import __version__
from ..dataset.core.cpus import available_cpus
from ..files import atomic_write
from .doctor import final_verdict, format_bytes, plural, stage_unit


def _svg(figure: Any) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML prologue: the SVG sits inside HTML


def _figure(width: float = 7.0, height: float = 2.8):
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(width, height))
    axis.spines[["top", "right"]].set_visible(False)
    return plt, figure, axis


def _chart(chart_id: str, draw: Any, *args: Any) -> str:
    """``draw(*args)``'s SVG in a figure, or a note in its place without matplotlib."""
    if not plots.available():
        body = f'<p class="note">{html.escape(plots.missing_note("chart"))}</p>'
    else:
        body = draw(*args)
    return f'<figure class="chart" id="{chart_id}">{body}</figure>'


def stage_chart(stages: list[dict[str, Any]]) -> str:
    plt, figure, left = _figure()
    right = left.twinx()
    names = [f"{s['stage']}\n({plural(stage_unit(s))})" for s in stages]
    x = np.arange(len(stages))
    left.bar(x - 0.2, [s["rows_per_s"] for s in stages], 0.4, color="#3b7dd8",
             label="output per second")  # fmt: skip
    right.bar(x + 0.2, [100 * s["busy_share"] for s in stages], 0.4, color="#e8833a",
              label="busy %")  # fmt: skip
    right.set_ylim(0, 100)
    left.set_xticks(x, names)
    left.set_ylabel("output per second (rows or batches)")
    right.set_ylabel("workers busy, %")
    left.set_title("Pipeline stages: throughput and busy share")
    figure.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2, frameon=False)
    svg = _svg(figure)
    plt.close(figure)
    return svg


def occupancy_chart(output: dict[str, Any]) -> str:
    plt, figure, axis = _figure()
    points = output.get("occupancy") or [(0.0, 0)]
    axis.step([p[0] for p in points], [p[1] for p in points], where="post", color="#3b7dd8")
    axis.axhline(output.get("queue_capacity", 0), color="#999999", linestyle="--", linewidth=1)
    axis.set_xlabel("seconds")
    axis.set_ylabel("batches ready")
    axis.set_title("Output queue over time (dashed: capacity; 0: the consumer waits)")
    svg = _svg(figure)
    plt.close(figure)
    return svg


def step_chart(shares: dict[str, float]) -> str:
    plt, figure, axis = _figure(height=1.8)
    labels = {"data_wait": "waiting for data", "copy": "copy to device", "step": "train step",
              "host": "other host work"}  # fmt: skip
    colors = {"data_wait": "#d84b3b", "copy": "#e8b83a", "step": "#3b7dd8", "host": "#8a8a8a"}
    start = 0.0
    for key, label in labels.items():
        width = 100 * shares[key]
        axis.barh([0], [width], left=start, color=colors[key], label=f"{label} {width:.0f}%")
        start += width
    axis.set_xlim(0, 100)
    axis.set_yticks([])
    axis.set_xlabel("% of the training time")
    axis.set_title("Where the training time goes")
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=4, frameon=False)
    svg = _svg(figure)
    plt.close(figure)
    return svg


def environment() -> dict[str, str]:
    import cv2

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU only"
    return {
        "jisu": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "opencv": cv2.__version__,
        "usable CPUs": str(available_cpus()),
        "machine": f"{platform.system()} {platform.machine()} {platform.processor()}".strip(),
        "device": device,
    }


def _table(rows: list[list[str]], header: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_OPS_TITLE = (
    "<h3>Ops inside the stages (an epoch's first 64 rows or batches timed, then one in 64)</h3>"
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
#verdict { background: #fff4e5; border-left: 6px solid #e8833a; padding: 1em 1.2em;
           font-size: 1.1em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3em 0.8em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
pre { background: #f6f6f6; padding: 0.8em 1em; overflow-x: auto; font-size: 0.85em; }
figure.chart { margin: 1em 0; } figure.chart svg { max-width: 100%; height: auto; }
"""


def _graph_rows(training: Any) -> list[list[str]]:
    """The graph-mode measurement's rows of the training table (or why it was not made)."""
    graph = getattr(training, "graph", None)
    if graph is None:
        note = getattr(training, "graph_note", None)
        return [["graph mode", f"not measured ({note})"]] if note else []
    if graph.error is not None:
        return [
            ["train step eager", f"{1000 * graph.eager:.1f} ms"],
            ["graph mode", f"torch.compile failed ({graph.error})"],
        ]
    return [
        ["train step eager", f"{1000 * graph.eager:.1f} ms"],
        ["train step compiled (GRAPH_MODE)", f"{1000 * graph.compiled:.1f} ms"],
        ["compiling (the first compiled step's extra time)", f"{graph.compile_seconds:.1f} s"],
    ]


def render(
    pipeline: dict[str, Any] | None = None, training: Any = None, verdict: str | None = None
) -> str:
    """The report page for a pipeline report (``iterator.profile()``), a training profiler
    (:class:`TrainingProfiler`), or both, under one verdict: ``verdict``, or by default
    :func:`~jisu.profiler.doctor.final_verdict` of the two (the one the terminal shows)."""
    sections = []
    if training is not None:
        s = training.summary()
        shares = s.shares()
        precision = training.precision
        measured = (
            [[f"train step at {level}", f"{1000 * seconds:.1f} ms"]
             for level, seconds in precision.seconds.items()]
            if precision is not None else []
        )  # fmt: skip
        measured += _graph_rows(training)
        sections.append(
            "<h2>Training</h2>"
            + _chart("chart-steps", step_chart, shares)
            + _table(
                [[k.replace("_", " "), f"{100 * v:.1f} %"] for k, v in shares.items()]
                + [
                    ["steps measured", str(s.steps)],
                    ["samples/s", f"{s.samples / max(s.wall, 1e-9):.0f}"],
                    ["device syncs per step", f"{s.device_syncs / max(s.steps, 1):.1f}"],
                ]
                + measured,
                ["", "value"],
            )
        )
    if pipeline is not None:
        rows = []
        for s in pipeline["stages"]:
            unit = stage_unit(s)
            rows.append(
                [s["stage"] + (f": {s['title']}" if s.get("title") else ""), s["workers"],
                 f"{s['rows_per_s']:.1f} {plural(unit)}/s",
                 f"{s['ms_per_row']:.2f} ms/{unit}", f"{100 * s['busy_share']:.0f} %",
                 f"{100 * s['queue_empty_share']:.0f} %", f"{100 * s['queue_full_share']:.0f} %",
                 f"{format_bytes(s['bytes_per_row'])}/{unit}"]
            )  # fmt: skip
        charts = ""
        if pipeline["stages"]:
            charts += _chart("chart-stages", stage_chart, pipeline["stages"])
        charts += _chart("chart-queue", occupancy_chart, pipeline["output"])
        supply = ""
        if "samples_per_s" in pipeline:
            supply = html.escape(
                f"Alone the pipeline delivers {pipeline['samples_per_s']:.0f} samples/s; the "
                f"training used {pipeline['training_samples_per_s']:.0f} samples/s."
            )
            supply = f"<p>{supply}</p>"
        header = ["stage", "workers", "output", "work", "busy", "queue empty", "queue full",
                  "size"]  # fmt: skip
        ops = [
            [s["stage"], o["op"], f"{100 * o['share']:.0f} %", f"{o['ms_per_call']:.3f} ms"]
            for s in pipeline["stages"]
            for o in s.get("ops", [])
        ]
        ops_table = ""
        if ops:
            ops_table = _OPS_TITLE + _table(
                ops, ["stage", "op", "share of the stage's work", "per call"]
            )
        plan = ""
        if pipeline.get("plan"):
            plan = f'<h3>Plan</h3><pre id="plan">{html.escape(pipeline["plan"])}</pre>'
        sections.append(
            "<h2>Input pipeline</h2>" + charts + supply + _table(rows, header) + ops_table + plan
        )
    env = environment()
    sections.append("<h2>Environment</h2>" + _table([[k, v] for k, v in env.items()], ["", ""]))
    if verdict is None:
        verdict = final_verdict(pipeline, training)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>jisu doctor report</title><style>{_STYLE}</style></head><body>"
        f"<h1>jisu doctor report</h1><p>{stamp}, jisu {html.escape(__version__)}</p>"
        f'<section id="verdict"><strong>Verdict</strong><p class="verdict">'
        f"{html.escape(verdict)}</p></section>" + "".join(sections) + "</body></html>"
    )


def write_report(
    path: str,
    pipeline: dict[str, Any] | None = None,
    training: Any = None,
    verdict: str | None = None,
) -> str:
    """Render (:func:`render`) and write the report atomically; returns the absolute path."""
    page = render(pipeline, training, verdict)
    with atomic_write(path, "w") as f:
        f.write(page)
    return os.path.abspath(path)
