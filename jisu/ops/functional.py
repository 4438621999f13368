"""MindSpore's ``mindspore.ops.functional`` (imported ``as F``): ready-made primitive instances and
graph helpers (``F.shape``, ``F.cast``, ``F.depend``, ``F.partial``, ...)."""

from __future__ import annotations
