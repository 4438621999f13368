"""MindSpore's ``RowTensor``: a sparse gradient as (indices, values, dense_shape).

MindSpore hands gradients of embedding lookups to optimizers as ``RowTensor``s, and the zoo's
gradient clipping and loss scaling register a ``"RowTensor"`` case beside the ``"Tensor"`` one
(``@_grad_scale.register("Tensor", "RowTensor")``) that rebuilds one with scaled values. torch's
autograd gives dense gradients, so jisu never makes one by itself; the class is here so that such
scripts import, and so that a ``RowTensor`` built by hand behaves as MindSpore's: rows
``indices`` of a tensor of shape ``dense_shape`` hold ``values`` (the other rows are zero).
"""

from __future__ import annotations

from typing import Any

import torch


class RowTensor:
    """Rows ``indices`` (1-D int tensor) of a ``dense_shape`` tensor, holding ``values``
    (``values.shape[0] == len(indices)``, ``values.shape[1:] == dense_shape[1:]``).

    As MindSpore's, it can also be built from another ``RowTensor`` (``RowTensor(row_tensor=
    other)``, a copy). ``to_dense()`` scatters the rows into zeros, summing repeated indices
    (what the dense gradient of a lookup with repeated ids is)."""

    def __init__(
        self,
        indices: Any = None,
        values: Any = None,
        shape: Any = None,
        row_tensor: RowTensor | None = None,
    ) -> None:
        if row_tensor is not None:
            if not isinstance(row_tensor, RowTensor):
                raise TypeError(
                    f"RowTensor: row_tensor must be a RowTensor. Received {type(row_tensor)}"
                )
            indices, values, shape = row_tensor.indices, row_tensor.values, row_tensor.dense_shape
        if indices is None or values is None or shape is None:
            raise ValueError("RowTensor: give indices, values and shape (or row_tensor)")
        self.indices = torch.as_tensor(indices)
        self.values = torch.as_tensor(values)
        self.dense_shape = tuple(int(d) for d in shape)
        if self.indices.dim() != 1:
            raise ValueError(
                f"RowTensor: indices must be 1-D. Received shape {tuple(self.indices.shape)}"
            )
        if self.values.shape[0] != self.indices.shape[0] or (
            tuple(self.values.shape[1:]) != self.dense_shape[1:]
        ):
            raise ValueError(
                f"RowTensor: values of shape {tuple(self.values.shape)} do not fit "
                f"{self.indices.shape[0]} indices into a tensor of shape {self.dense_shape}"
            )

    def to_dense(self) -> torch.Tensor:
        """The dense tensor of shape ``dense_shape`` (rows not in ``indices`` are zero)."""
        dense = self.values.new_zeros(self.dense_shape)
        return dense.index_add_(0, self.indices.long(), self.values)

    def __repr__(self) -> str:
        return (
            f"RowTensor(indices={self.indices}, values={self.values}, "
            f"dense_shape={self.dense_shape})"
        )
