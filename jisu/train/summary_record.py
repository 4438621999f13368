"""``SummaryRecord`` (MindSpore's name): values added during training written to TensorBoard
event files at ``record(step)``.

``add_value(plugin, name, value)`` queues a tensor under ``"scalar"``, ``"image"``,
``"histogram"`` or ``"tensor"`` (MindSpore's plugins for values); ``record(step)`` writes the
queue with torch's ``SummaryWriter`` (``tensor`` values as histograms: TensorBoard has no raw
tensor view) and empties it. MindSpore's lineage, graph and landscape plugins are refused by
name: they feed MindInsight, which jisu does not write for.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import torch

from ..distributed import is_main_process

_VALUES = ("scalar", "image", "histogram", "tensor")
_MINDINSIGHT = (
    "train_lineage",
    "eval_lineage",
    "dataset_graph",
    "custom_lineage_data",
    "graph",
    "LANDSCAPE",
)


def _writer(log_dir: str, suffix: str) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise ImportError(
            "SummaryRecord writes TensorBoard event files and needs the tensorboard package, "
            'which is not installed: pip install "jisu[tensorboard]" (or pip install tensorboard)'
        ) from err
    return SummaryWriter(log_dir=log_dir, filename_suffix=suffix)


class SummaryRecord:
    """Write the values queued by :meth:`add_value` to TensorBoard event files in ``log_dir``
    at each :meth:`record` (MindSpore's ``SummaryRecord``; a context manager that closes).

    Args:
        log_dir: the directory of the event files (created if missing).
        file_prefix, file_suffix: parts of the file name (torch's writer names the files
            ``events.out.tfevents.<time>.<host><file_suffix>``; ``file_prefix`` is accepted).
        network: accepted (MindSpore writes the network's graph for MindInsight).
        max_file_size, raise_exception, export_options: accepted; ``export_options`` (MindSpore's
            npy export of the values) must be None.

    Only the main process writes under ``torchrun``; the others queue and drop.
    """

    def __init__(
        self,
        log_dir: str,
        file_prefix: str = "events",
        file_suffix: str = "_MS",
        network: Any = None,
        max_file_size: int | None = None,
        raise_exception: bool = False,
        export_options: dict | None = None,
    ) -> None:
        if not isinstance(log_dir, str) or not log_dir:
            raise ValueError(f"SummaryRecord: log_dir must be a non-empty str. Got {log_dir!r}")
        if export_options is not None:
            raise ValueError("SummaryRecord: export_options is not provided; pass None")
        self._log_dir = os.path.realpath(log_dir)
        os.makedirs(self._log_dir, exist_ok=True)
        self.network = network
        self._pool: dict[str, dict[str, Any]] = {p: {} for p in _VALUES}
        self._closed = False
        self._writer = _writer(self._log_dir, file_suffix) if is_main_process() else None

    def __enter__(self) -> SummaryRecord:
        if self._closed:
            raise ValueError("SummaryRecord: the record is closed; create a new one")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def log_dir(self) -> str:
        """The directory the event files are written to."""
        return self._log_dir

    def set_mode(self, mode: str) -> None:
        """MindSpore's "train" / "eval" switch (eval drops the queued values at record)."""
        if mode not in ("train", "eval"):
            raise ValueError(f"SummaryRecord.set_mode: mode must be train or eval. Got {mode!r}")
        self._mode = mode

    def add_value(self, plugin: str, name: str, value: Any) -> None:
        """Queue ``value`` (a tensor) under ``plugin`` and tag ``name`` until the next
        :meth:`record`; a second value for the same tag replaces the first."""
        if plugin in _MINDINSIGHT:
            raise ValueError(
                f"SummaryRecord.add_value: the {plugin!r} plugin feeds MindInsight and is not "
                f"provided; jisu writes {list(_VALUES)} to TensorBoard"
            )
        if plugin not in _VALUES:
            raise ValueError(
                f"SummaryRecord.add_value: no such plugin {plugin!r}; expected one of "
                f"{list(_VALUES)}"
            )
        if not isinstance(name, str) or not name:
            raise ValueError(f"SummaryRecord.add_value: name must be a non-empty str. Got {name!r}")
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"SummaryRecord.add_value: value must be a Tensor. Got {type(value).__name__}"
            )
        if plugin == "scalar" and value.numel() != 1:
            raise ValueError(f"SummaryRecord.add_value: a scalar must have one element ({name!r})")
        self._pool[plugin][name] = value.detach().cpu()

    def record(
        self,
        step: int,
        train_network: Any = None,
        plugin_filter: Callable[[str], bool] | None = None,
    ) -> bool:
        """Write the queued values at ``step`` and empty the queue; False once closed."""
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError(f"SummaryRecord.record: step must be an int. Got {step!r}")
        if self._closed:
            return False
        pool, self._pool = self._pool, {p: {} for p in _VALUES}
        if self._writer is None or getattr(self, "_mode", "train") == "eval":
            return True
        for plugin, values in pool.items():
            if plugin_filter is not None and not plugin_filter(plugin):
                continue
            for name, value in values.items():
                if plugin == "scalar":
                    self._writer.add_scalar(name, value.float().reshape(()).item(), step)
                elif plugin == "image":  # MindSpore's images are NCHW
                    self._writer.add_images(name, value.float(), step, dataformats="NCHW")
                else:
                    self._writer.add_histogram(name, value.float(), step)
        return True

    def flush(self) -> None:
        """Write the event files' buffers to disk."""
        if self._writer is not None and not self._closed:
            self._writer.flush()

    def close(self) -> None:
        """Flush and close the event files; later records return False."""
        if not self._closed and self._writer is not None:
            self._writer.close()
        self._closed = True
