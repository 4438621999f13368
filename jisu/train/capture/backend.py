"""Where a captured step's graph is recorded and replayed: :class:`GraphBackend`, and
:class:`CudaGraphBackend` on CUDA."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import torch


class GraphBackend(Protocol):
    """Where a graph is recorded and replayed (:class:`CudaGraphBackend`; tests give a CPU one)."""

    def warm_up(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` eagerly, as the steps before a capture must run; its outputs."""

    def probe(self, fn: Callable[[], Any]) -> tuple[Any, str | None]:
        """Run ``fn`` as :meth:`warm_up` does, watched for host synchronisations: its outputs,
        and the first synchronisation seen (None: none; the step can be captured)."""

    def capture(self, fn: Callable[[], Any]) -> Any:
        """Record ``fn``'s device work without running it; its outputs, which each replay
        overwrites. An error leaves nothing recorded and nothing run."""

    def replay(self) -> None:
        """Run the recorded work once more."""


class CudaGraphBackend:
    """:class:`GraphBackend` on a CUDA device: warm-up on a side stream, ``torch.cuda.graph``."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.graph: torch.cuda.CUDAGraph | None = None
        self._side = torch.cuda.Stream(device)

    def warm_up(self, fn: Callable[[], Any]) -> Any:
        current = torch.cuda.current_stream(self.device)
        self._side.wait_stream(current)
        with torch.cuda.stream(self._side):
            outputs = fn()
        current.wait_stream(self._side)
        for t in _tensors(outputs):  # made on the side stream, used on the current one
            t.record_stream(current)
        return outputs

    def probe(self, fn: Callable[[], Any]) -> tuple[Any, str | None]:
        # CUDA's sync-debug mode "warn" lets the step run whole (an error would stop it
        # half-applied) and names each synchronising call; other warnings are passed on
        previous = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                outputs = self.warm_up(fn)
            finally:
                torch.cuda.set_sync_debug_mode(previous)
        syncs = [w for w in caught if "synchroniz" in str(w.message)]
        for w in caught:
            if w not in syncs:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return outputs, (str(syncs[0].message).splitlines()[0] if syncs else None)

    def capture(self, fn: Callable[[], Any]) -> Any:
        # torch.cuda.graph's steps, with two differences: the stream is restored when the
        # capture fails (torch.cuda.graph leaves it set when capture_end raises), and
        # "thread_local" mode, so that the device feeder's thread copying the next batches
        # on its own stream meanwhile is not taken for an unsafe call within the capture
        graph = torch.cuda.CUDAGraph()
        current = torch.cuda.current_stream(self.device)
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(current)
        with torch.cuda.stream(stream):
            graph.capture_begin(capture_error_mode="thread_local")
            try:
                outputs = fn()
            except BaseException:
                with contextlib.suppress(Exception):  # the capture is void already
                    graph.capture_end()
                raise
            graph.capture_end()
        current.wait_stream(stream)
        self.graph = graph
        return outputs

    def replay(self) -> None:
        self.graph.replay()


def _tensors(outputs: Any) -> list[torch.Tensor]:
    items = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    return [t for t in items if isinstance(t, torch.Tensor)]
