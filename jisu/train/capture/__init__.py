"""Sink mode's train step captured once as a CUDA graph and replayed per batch.

A small step on a GPU is launch-bound: Python launches its kernels one by one (forward,
backward, the optimizer's foreach kernels, the loss-scale update) and the device waits between
them. Sink mode already removes the host reads; with static shapes the whole step (forward,
loss, backward, the optimizer step, AMP casts, the device-side loss-scale update and overflow
skip) can then be recorded once as a CUDA graph and replayed with one launch per batch. That
is what MindSpore's sink mode does on Ascend, and what PyTorch's whole-network capture does.

:func:`sink_step` decides, once per ``Model.train``, how sink mode runs the step:

- ``set_context(sink_capture="cuda_graph")`` (the default): a :class:`GraphedStep` on CUDA
  when nothing rules it out (:func:`capture_blockers`: data parallel, an optimizer with
  host-side state, a float learning rate that a schedule changes per step);
- ``"reduce-overhead"``: the forward and backward through ``torch.compile(mode=
  "reduce-overhead")`` (Inductor's CUDA graphs; the optimizer step stays eager);
- ``"off"``: every kernel launched from Python, as on CPU.

Whatever rules capture out is said in one log line (logger ``jisu.train``), and the reason is
in ``cb_params.step_capture`` for ``jisu doctor``.

A :class:`GraphedStep` runs :data:`WARMUP_STEPS` eager steps first (they create the optimizer's
state, cuBLAS workspaces and a compiled step's kernels, on a side stream as PyTorch requires),
then captures the step's device work (:meth:`jisu.amp.TrainStep.device_step`) on the next batch
and replays it for that batch and every later one: each batch is copied into the graph's
static input buffers (:class:`StaticInputs`; the device feeder has already moved it to the
device on its own stream, so this is a device-to-device copy), the graph is replayed, the
step's host bookkeeping runs (the loss-scale manager's step count), and the outputs are cloned
so that the sink's losses stay distinct until its one read. Nothing is read back.

A captured graph freezes the step's Python: its control flow, its float hyper-parameters, the
tensors it was given. So a :class:`StepSnapshot` compares what the step was captured with (the
optimizer's groups, hyper-parameters and state tensors, the loss-scale manager's tensors and
settings, the step's clipping norm, and every module of the network and of the loss: its
training flag, plain attributes, hooks, parameters and buffers by identity and storage, which
parameters train) with what they are now: the hyper-parameters before every replay
(microseconds), the rest before each sink's first replay (between sinks, replayed callbacks and
evaluation may change anything; about 4 ms for a ResNet-50 on a CPU core) and, when a callback
acts as steps are dispatched, before every replay. If anything changed, the step falls back to
eager for the rest of the run, saying why, and the graph's memory is released.
What it cannot see is Python state outside modules and optimizers (a global counter or Python
random numbers read by the forward): such a step must run with ``sink_capture="off"``.

The capture batch has the shapes of the batch before it; a later batch of other shapes or
dtypes (a last partial batch) runs eagerly and the graph stays for the next one; batches whose
shapes never settle give capture up. The last warm-up step runs under CUDA's sync-debug mode:
a step that synchronises with the host (``.item()``, ``float()`` of a device tensor, a
BatchNorm with ``momentum=None``) is never captured. A capture that fails anyway has trained
nothing: the batch and the rest of the run go eagerly. Random ops stay correct under replay:
PyTorch's CUDA generator is graph-safe (each replay draws fresh numbers, as the eager step
would).

The graph itself sits behind :class:`GraphBackend` (:class:`CudaGraphBackend` on CUDA), so the
decisions above are tested on any machine.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

from ... import distributed
from ...context import get_context
from ..steps import CompiledStep
from .backend import CudaGraphBackend, GraphBackend
from .decision import (
    StepCapture,
    acts_per_step,
    capture_blockers,
    changes_rates_per_step,
    optimizer_blocker,
)
from .graphed_step import UNSETTLED_STEPS, WARMUP_STEPS, GraphedStep, StaticInputs
from .snapshot import StepSnapshot

__all__ = [
    "UNSETTLED_STEPS",
    "WARMUP_STEPS",
    "CudaGraphBackend",
    "GraphBackend",
    "GraphedStep",
    "StaticInputs",
    "StepCapture",
    "StepSnapshot",
    "acts_per_step",
    "capture_blockers",
    "changes_rates_per_step",
    "optimizer_blocker",
    "sink_step",
]

logger = logging.getLogger("jisu.train")


def sink_step(
    step: Any,
    device: torch.device,
    network: nn.Module | list[nn.Module],
    optimizer: torch.optim.Optimizer | None,
    manager: Any,
    per_step_schedule: bool,
    backend: GraphBackend | None = None,
    watch_every_step: bool = False,
) -> tuple[Any, StepCapture]:
    """The step sink mode runs on ``device`` and how it runs (see the module): ``step`` as it
    is, a :class:`GraphedStep` over it, or (``sink_capture="reduce-overhead"``) the step
    compiled with that mode. ``backend``: where a graph lives (default: CUDA's);
    ``watch_every_step``: a callback acts as each step is dispatched
    (:func:`acts_per_step`), so the whole snapshot is checked before every replay."""
    mode = get_context("sink_capture")
    if mode == "off":
        return step, StepCapture(None, "set_context(sink_capture='off')")
    blockers = capture_blockers(optimizer, device, per_step_schedule, distributed.get_group_size())
    if device.type != "cuda":  # not a fallback: the CPU loop is the same loop
        return step, StepCapture(None, blockers[0])
    if mode == "reduce-overhead":
        eager = step.eager if isinstance(step, CompiledStep) else step
        return CompiledStep(eager, mode="reduce-overhead"), StepCapture("reduce-overhead")
    if blockers:
        reason = "; ".join(blockers)
        logger.warning("sink mode: the train step is not captured as a CUDA graph: %s", reason)
        return step, StepCapture(None, reason)
    graphed = GraphedStep(
        step, backend or CudaGraphBackend(device), network, optimizer, manager,
        watch_every_step=watch_every_step,
    )  # fmt: skip
    return graphed, graphed.report
