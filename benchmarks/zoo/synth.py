"""Synthetic data and small helpers for the zoo drivers.

A driver feeds a project data in the shapes and dtypes its own dataset code produces: a fixed,
seeded batch repeated ``steps`` times (so that a falling loss is expected), either as tensors or
as a ``jisu.dataset.GeneratorDataset`` with the project's column names.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def array(shape: tuple[int, ...], dtype: str = "float32", high: int | None = None, seed: int = 0):
    """A seeded NumPy array: integers in ``[0, high)`` when ``high`` is given, else N(0, 1)."""
    rng = np.random.default_rng(seed)
    if high is not None:
        return rng.integers(0, high, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def tensors(*arrays: np.ndarray) -> tuple:
    """The arrays as torch tensors."""
    import torch

    return tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)


class _Rows:
    def __init__(self, rows: list[tuple], repeats: int) -> None:
        self.rows, self.repeats = rows, repeats

    def __len__(self) -> int:
        return len(self.rows) * self.repeats

    def __getitem__(self, i: int) -> tuple:
        return self.rows[i % len(self.rows)]


def dataset(columns: dict[str, np.ndarray], steps: int, batch: bool = True) -> Any:
    """A ``GeneratorDataset`` whose every batch is the same: ``columns`` maps each column name to
    a batch array (first axis = batch size); ``steps`` batches per epoch. With ``batch`` False,
    the rows are the batches themselves (for projects that batch inside their own code)."""
    from jisu import dataset as ds

    names = list(columns)
    arrays = [columns[n] for n in names]
    size = arrays[0].shape[0]
    if batch:
        rows = [tuple(a[i] for a in arrays) for i in range(size)]
        data = ds.GeneratorDataset(_Rows(rows, steps), column_names=names, shuffle=False)
        return data.batch(size, drop_remainder=True)
    return ds.GeneratorDataset(_Rows([tuple(arrays)], steps), column_names=names, shuffle=False)


def scalar(value: Any) -> float:
    """A loss (tensor, array, tuple whose first element is the loss) as a Python float."""
    if isinstance(value, (tuple, list)):
        value = value[0]
    if hasattr(value, "detach"):
        value = value.detach().float().mean().cpu().item()
    return float(np.asarray(value, dtype=np.float64).mean())


def loss_recorder() -> Any:
    """A jisu callback that appends each step's loss (``cb_params.net_outputs``) to ``.losses``."""
    from jisu.train.callbacks import Callback

    class LossRecorder(Callback):
        def __init__(self) -> None:
            self.losses: list[float] = []

        def on_train_step_end(self, run_context: Any) -> None:
            self.losses.append(scalar(run_context.original_args().net_outputs))

    return LossRecorder()


def finite(value: Any) -> bool:
    """Whether every float in a (nested) output is finite."""
    import torch

    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return all(finite(v) for v in value)
    if isinstance(value, torch.Tensor):
        return bool(torch.isfinite(value.detach().float()).all()) if value.numel() else True
    if isinstance(value, (float, np.floating)):
        return math.isfinite(value)
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return bool(np.isfinite(value).all())
    return True


def flat(value: Any) -> list:
    """The tensors of a (nested) output, in order."""
    import torch

    if isinstance(value, dict):
        return [t for v in value.values() for t in flat(v)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flat(v)]
    return [value] if isinstance(value, torch.Tensor) else []


def shape_of(value: Any) -> Any:
    """The shapes of a (nested) output, for the report."""
    import torch

    if isinstance(value, (tuple, list)):
        return [shape_of(v) for v in value]
    if isinstance(value, torch.Tensor):
        return list(value.shape)
    return type(value).__name__


def model_train(model: Any, data: Any, extra_callbacks: tuple = ()) -> list[float]:
    """``model.train(1, data)`` (no sink mode) with a loss recorder; the losses per step."""
    recorder = loss_recorder()
    model.train(1, data, callbacks=[recorder, *extra_callbacks], dataset_sink_mode=False)
    return recorder.losses


def import_train_py(module: str = "train") -> str:
    """Import the project's ``train.py`` as a module (its ``__main__`` block does not run):
    "ok", or the first error, for the imports level's record."""
    import importlib

    try:
        importlib.import_module(module)
    except BaseException as exc:  # argparse exits, anything
        return f"{type(exc).__name__}: {str(exc)[:300]}"
    return "ok"


def recording_model(model_class: Any, sink: bool | None = None) -> tuple[Any, Any]:
    """A subclass of ``model_class`` (``jisu.Model``) whose ``train`` adds a loss recorder to the
    callbacks (``sink``: force ``dataset_sink_mode``), and the recorder: put it in place of
    ``Model`` in a project module to run the project's own train function unchanged."""
    recorder = loss_recorder()

    class RecordingModel(model_class):
        def train(self, epoch, train_dataset, callbacks=None, dataset_sink_mode=False, **kw):
            callbacks = (
                list(callbacks or [])
                if isinstance(callbacks, (list, tuple))
                else ([callbacks] if callbacks is not None else [])
            )
            sink_mode = dataset_sink_mode if sink is None else sink
            recorder.model = self
            return super().train(
                epoch,
                train_dataset,
                callbacks=[recorder, *callbacks],
                dataset_sink_mode=sink_mode,
                **kw,
            )

    return RecordingModel, recorder
