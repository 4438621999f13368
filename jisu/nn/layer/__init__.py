"""MindSpore's layers (``mindspore.nn`` layers) as thin torch modules."""

__all__: list[str] = []
