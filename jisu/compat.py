"""Helpers for code ported from MindSpore as it stands.

MindSpore's tensors have ``asnumpy()``, ``astype()``, ``expand_dims()``, NumPy-style
``transpose(*axes)`` and reductions with ``axis=``/``keep_dims=``, and ported code calls them on
every tensor it gets. jisu's tensors are plain ``torch.Tensor`` s, so :func:`install_tensor_methods`
adds those methods to ``torch.Tensor`` (see :mod:`jisu.common.tensor_methods` for the list and the
rule: new names, or forms torch rejects; torch's own call forms keep torch's results). No tensor
subclass: a subclass would route every torch op through ``__torch_function__`` (measured 5x
slower per op); the patched methods cost one Python call on the methods they extend only
(``benchmarks/tensor_methods.py`` measures the training step with and without them).

``import jisu`` installs them; :func:`add_asnumpy` is the older name of the same call.
"""

from __future__ import annotations


def install_tensor_methods() -> None:
    """Give ``torch.Tensor`` MindSpore's tensor methods (idempotent; cheap to call again)."""
    from .common import tensor_methods

    tensor_methods.install()


def add_asnumpy() -> None:
    """Give ``torch.Tensor`` an ``asnumpy()`` method, with the rest of MindSpore's tensor
    methods (:func:`install_tensor_methods`)."""
    install_tensor_methods()
