"""MindSpore's ``mindspore.ops.operations.comm_ops`` on torch."""

from __future__ import annotations

__all__: list[str] = []
