"""MindSpore's ``mindspore.ops.operations.image_ops`` on torch."""

from __future__ import annotations

__all__: list[str] = []
