"""MindSpore's ``mindspore.ops.composite`` (imported ``as C``): ``GradOperation``, ``HyperMap``,
``MultitypeFuncGraph``, ``clip_by_global_norm``, ... on torch autograd."""

from __future__ import annotations

__all__: list[str] = []
