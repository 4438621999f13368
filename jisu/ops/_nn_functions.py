"""MindSpore's functional ``ops`` of neural networks, images and random numbers
(``ops.interpolate``, ``ops.standard_normal``, ...) on torch."""

from __future__ import annotations

__all__: list[str] = []
