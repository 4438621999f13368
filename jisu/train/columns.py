"""How messages name and describe a batch's columns, and the error for a column that is not a
tensor (strings, bytes, objects: ``jisu convert``'s ``file_name``).

Shared by the feeder (:func:`column_error`, on a conversion's failure path only: it costs
nothing when columns convert) and the first-step checks (:mod:`jisu.train.first_step`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch


def column_names(dataset: Any) -> list[str] | None:
    """The dataset's column names (``dataset.get_col_names()``), or None when it has none."""
    get = getattr(dataset, "get_col_names", None)
    if get is None:
        return None
    try:
        names = list(get())
    except Exception:  # a name lookup must never hide the error being explained
        return None
    return names if all(isinstance(n, str) for n in names) else None


def names_for(count: int, names: Sequence[str] | None) -> list[str]:
    """How messages name each of ``count`` columns: ``'image'``, or ``column 0`` unnamed."""
    if names is not None and len(names) == count:
        return [repr(n) for n in names]
    return [f"column {i}" for i in range(count)]


def column_ref(label: str) -> str:
    """``column 'image'`` (or ``column 0``) in prose."""
    return label if label.startswith("column ") else f"column {label}"


def column_arg(label: str) -> str:
    """The column as an argument in a suggested call (``'image'``, or ``...`` unnamed)."""
    return "..." if label.startswith("column ") else label


def _kind_of(value: Any) -> str | None:
    """What makes ``value`` (a batch's column) not a tensor: "strings", "bytes", "Python
    objects", or None when it is numeric."""
    if isinstance(value, (np.ndarray, np.generic)):
        kind = np.asarray(value).dtype.kind
        return {"U": "strings", "S": "bytes", "O": "Python objects", "V": "records"}.get(kind)
    if isinstance(value, str):
        return "strings"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, (list, tuple)) and value:
        return _kind_of(value[0]) if not torch.is_tensor(value[0]) else None
    return None


def _dtype_text(value: Any) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        return f"numpy.{np.asarray(value).dtype.type.__name__}, shape {np.shape(value)}"
    return type(value).__name__


def column_error(op: str, batch: Any, failed: int, names: Sequence[str] | None) -> TypeError | None:
    """The error for a batch whose column ``failed`` (its index) did not convert to a tensor:
    it names every column of strings, bytes or objects and how to drop them. None when column
    ``failed`` is numeric (the conversion failed for another reason: keep its error).

    Called on the conversion's failure path only, so it costs nothing when columns convert.
    """
    if isinstance(batch, dict):
        names, batch = list(batch), list(batch.values())
    elif torch.is_tensor(batch) or isinstance(batch, np.ndarray):
        batch = [batch]
    batch = list(batch)
    if not 0 <= failed < len(batch) or _kind_of(batch[failed]) is None:
        return None
    if names is not None and len(names) != len(batch):
        names = None
    labels = names_for(len(batch), names)
    bad = [i for i, value in enumerate(batch) if _kind_of(value) is not None]
    what = ", ".join(
        f"{column_ref(labels[i])} holds {_kind_of(batch[i])} ({_dtype_text(batch[i])})" for i in bad
    )
    keep = [n for i, n in enumerate(names or []) if i not in bad]
    project = f"dataset.project({keep!r})" if keep else "dataset.project([...])"
    text = (
        f"{op}: {what}: Model hands every column to the network or the loss as a "
        "tensor, and torch has no tensors of strings or objects. Drop it: "
        f"dataset = {project} (the numeric columns, the label last), or turn it into "
        f"numbers with dataset.map(fn, input_columns={column_arg(labels[bad[0]])})."
    )
    if names is not None and "file_name" in [names[i] for i in bad]:
        text += (
            " The records `jisu convert` writes carry a 'file_name' column (each image's file "
            "name): project it away as above."
        )
    return TypeError(text)


def shape_of(t: Any) -> str:
    return str(tuple(t.shape)) if torch.is_tensor(t) else type(t).__name__


def dtype_of(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.") if torch.is_tensor(t) else ""


def describe_columns(
    tensors: Sequence[Any], names: Sequence[str] | None, label_to_network: bool = False
) -> str:
    """Which columns went where, e.g. ``inputs = all but the last: 'image' (64, 3, 32, 32)
    float32, label = the last: 'label' (64,) int64``; with ``label_to_network`` (a Model
    without ``loss_fn``) every column is an input of the network."""
    labels = names_for(len(tensors), names)
    cols = [f"{n} {shape_of(t)} {dtype_of(t)}".rstrip() for n, t in zip(labels, tensors)]
    if label_to_network:
        return "network inputs = every column (loss_fn is None): " + ", ".join(cols)
    text = "inputs = all but the last: " + (", ".join(cols[:-1]) or "none")
    return f"{text}, label = the last: {cols[-1]}"
