"""The train step ``Model`` runs, built by wrapping: each wrapper takes a step and returns a
step (a callable ``step(*batch) -> outputs`` with the step's attributes), leaving the step it
wraps as it was.

- :func:`data_parallel`: under ``torchrun``, gradients averaged across the ranks
  (``DistributedDataParallel``);
- :class:`CompiledStep`: in GRAPH_MODE, the forward and backward through ``torch.compile``,
  with the eager step as the fallback when compilation fails.

:func:`wrap_train_step` composes them, in that order, in one place. :class:`EvalStep` is
evaluation's step: the eval network, then the metrics' updates.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from .. import distributed
from ..amp import TrainStep
from ..amp.train_step import loss_forward
from ..context import get_auto_parallel_context, get_context, graph_mode
from .graph_policy import GraphModeChooser, GraphRecords, network_key
from .metrics import Loss, Metric

_log = logging.getLogger(__name__)


def data_parallel(
    step: TrainStep, loss_fn: Callable[..., torch.Tensor] | None, device: torch.device
) -> TrainStep:
    """``step`` over ``DistributedDataParallel(step.network)``: the same update, with the
    gradients averaged across the ranks during the backward; summed in ``DATA_PARALLEL``
    mode with ``gradients_mean=False`` (MindSpore's default; its grad reducer's rule)."""
    ids = [device] if device.type == "cuda" else None
    network = DistributedDataParallel(step.network, device_ids=ids)
    if get_auto_parallel_context("parallel_mode") == "data_parallel" and not (
        get_auto_parallel_context("gradients_mean")
    ):
        network.register_comm_hook(None, _summed)
    return step.with_forward(loss_forward(network, loss_fn))


def _summed(state, bucket):
    """DistributedDataParallel's all-reduce without its division by the number of ranks
    (unannotated: DDP refuses a hook whose annotations are not its own types)."""
    work = torch.distributed.all_reduce(bucket.buffer(), async_op=True)
    return work.get_future().then(lambda done: done.value()[0])


class CompiledStep:
    """``step`` with its forward (and so its backward) run through ``torch.compile``, when
    compiling pays.

    ``policy`` "auto" (the default: ``set_context(graph_compile=...)``): the first steps run
    eagerly, timed; then the step compiles only if the run is long enough to pay the compile
    back, and keeps the compiled step only if it is measured faster (the rule, its records and
    its log lines: :mod:`jisu.train.graph_policy`; :meth:`describe` says what was chosen and
    why). ``Model.train`` tells the step how many steps the run plans (:meth:`plan_steps`).
    "always": compiled from the first step.

    Compilation happens during the compiling call, forward and backward (the backward graph
    is compiled when it first runs), and can fail there: no C++ compiler, an unsupported
    construct. Then the step is redone by the eager ``step``: if that succeeds, the step warns
    and uses the eager step from then on (BatchNorm running statistics will have seen that
    batch twice); if it fails too, the batch is at fault, not the compiler: its error
    propagates and the compiled step is tried again at the next call. Errors after a
    first successful compiled step are the user's and propagate. Other attributes are those of
    the step in use.

    The compile can take minutes on a CPU: it is logged (INFO, logger ``jisu.train.steps``)
    when it begins and when the compiling step returns, so that a job's log says what it is
    doing (a terminal's progress bar says it too).
    """

    def __init__(
        self,
        step: TrainStep,
        mode: str | None = None,
        policy: str | None = None,
        *,
        records: GraphRecords | None = None,
        clock: Callable[[], float] = time.perf_counter,
        compile_fn: Callable[..., Any] | None = None,
    ) -> None:
        if mode is None and get_context("enable_graph_kernel"):
            mode = "max-autotune"
        self.mode = mode
        self.eager = step
        compile_fn = torch.compile if compile_fn is None else compile_fn
        self.compiled = step.with_forward(compile_fn(step.forward_fn, mode=mode))
        policy = get_context("graph_compile") if policy is None else policy
        self.chooser = GraphModeChooser(_device_type(step), records) if policy == "auto" else None
        self.clock = clock
        self._step: Any = self.compiled if self.chooser is None else self.eager
        self._compiled_once = False  # the compiling call has succeeded (or fell back)
        # Inductor's CUDA graphs ("reduce-overhead") reuse their output memory at the next
        # run: each call marks a new step, and the outputs are cloned to outlive it
        self._graphs = mode == "reduce-overhead"

    @property
    def is_compiled(self) -> bool:
        """Whether the compiled step is in use (False while it runs eagerly: before "auto"
        chose to compile, after it chose not to, after a compile failed)."""
        return self._step is self.compiled

    @property
    def proven(self) -> bool:
        """False when the next call compiles (Model.train's progress bar says so)."""
        if self.chooser is None:
            return self._compiled_once
        return self.chooser.next_step() != "compile"

    def plan_steps(self, remaining: int) -> None:
        """The number of steps the run makes from now on, for the "auto" rule."""
        if self.chooser is not None:
            self.chooser.plan(remaining)

    def describe(self) -> str:
        """What GRAPH_MODE chose for this step and why."""
        if self.chooser is not None:
            return self.chooser.describe()
        return "GRAPH_MODE (graph_compile='always'): compiled at the first step"

    def __call__(self, *inputs: Any) -> Any:
        if self._graphs and self.is_compiled:
            torch.compiler.cudagraph_mark_step_begin()
            return cloned_outputs(self._call(inputs))
        return self._call(inputs)

    def _call(self, inputs: tuple) -> Any:
        chooser = self.chooser
        if chooser is None:
            return self._step(*inputs) if self._compiled_once else self._compile(inputs)
        if not chooser.measuring:
            return self._step(*inputs)
        if chooser.key is None:
            network = getattr(self.eager, "network", None)
            chooser.key = network_key(network, inputs, getattr(self.eager, "precision", None))
        begin = self.clock()
        compiling = chooser.next_step() == "compile"
        if compiling:
            self._step = self.compiled
            outputs = self._compile(inputs)
        else:
            outputs = self._step(*inputs)
        _synchronize(outputs)
        chooser.observe(self.clock() - begin, compile_failed=compiling and not self.is_compiled)
        self._step = self.eager if chooser.next_step() == "eager" else self.compiled
        return outputs

    def _compile(self, inputs: tuple) -> Any:
        """The compiling call: the compiled step, or the eager one when compiling fails."""
        _log.info(
            "GRAPH_MODE: compiling the train step (torch.compile): seconds with a warm "
            "compile cache, a minute or more on a CPU without one"
        )
        begin = time.perf_counter()
        try:
            outputs = self._step(*inputs)
        except Exception as exc:  # compilation failed, in the forward or the backward
            # the eager step decides: if it fails too, the error is the user's (a bad batch),
            # not the compiler's; the compiled step stays for the next call and it propagates
            outputs = self.eager(*inputs)
            warnings.warn(
                f"GRAPH_MODE: torch.compile failed ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); running eagerly",
                stacklevel=3,
            )
            self._step = self.eager
        self._compiled_once = True
        _log.info(
            "GRAPH_MODE: compiling step done in %.1f s (%s)",
            time.perf_counter() - begin,
            "compiled" if self.is_compiled else "eager, after the compile failed",
        )
        return outputs

    def __getattr__(self, name: str) -> Any:
        step = self.__dict__.get("_step")  # absent while unpickling or copying
        if step is None:
            raise AttributeError(name)
        return getattr(step, name)


def _device_type(step: Any) -> str:
    network = getattr(step, "network", None)
    if isinstance(network, torch.nn.Module):
        parameter = next(network.parameters(), None)
        if parameter is not None:
            return parameter.device.type
    return "cpu"


def _synchronize(outputs: Any) -> None:
    """Wait for a CUDA step to finish, so that its time is measured (only while measuring)."""
    values = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    if any(isinstance(v, torch.Tensor) and v.is_cuda for v in values):
        torch.cuda.synchronize()


def cloned_outputs(outputs: Any) -> Any:
    """``outputs`` with each tensor cloned (a CUDA graph overwrites its outputs at the next run)."""
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(o.clone() if isinstance(o, torch.Tensor) else o for o in outputs)
    return outputs.clone() if isinstance(outputs, torch.Tensor) else outputs


def wrap_train_step(
    step: TrainStep, loss_fn: Callable[..., torch.Tensor] | None, device: torch.device
) -> Any:
    """The step ``Model`` trains with: ``step``, data-parallel under ``torchrun`` (more than
    one rank), compiled in GRAPH_MODE."""
    ranks = distributed.get_group_size()
    if ranks > 1:
        step = data_parallel(step, loss_fn, device)
    if graph_mode():
        # every rank must run the same graphs (the same collectives in the same order), and
        # each rank's own measurements could choose differently: compiled on all of them
        policy = "always" if ranks > 1 else None
        if policy and get_context("graph_compile") == "auto":
            _log.info("GRAPH_MODE: %d ranks, so compiled from the first step on each", ranks)
        step = CompiledStep(step, policy=policy)
    return step


class EvalStep:
    """``Model.eval``'s step: ``network(*batch[:-1])``, then every metric updated with the
    output and the label (``batch[-1]``; the ``Loss`` metric with ``loss_fn(output, label)``
    and the batch's size); returns the output. Run under ``torch.no_grad``."""

    def __init__(
        self, network: Callable[..., Any], metrics: dict[str, Metric], loss_fn: Any
    ) -> None:
        self.network, self.metrics, self.loss_fn = network, metrics, loss_fn

    def __call__(self, *tensors: torch.Tensor) -> Any:
        *data, label = tensors
        output = self.network(*data)
        for metric in self.metrics.values():
            if isinstance(metric, Loss):
                metric.update(self.loss_fn(output, label), int(label.shape[0]))
            else:
                metric.update(output, label)
        return output
