"""MindSpore's (and NumPy's) negative-step slices on tensors: ``x[:, ::-1]``.

jisu's tensors are torch tensors, whose indexing refuses a negative step ("step must be greater
than zero"); the model zoo reverses axes this way (official/cv/RetinaFace_ResNet50's
MultiBoxLoss: ``relative_position[:, ::-1]``). :func:`install` wraps ``torch.Tensor.__getitem__``
so that a key holding a negative-step slice selects those positions (``index_select`` of
``range(*slice.indices(size))`` along the slice's dimension) before torch indexes the rest; a
key without one goes straight to torch's own indexing (the wrapper adds one ``try``)."""

from __future__ import annotations

from typing import Any

import torch


def _dims_taken(item: Any) -> int:
    """How many dimensions of the tensor an index entry consumes."""
    if item is None:
        return 0
    if isinstance(item, torch.Tensor) and item.dtype == torch.bool:
        return max(item.dim(), 1)
    return 1


def _reverse_slices(x: torch.Tensor, key: Any) -> tuple[torch.Tensor, Any] | None:
    """``x`` with each negative-step slice of ``key`` applied, and the key left to torch; None
    when ``key`` has no negative-step slice."""
    items = list(key) if isinstance(key, tuple) else [key]
    if not any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in items):
        return None
    explicit = sum(_dims_taken(k) for k in items if k is not Ellipsis)
    dim = 0
    for i, k in enumerate(items):
        if k is Ellipsis:
            dim += x.dim() - explicit
            continue
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            positions = range(*k.indices(x.shape[dim]))
            x = x.index_select(dim, torch.tensor(positions, dtype=torch.long, device=x.device))
            items[i] = slice(None)
        dim += _dims_taken(k)
    return x, tuple(items)


def install() -> None:
    """Give ``torch.Tensor`` indexing MindSpore's negative-step slices (idempotent)."""
    original = torch.Tensor.__getitem__
    if getattr(original, "_jisu_original", None) is not None:
        return

    def __getitem__(self: torch.Tensor, key: Any) -> Any:
        try:
            return original(self, key)
        except ValueError as exc:
            if "step must be greater than zero" not in str(exc):
                raise
            done = _reverse_slices(self, key)
            if done is None:
                raise
            return original(*done)

    __getitem__._jisu_original = original  # type: ignore[attr-defined]
    torch.Tensor.__getitem__ = __getitem__  # type: ignore[method-assign]
