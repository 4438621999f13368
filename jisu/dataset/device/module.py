"""Offload: run the cheap, bandwidth-heavy tail of a map (cast, normalize, layout) on the device.

``map(ops, "image", offload=True)`` keeps the longest tail of ``ops`` made of ``Rescale``,
``Normalize``, ``HWC2CHW`` and ``TypeCast`` out of the pipeline: batches leave it as uint8 NHWC
(4x fewer bytes than float32 to copy to the accelerator), and ``dataset.offload_module()``
returns a ``torch.nn.Module`` that applies that tail to each batch on whatever device it is on,
with the same results as the host ops (within float rounding).

With a decode op set to ``device("GPU")`` the tail starts at that op: the pipeline ships JPEG
bytes and its random draws, and the module decodes, crops, resizes and flips on its device
(:mod:`.decode_plan`).

Example:
    >>> data = ds.ImageFolderDataset(root).map(
    ...     [vision.RandomCropDecodeResize(224), vision.Normalize(mean, std), vision.HWC2CHW()],
    ...     "image", offload=True).batch(64)
    >>> tail = data.offload_module().to("cuda")
    >>> for image, label in data:
    ...     image = tail({"image": image.to("cuda", non_blocking=True)})["image"]
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from ..ops.batch import BatchDataset
from ..ops.map import MapDataset
from ..transforms.ops import TypeCast
from ..vision.pixel import HWC2CHW, Normalize, Rescale
from .decode_plan import DevicePlan
from .decoder import DeviceDecoder


def _torch_dtype(dtype: Any) -> torch.dtype:
    return torch.from_numpy(__import__("numpy").zeros(0, dtype)).dtype


class OffloadTail(NamedTuple):
    """The offloaded ops of one column: its name, ``col_idxs`` (its index in a row, as in
    MindSpore's offload model) and the ops, applied in order."""

    column: str
    col_idxs: list[int]
    ops: list[Any]


class OffloadModule(torch.nn.Module):
    """Applies offloaded op tails to the columns of a batch, on the module's device (the
    columns it computes are moved there; ``Model.train`` applies it by itself).

    Call it with a dict ``{column: tensor}`` (e.g. a row of ``create_dict_iterator``) or with a
    list/tuple of tensors in the dataset's column order; it returns the same kind.
    """

    def __init__(self, columns: list[str], tails: dict[str, list[Any]]) -> None:
        super().__init__()
        self.columns = list(columns)
        self.tails = {name: list(ops) for name, ops in tails.items()}
        #: one entry per offloaded column, from the sources up (MindSpore's ``transform_list``)
        self.transform_list = [
            OffloadTail(name, [self.columns.index(name)], ops) for name, ops in self.tails.items()
        ]
        # tells the module's device (a decode needs it: its input is host bytes)
        self.register_buffer("_device_probe", torch.zeros(0), persistent=False)
        self.decoders = {}
        for name, ops in self.tails.items():
            for k, op in enumerate(ops):
                if isinstance(op, DevicePlan):
                    self.decoders[f"{name}_{k}"] = DeviceDecoder(op)
                if isinstance(op, Normalize):
                    self.register_buffer(f"{name}_{k}_mean", torch.from_numpy(op.mean.copy()))
                    self.register_buffer(f"{name}_{k}_std", torch.from_numpy(op.std.copy()))

    def _apply_tail(self, name: str, x: torch.Tensor) -> torch.Tensor:
        ops = self.tails[name]
        if not (ops and isinstance(ops[0], DevicePlan)):  # a decode reads host bytes itself
            # uint8: a quarter of float32's bytes. Not asynchronous to the host: the CPU would
            # read the copy before it lands (a CUDA batch given to a module on the CPU)
            x = x.to(self.device, non_blocking=self.device.type != "cpu")
        for k, op in enumerate(ops):
            if isinstance(op, DevicePlan):  # packets of JPEG bytes: decoded where the module is
                x = self.decoders[f"{name}_{k}"](x, self.device)
            elif isinstance(op, Rescale):
                x = x.to(torch.float32) * op.rescale
                if op.shift:
                    x = x + op.shift
            elif isinstance(op, Normalize):
                mean = getattr(self, f"{name}_{k}_mean")
                std = getattr(self, f"{name}_{k}_std")
                if not op.is_hwc:
                    mean, std = mean.view(-1, 1, 1), std.view(-1, 1, 1)
                x = (x.to(torch.float32) - mean) / std
            elif isinstance(op, HWC2CHW):
                if x.dim() == 4:
                    x = x.permute(0, 3, 1, 2)
                elif x.dim() == 3:
                    x = x.permute(2, 0, 1)
            elif isinstance(op, TypeCast):
                x = x.to(_torch_dtype(op.data_type))
        return x.contiguous()

    @property
    def device(self) -> torch.device:
        """Where the module decodes and computes (moved with ``.to(device)``)."""
        return self._device_probe.device

    def forward(self, batch: Any) -> Any:
        if isinstance(batch, dict):
            return {k: self._apply_tail(k, v) if k in self.tails else v for k, v in batch.items()}
        values = list(batch)
        for name in self.tails:
            i = self.columns.index(name)
            values[i] = self._apply_tail(name, values[i])
        return type(batch)(values) if isinstance(batch, tuple) else values


def offload_module(dataset: Any) -> OffloadModule:
    """Collect the offloaded tails of a pipeline (see :meth:`Dataset.offload_module`)."""

    tails: dict[str, list[Any]] = {}
    stack, seen = [dataset], set()
    order = []
    while stack:  # nodes from the output down; tails later in the pipeline apply last
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):  # from the sources up
        if isinstance(node, MapDataset):
            used = [c for c in node.input_columns if c in tails]
            if used:
                raise ValueError(
                    f"offload: map reads column(s) {used} after their ops were "
                    "offloaded; offload only the last map of a column"
                )
            if node.offloaded:
                tails[node.output_columns[0]] = list(node.offloaded)
        if isinstance(node, BatchDataset) and node.per_batch_map is not None:
            used = [c for c in node.input_columns if c in tails]
            if used:
                raise ValueError(f"offload: per_batch_map reads offloaded column(s) {used}")
    columns = dataset.get_col_names()
    missing = [c for c in tails if c not in columns]
    if missing:
        raise ValueError(f"offload: offloaded column(s) {missing} are not in the output")
    return OffloadModule(columns, tails)
