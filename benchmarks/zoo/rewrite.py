"""The harness's import rewrite is ``jisu port``'s (:mod:`jisu.porting.rewrite`): ``mindspore``
becomes ``jisu`` where it starts a dotted path in code; device targets are forced to CPU."""

from jisu.porting.rewrite import force_cpu_config, rewrite_source, rewrite_tree

__all__ = ["force_cpu_config", "rewrite_source", "rewrite_tree"]
