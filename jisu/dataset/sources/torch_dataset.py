"""TorchDataset: use a ``torch.utils.data.Dataset`` (map-style or iterable) as a source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .generator import GeneratorDataset, is_indexable


def _item_columns(item: Any) -> list[str]:
    if isinstance(item, dict):
        return [str(k) for k in item]
    if isinstance(item, (tuple, list)):
        return [f"column_{i}" for i in range(len(item))]
    return ["column_0"]


def _map_style(dataset: Any) -> bool:
    """Whether a torch dataset is map-style (read by index), not an ``IterableDataset``."""
    import torch.utils.data

    return is_indexable(dataset) and not isinstance(dataset, torch.utils.data.IterableDataset)


class _TorchSource:
    """Random-access wrapper turning dict items into tuples in column order."""

    def __init__(self, dataset: Any, columns: Sequence[str]) -> None:
        self.dataset = dataset
        self.columns = list(columns)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> Any:
        item = self.dataset[index]
        if isinstance(item, dict):
            return tuple(item[c] for c in self.columns)
        return tuple(item) if isinstance(item, list) else item


class _TorchIterable:
    """Iterable wrapper turning dict items into tuples in column order."""

    def __init__(self, dataset: Any, columns: Sequence[str]) -> None:
        self.dataset = dataset
        self.columns = list(columns)

    def __iter__(self):
        for item in self.dataset:
            if isinstance(item, dict):
                yield tuple(item[c] for c in self.columns)
            else:
                yield tuple(item) if isinstance(item, list) else item


class TorchDataset(GeneratorDataset):
    """A jisu source reading a PyTorch dataset; tensors become NumPy arrays without a copy.

    Map-style datasets (``__getitem__`` + ``__len__``) are random-access: read in parallel by
    index, shuffled by permutation, sharded. ``IterableDataset``s are streams. Items may be a
    tensor, a tuple/list of values or a dict; column names default to the dict's keys or
    ``column_0``, ``column_1``, ... (found by reading the first item).

    Example:
        >>> data = ds.TorchDataset(torchvision_style_dataset, ["image", "label"])
    """

    @classmethod
    def _random_access(cls, dataset: Any = None, *args: Any, **kwargs: Any) -> bool:
        return _map_style(dataset) and not cls._drops_failed_reads()

    def __init__(self, dataset: Any, column_names: Sequence[str] | None = None, **kwargs: Any):
        random_access = _map_style(dataset)
        if column_names is None:
            first = dataset[0] if random_access else next(iter(dataset))
            column_names = _item_columns(first)
        wrapper = (_TorchSource if random_access else _TorchIterable)(dataset, column_names)
        super().__init__(wrapper, column_names, **kwargs)
