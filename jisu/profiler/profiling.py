"""MindSpore's ``Profiler`` (``mindspore.profiler.Profiler``) on ``torch.profiler``.

``Profiler(output_path="./data")`` starts recording at once (``start_profile=False``: at
``start()``); ``stop()`` pauses, ``start()`` resumes, and ``analyse()`` ends the recording and
writes, as MindSpore does, into ``<output_path>/profiler/`` (created if missing):

- ``trace_rank<rank>.json``: the timeline in Chrome's trace format (open it in Perfetto,
  ``chrome://tracing`` or TensorBoard's profiler plugin), host ops and, on CUDA, kernels;
- ``op_statistic_rank<rank>.txt``: time per operator (torch's ``key_averages`` table).

MindSpore's output files (its own binary and csv formats read by MindInsight) are not
written; its device options (``profile_memory``, ``profile_communication``, ``aicore_metrics``,
``l2_cache`` ...) are accepted: ``profile_memory`` records tensor memory, the others have no
effect. ``output_path`` None reads ``MS_DIAGNOSTIC_DATA_PATH``, then "./data", as MindSpore.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from ..distributed import get_rank

__all__ = ["Profiler"]

#: MindSpore's options accepted without effect on torch's profiler
_ACCEPTED = {
    "profile_communication", "aicore_metrics", "l2_cache", "sync_enable", "data_process",
    "parallel_strategy", "timeline_limit", "op_time", "ascend_job_id", "data_simplification",
    "hbm_ddr", "pcie", "is_detail", "is_show_op_path", "profile_framework", "with_stack",
    "data_simplify", "profiler_level", "activities", "host_stack", "mstx", "schedule",
    "on_trace_ready", "export_type", "record_shapes", "profile_path",
}  # fmt: skip


class Profiler:
    """Records ops (and CUDA kernels) with ``torch.profiler`` and writes a trace and an
    operator table into ``<output_path>/profiler`` at :meth:`analyse`."""

    def __init__(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - _ACCEPTED - {"output_path", "start_profile", "profile_memory"}
        if unknown:
            raise ValueError(f"Profiler: unknown argument(s) {sorted(unknown)}")
        start_profile = kwargs.get("start_profile", True)
        if not isinstance(start_profile, bool):
            raise TypeError(
                f"Profiler: start_profile must be a bool. Received start_profile={start_profile!r}"
            )
        output_path = kwargs.get("output_path")
        if output_path is None:
            output_path = os.environ.get("MS_DIAGNOSTIC_DATA_PATH") or "data"
        self._output_path = os.path.join(os.path.abspath(os.fspath(output_path)), "profiler")
        os.makedirs(self._output_path, exist_ok=True)
        activities = [torch.profiler.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._profile = torch.profiler.profile(
            activities=activities,
            profile_memory=bool(kwargs.get("profile_memory", False)),
            record_shapes=bool(kwargs.get("record_shapes", False)),
        )
        self._state = "new"  # new -> recording <-> paused -> analysed
        if start_profile:
            self.start()

    @property
    def output_path(self) -> str:
        """The folder the files go to: ``<output_path>/profiler``."""
        return self._output_path

    def start(self) -> None:
        """Start recording, or resume it after :meth:`stop`."""
        if self._state == "analysed":
            raise RuntimeError("Profiler.start: analyse() has ended this profiler; make a new one")
        if self._state == "recording":
            raise RuntimeError("Profiler.start: the profiler is already recording")
        if self._state == "new":
            self._profile.start()
        else:
            self._profile.toggle_collection_dynamic(True, self._profile.activities)
        self._state = "recording"

    def stop(self) -> None:
        """Pause recording (:meth:`start` resumes it; :meth:`analyse` writes what was
        recorded)."""
        if self._state != "recording":
            raise RuntimeError("Profiler.stop: the profiler is not recording (call start())")
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self._profile.toggle_collection_dynamic(False, self._profile.activities)
        self._state = "paused"

    def analyse(self, **kwargs: Any) -> None:
        """End the recording and write the trace and the operator table."""
        if self._state == "analysed":
            return
        if self._state == "new":
            raise RuntimeError(
                "Profiler.analyse: nothing recorded (start_profile=False and no start())"
            )
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        if self._state == "paused":
            self._profile.toggle_collection_dynamic(True, self._profile.activities)
        self._profile.stop()
        self._state = "analysed"
        me = get_rank()
        self._profile.export_chrome_trace(os.path.join(self._output_path, f"trace_rank{me}.json"))
        sort = "self_cuda_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
        table = self._profile.key_averages().table(sort_by=sort, row_limit=-1)
        with open(os.path.join(self._output_path, f"op_statistic_rank{me}.txt"), "w") as file:
            file.write(table + "\n")

    def __enter__(self) -> Profiler:
        """``with Profiler(...) as prof:`` records the block (started here if not yet)."""
        if self._state in ("new", "paused"):
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._state == "recording":
            self.stop()

    @staticmethod
    def offline_analyse(path: str, **kwargs: Any) -> None:
        """MindSpore's offline analysis of raw profiling data: jisu writes its files at
        :meth:`analyse`, so there is nothing left to analyse."""
