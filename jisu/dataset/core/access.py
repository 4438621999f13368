"""The random-access kind of pipeline node (see :mod:`jisu.dataset.datasets`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .position import position

if TYPE_CHECKING:
    import numpy as np

    from ..engine.context import ExecContext


class RandomAccess:
    """The random-access kind of node: row ``index`` of an epoch is computed on its own.

    The engine never streams such a node: it runs it, with the random-access nodes below it, as
    one fetch stage (``engine/plan.py``). Subclasses are the random-access kernels of an op,
    mixed into its ``Indexed`` variant (see the module docstring).
    """

    def _fetch(self, ctx: ExecContext, epoch: int, index: int) -> tuple:
        """Row ``index`` of ``epoch``."""
        raise NotImplementedError  # every random-access kernel defines it

    def _fetch_columns(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> list | None:
        """Rows ``indices`` as stacked column arrays, if this node can gather them at once."""
        return None

    def fetch_rows(self, ctx: ExecContext, epoch: int, indices: list[int]) -> list[tuple]:
        """Task of a fetch stage: rows ``indices`` of ``epoch``."""
        here, rows = position(), []
        for i in indices:
            here.at(self, epoch, i)
            rows.append(self._fetch(ctx, epoch, i))
        return rows


def is_random_access(node: Any) -> bool:
    """Whether ``node`` computes rows by index (its type says so)."""
    return isinstance(node, RandomAccess)
