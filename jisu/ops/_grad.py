"""MindSpore's ``value_and_grad`` and ``grad`` over torch autograd."""

from __future__ import annotations

from typing import Any

import torch

from .operations.float_status_ops import record_gradients


def value_and_grad(
    fn: Any, grad_position: Any = 0, weights: Any = None, has_aux: bool = False
) -> Any:
    """MindSpore's ``value_and_grad``: a function returning ``(fn(*inputs), grads)``.

    ``grads`` are the gradients of ``fn``'s first output with respect to the inputs at
    ``grad_position`` (an int, a tuple, or None for none) and/or to ``weights`` (a tuple of
    parameters, e.g. ``optimizer.parameters``): one of them alone, or ``(inputs, weights)``
    when both are asked, as MindSpore returns them. ``has_aux``: ``fn`` returns
    ``(loss, *aux)``; only the loss is differentiated. The article's loop::

        grad_fn = jisu.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)
        (loss, logits), grads = grad_fn(data, label)
        optimizer(grads)
    """
    positions = (grad_position,) if isinstance(grad_position, int) else grad_position
    params = None if weights is None else tuple(weights)
    if positions is None and params is None:
        raise ValueError("value_and_grad: grad_position and weights cannot both be None")

    def wrapped(*inputs: Any) -> Any:
        inputs = list(inputs)
        for i in positions or ():
            inputs[i] = inputs[i].detach().requires_grad_(True)
        with torch.enable_grad():
            value = fn(*inputs)
            loss = value[0] if has_aux else value
            targets = [inputs[i] for i in positions or ()] + list(params or ())
            grads = torch.autograd.grad(loss, targets, allow_unused=True)
        grads = tuple(torch.zeros_like(t) if g is None else g for g, t in zip(grads, targets))
        record_gradients(grads)  # the NPU float-status idiom (operations.float_status_ops)
        n = len(positions or ())
        inputs_grads = grads[:n] if not isinstance(grad_position, int) else grads[0]
        if params is None:
            out = inputs_grads
        elif positions is None:
            out = grads[n:]
        else:
            out = (inputs_grads, grads[n:])
        if has_aux:
            value = tuple(v.detach() if isinstance(v, torch.Tensor) else v for v in value)
        else:
            value = value.detach()
        return value, out

    return wrapped


def grad(fn: Any, grad_position: Any = 0, weights: Any = None, has_aux: bool = False) -> Any:
    """MindSpore's ``grad``: the gradients only (see :func:`value_and_grad`)."""
    both = value_and_grad(fn, grad_position, weights, has_aux)

    def wrapped(*inputs: Any) -> Any:
        value, grads = both(*inputs)
        return (grads, value[1:]) if has_aux else grads

    return wrapped
