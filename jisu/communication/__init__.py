"""MindSpore's ``mindspore.communication``: ``init``, ``get_rank``, ``get_group_size`` over
``torch.distributed`` (:mod:`jisu.distributed`)."""

from .management import GlobalComm, get_group_size, get_local_rank, get_rank, init, release

__all__ = ["GlobalComm", "get_group_size", "get_local_rank", "get_rank", "init", "release"]
