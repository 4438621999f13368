"""MindSpore's ``GradOperation`` over torch autograd.

``C.GradOperation(get_all, get_by_list, sens_param)(network, weights)`` is a function of the
network's inputs (and, with ``sens_param``, the gradient of the output last) that returns the
gradients MindSpore returns: of the first input (a tensor), of all inputs (``get_all``: a
tuple), of ``weights`` (``get_by_list``: a tuple), or both (``((inputs), (weights))``).

A train cell written for MindSpore runs the network, then asks for its gradients with the
same inputs::

    loss = self.network(*inputs)
    grads = self.grad(self.network, self.weights)(*inputs, sens)

As MindSpore's PyNative mode does, the second call does not run the network again when the
first forward pass can serve: gradients with respect to weights only, the same network
called with the very same inputs, in grad mode, and no parameter or input changed since (their
version counters say so). Its autograd graph is then used once and released. Otherwise the
network runs again under ``torch.enable_grad()``.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

import torch

from ..operations.float_status_ops import record_gradients

#: network -> what its last forward pass in grad mode left (see _Forward)
_LAST_FORWARD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Forward:
    """A forward pass kept for reuse: weak references to its inputs and outputs, and the
    version counters of the inputs and the network's parameters when it ran."""

    def __init__(self, module: torch.nn.Module, args: tuple, output: Any) -> None:
        self.training = module.training
        self.args = [_ref(a) for a in args]
        self.arg_versions = [a._version if isinstance(a, torch.Tensor) else None for a in args]
        self.param_versions = [p._version for p in module.parameters()]
        self.structure, leaves = _flatten(output)
        self.outputs = [_ref(x) for x in leaves]

    def matches(self, module: torch.nn.Module, args: tuple) -> bool:
        if module.training != self.training or len(args) != len(self.args):
            return False
        for a, ref, version in zip(args, self.args, self.arg_versions):
            if isinstance(a, torch.Tensor):
                if ref() is not a or a._version != version:
                    return False
            elif ref() is not a and not _equal(ref(), a):
                return False
        versions = [p._version for p in module.parameters()]
        return versions == self.param_versions

    def output(self) -> Any:
        leaves = [ref() for ref in self.outputs]
        if any(x is _DEAD for x in leaves):
            return _DEAD
        return _unflatten(self.structure, iter(leaves))


_DEAD = object()


class _Strong:
    """A 'reference' to a value that weakref cannot hold (numbers, strings, None)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


def _ref(x: Any) -> Callable[[], Any]:
    if isinstance(x, torch.Tensor):
        ref = weakref.ref(x)
        return lambda: _DEAD if ref() is None else ref()
    return _Strong(x)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False


def _flatten(x: Any) -> tuple[Any, list]:
    """(structure, leaves) of nested tuples/lists."""
    if isinstance(x, (tuple, list)):
        parts = [_flatten(item) for item in x]
        return (type(x), [s for s, _ in parts]), [leaf for _, ls in parts for leaf in ls]
    return None, [x]


def _unflatten(structure: Any, leaves: Any) -> Any:
    if structure is None:
        return next(leaves)
    kind, items = structure
    return kind(_unflatten(s, leaves) for s in items)


def _remember_forward(module: torch.nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
    if kwargs or not torch.is_grad_enabled():
        _LAST_FORWARD.pop(module, None)
        return
    _, leaves = _flatten(output)
    if not any(isinstance(x, torch.Tensor) and x.grad_fn is not None for x in leaves):
        _LAST_FORWARD.pop(module, None)
        return
    _LAST_FORWARD[module] = _Forward(module, args, output)


def track_forward(module: Any) -> None:
    """Keep ``module``'s forward passes in grad mode for :class:`GradOperation` to reuse (a
    forward hook, installed once)."""
    if not isinstance(module, torch.nn.Module) or getattr(module, "_jisu_tracks_forward", False):
        return
    module.register_forward_hook(_remember_forward, with_kwargs=True)
    object.__setattr__(module, "_jisu_tracks_forward", True)


def _weights(owner: str, weights: Any) -> tuple[list[torch.Tensor], bool]:
    """(the parameters, whether one was given alone)."""
    if weights is None:
        raise TypeError(f"{owner}: get_by_list=True needs the weights (a ParameterTuple)")
    if isinstance(weights, torch.Tensor):
        return [weights], True
    params = list(weights)
    for p in params:
        if not isinstance(p, torch.Tensor):
            raise TypeError(
                f"{owner}: weights must be parameters (a ParameterTuple, a tuple or a list). "
                f"Received an element of type {type(p).__name__}"
            )
    return params, False


def _pair_sens(owner: str, outputs: list, sens: list | None) -> tuple[list, list]:
    """The differentiable outputs and their output gradients (sens cast and shaped to them;
    ones without sens)."""
    outs, grads = [], []
    if sens is not None and len(sens) != len(outputs):
        raise ValueError(
            f"{owner}: the network returned {len(outputs)} outputs but sens has {len(sens)}"
        )
    for i, out in enumerate(outputs):
        if not isinstance(out, torch.Tensor) or (out.grad_fn is None and not out.requires_grad):
            continue
        if sens is None:
            g = torch.ones_like(out)
        else:
            g = torch.as_tensor(sens[i], device=out.device).to(out.dtype)
            if g.shape != out.shape:
                g = g.reshape(out.shape) if g.numel() == out.numel() else g.expand(out.shape)
        outs.append(out)
        grads.append(g)
    return outs, grads


def _differentiate(
    output: Any, sens: list | None, targets: list, create_graph: bool = False
) -> Any:
    """The gradients of ``output`` (sens as its output gradients) for ``targets``; with
    ``create_graph``, gradients that can be differentiated again."""
    _, outputs = _flatten(output)
    outs, out_grads = _pair_sens("GradOperation", outputs, sens)
    if not (outs and targets):
        return [None] * len(targets)
    return torch.autograd.grad(
        outs, targets, out_grads, allow_unused=True, create_graph=create_graph
    )


def _inside_cell() -> bool:
    """Whether the caller runs inside a Cell's forward (a ``construct``), not at top level."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "forward" and frame.f_globals.get("__name__") == "jisu.nn.cell":
            return True
        frame = frame.f_back
    return False


def _higher_order(fn: Callable, params: list, args: list, positions: range) -> bool:
    """Whether input gradients may be differentiated again: asked in grad mode inside a
    cell's construct, with trainable parameters of ``fn`` not among ``params`` or inputs
    that carry autograd history (a gradient penalty: ``GradOperation()(critic)(x)`` inside a
    loss that a train cell differentiates for the critic's weights, as MindSpore's
    higher-order grads do)."""
    if not torch.is_grad_enabled():
        return False
    if any(isinstance(args[i], torch.Tensor) and args[i].requires_grad for i in positions):
        return _inside_cell()
    if not isinstance(fn, torch.nn.Module):
        return False
    asked = {id(p) for p in params}
    others = any(p.requires_grad and id(p) not in asked for p in fn.parameters())
    return others and _inside_cell()


def forget_forward(module: Any) -> None:
    """Drop ``module``'s kept forward pass (its graph was used by a backward pass)."""
    _LAST_FORWARD.pop(module, None)


class GradOperation:
    """MindSpore's gradient operation: ``GradOperation(...)(fn, weights)(*inputs[, sens])``.

    Args:
        get_all: gradients of every tensor input (a tuple), not only of the first.
        get_by_list: gradients of ``weights`` (a tuple, one per parameter; zeros for a
            parameter the output does not reach, as in MindSpore).
        sens_param: the last input (or the keyword ``sens``) is the gradient of the output
            (a tensor, or a tuple of tensors for a network returning a tuple); without it,
            ones.

    Integer inputs get zero gradients of their dtype. The gradients are new tensors with no
    autograd history, except input gradients asked in grad mode inside a cell's construct, of
    a network with other trainable parameters (or of inputs with history): those can be
    differentiated again, as a gradient penalty needs. ``.grad`` of the parameters is left
    untouched.

    Raises:
        TypeError: a flag that is not a bool; ``get_by_list`` without weights.
    """

    def __init__(self, get_all: bool = False, get_by_list: bool = False,
                 sens_param: bool = False) -> None:  # fmt: skip
        for name, value in (("get_all", get_all), ("get_by_list", get_by_list),
                            ("sens_param", sens_param)):  # fmt: skip
            if not isinstance(value, bool):
                raise TypeError(f"GradOperation: {name} must be a bool. Received {name}={value!r}")
        self.get_all = get_all
        self.get_by_list = get_by_list
        self.sens_param = sens_param
        self._cached: tuple | None = None

    def __call__(self, fn: Callable, weights: Any = None) -> Callable:
        if not callable(fn):
            raise TypeError(f"GradOperation: fn must be callable. Received {type(fn).__name__}")
        key = (id(fn), id(weights))
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        track_forward(fn)
        params, alone = _weights("GradOperation", weights) if self.get_by_list else ([], False)

        def after_grad(*args: Any, **kwargs: Any) -> Any:
            return self._grad(fn, params, alone, args, kwargs)

        self._cached = (key, after_grad, fn, weights)  # fn and weights held: ids stay theirs
        return after_grad

    def _grad(self, fn: Callable, params: list, alone: bool, args: tuple, kwargs: dict) -> Any:
        sens = None
        if self.sens_param:
            if "sens" in kwargs:
                kwargs = dict(kwargs)
                sens = kwargs.pop("sens")
            elif args:
                sens, args = args[-1], args[:-1]
            else:
                raise TypeError("GradOperation: sens_param=True needs the sens argument")
        want_inputs = self.get_all or not self.get_by_list
        positions = range(len(args)) if self.get_all else range(min(1, len(args)))
        if want_inputs and not positions:
            raise TypeError("GradOperation: the network has no input to differentiate")
        args = list(args)
        leaves: dict[int, torch.Tensor] = {}
        create_graph = want_inputs and _higher_order(fn, params, args, positions)
        if want_inputs:
            for i in positions:
                a = args[i]
                if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex()):
                    # a view keeps an input's history for a higher-order gradient
                    kept = create_graph and a.requires_grad
                    args[i] = leaves[i] = a.view_as(a) if kept else a.detach().requires_grad_()
        sens_leaves = None
        if sens is not None:
            sens_leaves = _flatten(sens)[1] if isinstance(sens, (tuple, list)) else [sens]
        targets = list(leaves.values()) + [p for p in params if p.requires_grad]
        found = None
        last = _LAST_FORWARD.pop(fn, None) if isinstance(fn, torch.nn.Module) else None
        if last is not None and not want_inputs and not kwargs and last.matches(fn, tuple(args)):
            output = last.output()  # the caller's forward pass, reused (see the module)
            if output is not _DEAD:
                try:
                    found = _differentiate(output, sens_leaves, targets)
                except RuntimeError:  # its graph was already consumed: run the network again
                    found = None
        if found is None:
            with torch.enable_grad():
                output = fn(*args, **kwargs)
            _LAST_FORWARD.pop(fn, None)  # this pass is consumed below, never reused
            found = _differentiate(output, sens_leaves, targets, create_graph)
        by_id = {id(t): g for t, g in zip(targets, found)}
        input_grads = []
        for i in positions:
            a = args[i]
            if i in leaves:
                g = by_id[id(leaves[i])]
                input_grads.append(torch.zeros_like(a) if g is None else g)
            elif isinstance(a, torch.Tensor):
                input_grads.append(torch.zeros_like(a))
        weight_grads = [
            torch.zeros_like(p) if by_id.get(id(p)) is None else by_id[id(p)] for p in params
        ]
        record_gradients(input_grads + weight_grads)
        inputs_out: Any = tuple(input_grads) if self.get_all else input_grads[0]
        weights_out: Any = weight_grads[0] if alone else tuple(weight_grads)
        if self.get_by_list and want_inputs:
            return inputs_out, weights_out
        return weights_out if self.get_by_list else inputs_out
