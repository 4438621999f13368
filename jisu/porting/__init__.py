"""Porting a MindSpore project to jisu: the import rewrite (``mindspore`` -> ``jisu`` where it
starts a dotted path in code), device targets in configs, and a check of every MindSpore name the
project uses against what jisu provides. ``jisu port SRC DST`` runs them (:mod:`.project`).
"""

from .names import NameUse, names_in_source, resolve
from .project import PortReport, port_project
from .rewrite import force_device_config, rewrite_source, rewrite_tree

__all__ = [
    "NameUse",
    "PortReport",
    "force_device_config",
    "names_in_source",
    "port_project",
    "resolve",
    "rewrite_source",
    "rewrite_tree",
]
