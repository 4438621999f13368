"""The captured step: :class:`GraphedStep` and its input buffers (:class:`StaticInputs`)."""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

from ..steps import cloned_outputs
from .backend import CudaGraphBackend, GraphBackend
from .decision import StepCapture
from .snapshot import StepSnapshot

logger = logging.getLogger("jisu.train")

#: eager steps before the capture
WARMUP_STEPS = 3

#: warm-up steps in a row with batches of new shapes after which capture is given up
UNSETTLED_STEPS = 8


def _signature(tensors: Any) -> tuple:
    return tuple(
        (tuple(t.shape), t.dtype, t.device) if isinstance(t, torch.Tensor) else ("value", t)
        for t in tensors
    )


class StaticInputs:
    """The graph's input buffers: copies of the capture batch's tensors, which every later
    batch of the same shapes, dtypes and devices is copied into before a replay."""

    def __init__(self, tensors: list[torch.Tensor]) -> None:
        if not all(isinstance(t, torch.Tensor) for t in tensors):
            raise TypeError("StaticInputs: a captured step's inputs must all be tensors")
        self.tensors = [t.detach().clone() for t in tensors]
        self.signature = _signature(self.tensors)

    def matches(self, tensors: list[Any]) -> bool:
        """Whether ``tensors`` fit the buffers (same count, shapes, dtypes and devices)."""
        return len(tensors) == len(self.tensors) and _signature(tensors) == self.signature

    def load(self, tensors: list[torch.Tensor]) -> None:
        """Copy ``tensors`` into the buffers (on the current stream, before the replay)."""
        for buffer, t in zip(self.tensors, tensors):
            buffer.copy_(t)


class GraphedStep:
    """A train step whose device work is captured once and replayed (see the module).

    Args:
        step: the train step (:class:`~jisu.amp.TrainStep`, or a compiled one): called for the
            eager steps; its ``device_step`` is captured, its ``after_device_step`` runs after
            each replay.
        backend: where the graph lives (:class:`CudaGraphBackend` on CUDA).
        network, optimizer, manager: what the step trains (``network`` a module or a list:
            the network and a loss module), pictured at the capture (:class:`StepSnapshot`).
        warmup: eager steps before the capture.
        watch_every_step: the whole :class:`StepSnapshot` before every replay; otherwise its
            deep part only before the first replay after :meth:`begin_window` (a sink's first
            step: between sinks, replayed callbacks and evaluation can change anything) and
            its shallow part (what schedules change) before the others.
    """

    def __init__(
        self,
        step: Any,
        backend: GraphBackend,
        network: nn.Module | list[nn.Module],
        optimizer: torch.optim.Optimizer,
        manager: Any = None,
        warmup: int = WARMUP_STEPS,
        watch_every_step: bool = False,
    ) -> None:
        self.step = step
        self.watch_every_step = watch_every_step
        self.backend = backend
        self.network, self.optimizer, self.manager = network, optimizer, manager
        self.warmup = warmup
        self.report = StepCapture("cuda_graph")
        self.inputs: StaticInputs | None = None
        self.snapshot: StepSnapshot | None = None
        self._outputs: Any = None
        self._eager = False
        self._warmed = 0
        self._told_shapes = False
        self._last_signature: tuple | None = None
        self._deep_due = True  # the deep check before a window's first replay
        self._unsettled = 0  # warm-up steps in a row whose batch changed shapes

    @property
    def captured(self) -> bool:
        """Whether a graph is recorded and in use."""
        return self.inputs is not None and not self._eager

    def __call__(self, *tensors: Any) -> Any:
        if self._eager:
            return self._run_eagerly(tensors)
        if self.inputs is None:
            signature = _signature(tensors)
            if self._warmed < self.warmup or signature != self._last_signature:
                return self._warm_up(tensors, signature)
            return self._capture(list(tensors))
        why = self.snapshot.changed(deep=self._deep_due or self.watch_every_step)
        self._deep_due = False
        if why is not None:
            self._fall_back(why)
            return self._run_eagerly(tensors)
        if not self.inputs.matches(list(tensors)):
            if not self._told_shapes:
                self._told_shapes = True
                logger.info(
                    "sink mode: a batch of other shapes than the captured step's (%s, not %s) "
                    "runs eagerly; the graph stays for the batches that fit",
                    _shapes(tensors),
                    _shapes(self.inputs.tensors),
                )
            return self._run_eagerly(tensors)
        self.inputs.load(list(tensors))
        return self._replay()

    def __getattr__(self, name: str) -> Any:
        step = self.__dict__.get("step")  # absent while unpickling or copying
        if step is None:
            raise AttributeError(name)
        return getattr(step, name)

    def begin_window(self) -> None:
        """A sink begins: the next replay is preceded by the deep check."""
        self._deep_due = True

    def _warm_up(self, tensors: tuple, signature: tuple) -> Any:
        """An eager step before the capture. The capture batch must have the shapes of the
        batch before it (not a short last one), and the warm-up steps from the last planned
        one on are watched for host synchronisations, which a graph cannot hold."""
        self._unsettled = 0 if signature == self._last_signature else self._unsettled + 1
        self._last_signature = signature
        self._warmed += 1
        self.report.eager_steps += 1
        if self._warmed < self.warmup:
            return self.backend.warm_up(lambda: self.step(*tensors))
        outputs, sync = self.backend.probe(lambda: self.step(*tensors))
        if sync is not None:
            self._fall_back(f"the step synchronises with the host ({sync})")
        elif self._unsettled >= UNSETTLED_STEPS:
            self._fall_back(
                f"the batches' shapes changed at each of {UNSETTLED_STEPS} steps in a row "
                "(capture needs static shapes: drop_remainder=True or padded batches)"
            )
        return outputs

    def _run_eagerly(self, tensors: tuple) -> Any:
        self.report.eager_steps += 1
        return self.step(*tensors)

    def _replay(self) -> Any:
        self.backend.replay()
        self.step.after_device_step()
        self.report.replays += 1
        return cloned_outputs(self._outputs)

    def _capture(self, tensors: list[torch.Tensor]) -> Any:
        try:
            inputs = StaticInputs(tensors)
            snapshot_before = StepSnapshot(self.network, self.optimizer, self.manager, self.step)
            outputs = self.backend.capture(lambda: self.step.device_step(*inputs.tensors))
        except Exception as exc:  # nothing was recorded or run: the batch trains eagerly
            first = str(exc).splitlines()[0] if str(exc) else ""
            self._fall_back(f"the capture failed: {type(exc).__name__}: {first}")
            return self._run_eagerly(tuple(tensors))
        # the capture's own Python (zero_grad, the backward) rebinds the gradients only
        self.inputs, self._outputs, self.snapshot = inputs, outputs, snapshot_before
        logger.info(
            "sink mode: the train step is captured as a CUDA graph after %d eager steps "
            "(set_context(sink_capture='off') launches it per step)",
            self._warmed,
        )
        return self._replay()

    def _fall_back(self, reason: str) -> None:
        self._eager = True
        self.report.reason = reason
        # the graph's memory (a whole step's activations) goes back before the eager steps
        self.inputs = self._outputs = self.snapshot = None
        if isinstance(self.backend, CudaGraphBackend):
            self.backend.graph = None
        logger.warning("sink mode: the train step runs eagerly from here on: %s", reason)


def _shapes(tensors: Any) -> str:
    return ", ".join(
        str(tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__ for t in tensors
    )
