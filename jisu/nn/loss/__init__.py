"""MindSpore's losses with MindSpore's arguments, as torch modules."""

__all__: list[str] = []
