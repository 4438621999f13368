"""MindSpore's ``mindspore.ops.operations.random_ops`` on torch."""

from __future__ import annotations

__all__: list[str] = []
