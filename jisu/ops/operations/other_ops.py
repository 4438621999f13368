"""MindSpore's ``mindspore.ops.operations.other_ops`` on torch."""

from __future__ import annotations

__all__: list[str] = []
