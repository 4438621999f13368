"""MindSpore's ``SummaryRecord``: values written by hand into TensorBoard event files.

``with SummaryRecord(log_dir) as record: record.add_value("scalar", "loss", loss);
record.record(step)``: values added since the last ``record`` are written at that step.
Files are TensorBoard's (``tensorboard --logdir log_dir`` shows them), written by torch's
``SummaryWriter`` as :class:`~jisu.train.callbacks.summary_collector.SummaryCollector`'s are,
in every process that makes one (as MindSpore: give each rank its own ``log_dir``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import torch

from ..callbacks.summary_collector import _summary_writer_class

logger = logging.getLogger("jisu.train")

__all__ = ["SummaryRecord"]

#: plugins holding a tensor value, written as TensorBoard scalars, images and histograms
_TENSOR_PLUGINS = ("scalar", "image", "histogram", "tensor")
#: MindSpore's plugins for MindInsight's lineage, graph and loss-landscape pages
_REFUSED = ("train_lineage", "eval_lineage", "dataset_graph", "custom_lineage_data", "graph",
            "landscape")  # fmt: skip


class SummaryRecord:
    """Writes the values given to :meth:`add_value` at each :meth:`record` step.

    Plugins: ``"scalar"`` (a one-element tensor), ``"image"`` (an NCHW tensor, values in
    [0, 1] for floats or uint8), ``"histogram"`` and ``"tensor"`` (any tensor; both are written
    as a TensorBoard histogram, which is how TensorBoard shows a tensor's values). MindSpore's
    lineage, graph and landscape plugins are for MindInsight and are refused. ``file_prefix``
    is not used (TensorBoard finds files by their ``events.out.tfevents`` name);
    ``file_suffix`` ends the file name; ``network``, ``max_file_size``, ``raise_exception``
    and ``export_options`` are accepted: the network's graph is not written and files are not
    split by size."""

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
        if not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(f"SummaryRecord: log_dir must be a str. Received {log_dir!r}")
        for name, value in (("file_prefix", file_prefix), ("file_suffix", file_suffix)):
            if not isinstance(value, str):
                raise TypeError(f"SummaryRecord: {name} must be a str. Received {name}={value!r}")
        self.base_log_dir = os.fspath(log_dir)
        self.file_prefix, self.file_suffix = file_prefix, file_suffix
        self.network = network
        os.makedirs(self.base_log_dir, exist_ok=True)
        self._writer = _summary_writer_class()(self.base_log_dir, filename_suffix=file_suffix)
        event_writer = self._writer.file_writer.event_writer
        self._file = getattr(event_writer, "_file_name", self.base_log_dir)  # torch's writer
        self._pool: dict[str, dict[str, Any]] = {}
        self._mode = "train"
        self._closed = False

    def __enter__(self) -> SummaryRecord:
        if self._closed:
            raise ValueError("SummaryRecord: this SummaryRecord has been closed")
        return self

    def __exit__(self, *err: Any) -> None:
        self.close()

    @property
    def log_dir(self) -> str:
        """The file being written (MindSpore's ``log_dir`` is the event file's path)."""
        return self._file

    def set_mode(self, mode: str) -> None:
        """``"train"`` or ``"eval"`` (MindSpore records its summary operators in train mode
        only; jisu has none, so the mode changes nothing)."""
        if mode not in ("train", "eval"):
            raise ValueError(
                f"SummaryRecord.set_mode: mode must be 'train' or 'eval'. Got {mode!r}"
            )
        self._mode = mode

    def add_value(self, plugin: str, name: str, value: Any) -> None:
        """Add ``value`` under the tag ``name``, written at the next :meth:`record` (a second
        value for the same tag and plugin replaces the first, as MindSpore warns)."""
        if plugin in _REFUSED:
            raise ValueError(
                f"SummaryRecord.add_value: the {plugin!r} plugin (MindInsight's lineage, graph "
                "and loss-landscape pages) is not provided; scalars, images, histograms and "
                "tensors are"
            )
        if plugin not in _TENSOR_PLUGINS:
            raise ValueError(
                f"SummaryRecord.add_value: no such plugin {plugin!r}; expected one of "
                f"{list(_TENSOR_PLUGINS + _REFUSED)}"
            )
        if not name or not isinstance(name, str):
            raise ValueError(f"SummaryRecord.add_value: name must be a non-empty str. Got {name!r}")
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"SummaryRecord.add_value: value must be a Tensor. Received {type(value).__name__}"
            )
        if plugin == "scalar" and value.numel() != 1:
            raise ValueError(
                f"SummaryRecord.add_value: a scalar must have one element. Received shape "
                f"{tuple(value.shape)} for {name!r}"
            )
        if plugin == "image" and value.dim() != 4:
            raise ValueError(
                f"SummaryRecord.add_value: an image must be NCHW (4-D). Received shape "
                f"{tuple(value.shape)} for {name!r}"
            )
        pool = self._pool.setdefault(plugin, {})
        if name in pool:
            logger.warning("SummaryRecord.add_value: %r has duplicate values; only the newest "
                           "one is recorded", f"{name}/{plugin}")  # fmt: skip
        pool[name] = value.detach().cpu()

    def record(
        self,
        step: int,
        train_network: Any = None,
        plugin_filter: Callable[[str], bool] | None = None,
    ) -> bool:
        """Write the values added since the last record at ``step``; False when closed."""
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError(f"SummaryRecord.record: step must be an int. Received step={step!r}")
        if self._closed:
            logger.error("SummaryRecord.record: the writer is closed (close() was called)")
            return False
        pool, self._pool = self._pool, {}
        for plugin, values in pool.items():
            if plugin_filter is not None and not plugin_filter(plugin):
                continue
            for tag, value in values.items():
                if plugin == "scalar":
                    self._writer.add_scalar(tag, value.float().reshape(()), step)
                elif plugin == "image":
                    self._writer.add_images(tag, value, step, dataformats="NCHW")
                else:
                    self._writer.add_histogram(tag, value.float(), step)
        return True

    def flush(self) -> None:
        """Write what is buffered to disk."""
        if not self._closed:
            self._writer.flush()

    def close(self) -> None:
        """Flush and close the file (further records return False)."""
        if not self._closed:
            self._writer.close()
            self._closed = True
