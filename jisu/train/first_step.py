"""First-step checks: the first batch against the network, explained when they do not fit.

``Model`` feeds ``network(*batch[:-1])`` and ``loss_fn(output, batch[-1])`` (``network(*batch)``
when ``loss_fn`` is None). When a pipeline and a network disagree, PyTorch's own error names
neither the columns nor the fix (``forward() takes 2 positional arguments but 3 were given``,
``can't convert np.ndarray of type numpy.str_``, a conv's channel count, ``TrainStep: forward_fn
must return a scalar loss``). This module turns those errors, at the first step only, into one
that says which columns went where, names the offending column or argument and the likely fix
(``dataset.project``, ``.batch``, ``vision.HWC2CHW``, ``reduction="mean"``).

Cost: nothing on a pipeline that fits. A column that is not numeric is found when its
conversion to a tensor fails (:func:`~jisu.train.columns.column_error`, called by the feeder's
``except`` path); the train step is watched for its first call only (:class:`FirstStepCheck`
puts itself in the epoch loop's place and puts the step back before calling it; evaluation's
step likewise), and only a failure of that call
pays for the diagnosis: a re-run of the network, then the loss, on the same batch without
gradients, with the network's buffers (BatchNorm statistics) and the random generators restored
after, to find which of the two failed and the loss's shape. An error the re-run does not
reproduce (in the backward, the optimizer), any error after the first step, and any error that
is not a ``TypeError``/``ValueError``/``RuntimeError``/``IndexError`` (out of memory, an
interrupt) propagate unchanged. An explained error has the original's type and is raised
``from`` it, so the original traceback is printed too.

GRAPH_MODE: a :class:`~jisu.train.steps.CompiledStep` whose first (compiling) call fails warns
"torch.compile failed" and redoes the step eagerly. When the eager step fails too, the error
is the batch's or the network's, not compilation's: that warning is dropped and the explained
error raised. When the eager step succeeds, the warning is shown as usual.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from .columns import (
    column_arg,
    column_ref,
    describe_columns,
    dtype_of,
    names_for,
    shape_of,
)

#: the exception types a first-step failure is explained for (others propagate unchanged)
_EXPLAINED = (TypeError, ValueError, RuntimeError, IndexError)
_CONVS = (
    nn.Conv1d,
    nn.Conv2d,
    nn.Conv3d,
    nn.ConvTranspose1d,
    nn.ConvTranspose2d,
    nn.ConvTranspose3d,
)
_COMPILE_WARNING = "GRAPH_MODE: torch.compile failed"
#: column names taken for the label when suggesting which columns to keep
_LABEL_NAMES = {"label", "labels", "target", "targets", "y"}


# ---------------------------------------------------------------------------- the network
def _unwrap(network: Any) -> Any:
    """The user's module inside jisu's and torch's wrappers (mixed precision, DDP, compile):
    the one whose ``forward`` signature and layers tell what it takes."""
    from ..amp import MixedPrecisionNetwork

    for _ in range(8):
        if isinstance(network, MixedPrecisionNetwork):
            network = network.network
        elif isinstance(network, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
            network = network.module
        elif type(network).__name__ == "OptimizedModule" and hasattr(network, "_orig_mod"):
            network = network._orig_mod
        else:
            break
    return network


def _callable_name(network: Any) -> str:
    return f"{type(network).__name__}.forward" if isinstance(network, nn.Module) else repr(network)


def _arity(network: Any, count: int) -> str | None:
    """Why ``network(*count inputs)`` cannot bind, from its ``forward`` signature; None when
    it can (or the signature is unknown)."""
    try:
        signature = inspect.signature(getattr(network, "forward", network))
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*range(count))
        return None
    except TypeError:
        pass
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = [p for p in signature.parameters.values() if p.kind in kinds]
    required = [p.name for p in params if p.default is inspect.Parameter.empty]
    takes = f"{len(required)}" if len(required) == len(params) else f"{len(required)}-{len(params)}"
    args = ", ".join(p.name for p in params)
    return f"{_callable_name(network)}({args}) takes {takes} input{'' if takes == '1' else 's'}"


def _first_conv(network: Any) -> tuple[str, nn.Module] | None:
    if not isinstance(network, nn.Module):
        return None
    return next(((n, m) for n, m in network.named_modules() if isinstance(m, _CONVS)), None)


def _layout_fix(
    inputs: Sequence[Any], labels: Sequence[str], label: Any, network: Any
) -> str | None:
    """``.batch`` / ``HWC2CHW`` / a channel axis, from the inputs' shapes against the network's
    first conv (and the label's: a 0-d label means single samples); None when they fit."""
    conv = _first_conv(network)
    single = torch.is_tensor(label) and label.dim() == 0  # rows, not batches
    fixes = []
    image = None
    if conv is not None:
        name, module = conv
        dims = len(module.kernel_size)
        image = next(
            (
                (col, t)
                for col, t in zip(labels, inputs)
                if torch.is_tensor(t) and t.is_floating_point() and t.dim() in (dims + 1, dims + 2)
            ),
            None,
        )
    if image is not None:
        col, t = image
        channels = getattr(module, "in_channels", 0)  # 0: a lazy conv not yet initialized
        layer = f"{type(module).__name__} '{name}'"
        want = "(N, C, " + ", ".join("DHW"[3 - dims :]) + ")"
        shape = tuple(t.shape)
        batched = t.dim() == dims + 2
        same_rows = torch.is_tensor(label) and label.dim() > 0 and label.shape[0] == shape[0]
        if not batched and same_rows and channels == 1:
            return (
                f"{column_ref(col)} {shape} has no channel axis: {layer} takes {want} with C = "
                f"in_channels = 1; add one, e.g. dataset.map(lambda x: x[None], "
                f"input_columns={column_arg(col)}) before .batch()"
            )
        if not batched:
            fixes.append(
                f"{column_ref(col)} {shape} is one sample, not a batch ({layer} takes {want}): "
                "batch the dataset, e.g. dataset = dataset.batch(32)"
            )
        channel_axis = shape[1] if batched else shape[0]
        if channels and channel_axis != channels and shape[-1] == channels:
            fixes.append(
                f"{column_ref(col)} {shape} is channels-last (H, W, C) but {layer} takes channels "
                f"first {want} with C = in_channels = {channels}: add vision.HWC2CHW() after "
                "its image ops, e.g. dataset.map(vision.HWC2CHW(), "
                f"input_columns={column_arg(col)})" + (" before .batch()" if batched else "")
            )
    if not fixes and single and inputs:
        fixes.append(
            "the label (the last column) is a scalar: the dataset yields single rows, not "
            "batches; batch it, e.g. dataset = dataset.batch(32)"
        )
    return "; and ".join(fixes) or None


# ---------------------------------------------------------------------------- diagnosis
class _Preserved:
    """Restores ``network``'s buffers and the random generators after a diagnostic re-run,
    so explaining an error changes nothing the failed step had not already changed."""

    def __init__(self, network: Any, tensors: Sequence[Any]) -> None:
        module = network if isinstance(network, nn.Module) else None
        self._buffers = [(b, b.detach().clone()) for b in module.buffers()] if module else []
        cuda = {t.device.index for t in tensors if torch.is_tensor(t) and t.is_cuda}
        self._rng = torch.random.fork_rng(devices=sorted(i for i in cuda if i is not None))

    def __enter__(self) -> None:
        self._rng.__enter__()

    def __exit__(self, *exc: Any) -> None:
        with torch.no_grad():
            for buffer, saved in self._buffers:
                if buffer.shape == saved.shape:
                    buffer.copy_(saved)
        self._rng.__exit__(*exc)


def _loss_of(outputs: Any) -> Any:
    return outputs[0] if isinstance(outputs, (tuple, list)) and outputs else outputs


class FirstStep:
    """What a first step feeds where, and how to explain its failure.

    Args:
        op: the API named in messages ("Model.train", "Model.eval").
        names: the dataset's column names, or a callable returning them (asked only when an
            error is explained), or None.
        network: the network the step calls (a jisu/torch wrapper is looked through for its
            signature and layers).
        loss_fn: ``loss_fn(output, label)``, or None.
        label_to_network: the network gets every column, the label too (``Model.train``
            without ``loss_fn``: the network returns the loss).
        scalar_loss: the step needs a scalar loss (training does; evaluation averages).
    """

    def __init__(
        self,
        op: str,
        names: Sequence[str] | Callable[[], Sequence[str] | None] | None,
        network: Any,
        loss_fn: Callable[..., Any] | None,
        label_to_network: bool = False,
        scalar_loss: bool = True,
    ) -> None:
        self.op, self._names, self.network, self.loss_fn = op, names, network, loss_fn
        self.label_to_network, self.scalar_loss = label_to_network, scalar_loss

    def names(self) -> list[str] | None:
        names = self._names() if callable(self._names) else self._names
        return list(names) if names is not None else None

    def raise_explained(self, exc: BaseException, tensors: Sequence[Any]) -> None:
        """Raise :meth:`explain`'s error ``from exc``; return when there is none (the caller
        then re-raises ``exc`` unchanged)."""
        error = self.explain(exc, tensors)
        if error is not None:
            raise error from exc

    def explain(self, exc: BaseException, tensors: Sequence[Any]) -> BaseException | None:
        """An error of ``exc``'s type saying which columns went where, what failed and the
        likely fix; None when ``exc`` is not one to explain or the re-run does not reproduce
        it in the network or the loss (the failure is elsewhere: keep ``exc``)."""
        if type(exc) not in _EXPLAINED or not tensors:
            return None
        tensors = list(tensors)
        if self.label_to_network:
            inputs, label = tensors, None
        else:
            inputs, label = tensors[:-1], tensors[-1]
        try:
            found = self._rerun(inputs, label, tensors)
        except Exception:  # the diagnosis must never hide the error it explains
            return None
        if found is None:
            return None
        names = self.names()
        labels = names_for(len(tensors), names)
        input_labels = labels if self.label_to_network else labels[:-1]
        user = _unwrap(self.network)
        where, value = found
        raised = f"{type(exc).__name__}: {_first_line(exc)}"
        if where == "arity":
            what = f"the network failed: {raised}"
            takes = _positional(user)
            keep = self._keep(names, len(tensors), takes)
            fix = (
                f"{value} but the batch gives {len(inputs)} "
                f"({', '.join(input_labels) or 'none'}): keep only the columns it takes, in its "
                "order"
                + ("" if self.label_to_network else ", with the label last")
                + f": dataset = dataset.project({keep})"
            )
        elif where == "network":
            what = f"the network failed: {_callable_name(user)} raised {raised}"
            fix = _layout_fix(inputs, input_labels, label, user) or (
                f"check the input columns against {_callable_name(user)}'s arguments, in "
                "order; reorder or drop columns with dataset.project([...])"
            )
        elif where == "loss":
            what = (
                f"the loss failed: {_loss_name(self.loss_fn)}(output {shape_of(value)} "
                f"{dtype_of(value)}, label {column_ref(labels[-1])} {shape_of(label)} "
                f"{dtype_of(label)}) "
                f"raised {raised}"
            )
            fix = (
                _layout_fix(inputs, input_labels, label, user)
                or _label_fix(value, label, labels[-1])
                or (
                    f"the label is the last column ({column_ref(labels[-1])}): check that it is "
                    "what the loss takes with this output (class indices for a cross-entropy, a "
                    "float target of the output's shape for a regression loss), and reorder the "
                    "columns with dataset.project([...]) if it is not last"
                )
            )
        else:  # "scalar": a loss that is not a float tensor
            who = (
                f"{_loss_name(self.loss_fn)} returned"
                if self.loss_fn is not None
                else f"the network ({_callable_name(user)}, loss_fn=None) returned"
            )
            kind = dtype_of(value) if torch.is_tensor(value) else type(value).__name__
            what = f"the loss is not a float tensor: {who} {kind} {shape_of(value)}"
            fix = (
                "training backpropagates from the loss: return a float loss tensor (one value, "
                "or one per sample, whose sum is backpropagated as MindSpore does)"
            )
        message = (
            f"{self.op}: the first step failed; {what}\n"
            f"  Columns: {describe_columns(tensors, names, self.label_to_network)}"
            + (f" (dataset.get_col_names(): {names})" if names is not None else "")
            + f"\n  Likely fix: {fix}"
        )
        return type(exc)(message)

    def _keep(self, names: list[str] | None, count: int, takes: int | None) -> str:
        """The columns to ``project`` for a network taking ``takes`` inputs: the first ones,
        then the label: the last column, or one named like a label ("label", "target", ...)
        when the last is not."""
        if names is None or len(names) != count or takes is None:
            return "[...]"
        if self.label_to_network:
            return repr(names[:takes])
        label = next((n for n in names if n.lower() in _LABEL_NAMES), names[-1])
        inputs = [n for n in names if n != label][:takes]
        return repr([*inputs, label])

    def _rerun(self, inputs: Sequence[Any], label: Any, tensors: Sequence[Any]) -> Any:
        """Where the step fails on this batch: ("arity", what the network takes) when it
        cannot take that many inputs; ("network", None) when it fails; ("loss", its output)
        when the loss fails; ("scalar", the loss) when the loss is not one number; None when
        nothing fails there."""
        arity = _arity(_unwrap(self.network), len(inputs))
        if arity is not None:  # known without running it
            return "arity", arity
        with _Preserved(self.network, tensors), torch.no_grad():
            try:
                output = self.network(*inputs)
            except Exception:
                return "network", None
            if self.loss_fn is not None and not self.label_to_network:
                try:
                    loss = self.loss_fn(output, label)
                except Exception:
                    return "loss", output
            else:
                loss = _loss_of(output)
        if self.scalar_loss and not (torch.is_tensor(loss) and loss.is_floating_point()):
            return "scalar", loss
        return None


def _label_fix(output: Any, label: Any, label_col: str) -> str | None:
    """Float class labels for a classifier's output (one more axis than the label): cast."""
    if not (torch.is_tensor(output) and torch.is_tensor(label)) or label.dtype.is_complex:
        return None
    if label.is_floating_point() and output.dim() == label.dim() + 1 and output.dim() > 1:
        return (
            f"the label {column_ref(label_col)} is {dtype_of(label)} but the output "
            f"{shape_of(output)} "
            "scores classes, whose labels are class indices: cast it to integers, e.g. "
            f"dataset.map(transforms.TypeCast(np.int32), input_columns={column_arg(label_col)})"
        )
    return None


def _positional(network: Any) -> int | None:
    """How many positional arguments ``network``'s forward takes at most (None: unknown)."""
    try:
        signature = inspect.signature(getattr(network, "forward", network))
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in signature.parameters.values())


def _first_line(exc: BaseException | None) -> str:
    text = str(exc) if exc is not None else ""
    return text.splitlines()[0] if text else ""


def _loss_name(loss_fn: Any) -> str:
    if loss_fn is None:
        return "loss"
    return f"loss_fn {getattr(loss_fn, '__name__', None) or type(loss_fn).__name__}"


# ---------------------------------------------------------------------------- the watch
class FirstStepCheck:
    """Watches an epoch loop's first step call and explains its failure (see the module).

    ``watch(loop)`` puts the check in ``loop.step``'s place until the first step; its call
    puts the step back first, so every later step is the step itself, with no check at all.
    Watching the next epoch's loop is a no-op once the first step has run.
    """

    def __init__(self, first: FirstStep) -> None:
        self.first = first
        self.done = False
        self._loop: Any = None
        self._step: Any = None

    def watch(self, loop: Any) -> None:
        """Check ``loop``'s next step call, unless the first step already ran."""
        if not self.done:
            self._loop, self._step = loop, loop.step
            loop.step = self

    def __call__(self, *tensors: Any) -> Any:
        step, self.done = self._step, True
        self._loop.step = step
        self._loop = self._step = None
        if getattr(step, "proven", True) is not False:  # not a compiling CompiledStep
            try:
                return step(*tensors)
            except Exception as exc:
                self.first.raise_explained(exc, tensors)
                raise
        return self._compiling(step, tensors)

    def _compiling(self, step: Any, tensors: Sequence[Any]) -> Any:
        """A CompiledStep's first call, its warnings held until it is known whether its
        "torch.compile failed" warning was about compilation or about the batch."""
        failure = None
        with warnings.catch_warnings(record=True) as held:
            try:
                outputs = step(*tensors)
            except Exception as exc:
                failure = exc
        error = self.first.explain(failure, tensors) if failure is not None else None
        for w in held:  # shown now, as they would have been
            if error is not None and str(w.message).startswith(_COMPILE_WARNING):
                continue  # the eager step failed the same way: not a compilation failure
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
        if error is not None:
            raise error from failure
        if failure is not None:
            raise failure  # its traceback is kept
        return outputs
