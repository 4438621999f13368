"""MindSpore's graph helpers in the ``ops`` namespace (``depend``, ``partial``, ``stop_gradient``,
``identity``, ``tuple_to_array``, ...), eager on torch."""

from __future__ import annotations

__all__: list[str] = []
