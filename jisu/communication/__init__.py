"""MindSpore's ``mindspore.communication``: ``init``, ``get_rank``, ``get_group_size`` over
``torch.distributed`` (:mod:`jisu.distributed`)."""

from .management import (
    GlobalComm,
    create_group,
    destroy_group,
    get_group,
    get_group_rank_from_world_rank,
    get_group_size,
    get_local_rank,
    get_rank,
    get_world_rank_from_group_rank,
    init,
    release,
)

__all__ = [
    "GlobalComm",
    "create_group",
    "destroy_group",
    "get_group",
    "get_group_rank_from_world_rank",
    "get_group_size",
    "get_local_rank",
    "get_rank",
    "get_world_rank_from_group_rank",
    "init",
    "release",
]
