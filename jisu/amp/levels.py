"""The AMP levels as precision types (Lightning's precision-plugin shape), and the network
they produce.

A :class:`Precision` is one level: :meth:`~Precision.convert_module` turns a network into
one running at that level, :meth:`~Precision.forward_context` is the region its forward runs
in (autocast at O1), :meth:`~Precision.default_loss_scale_manager` is the loss scale training
uses when none is given, ``dtype`` its low precision and ``level`` its name in messages.
:func:`precision_for` makes one from a level string; :class:`MixedPrecisionNetwork` runs the
converted network and asks its precision, never the level string, what to do.

| type               | level      | converts                                        | loss scale  |
|--------------------|------------|-------------------------------------------------|-------------|
| O0Precision        | O0         | nothing (the network itself, fp32)              | none        |
| O1Precision        | O1         | nothing: autocast with MindSpore's O1 op lists  | none        |
| AutoPrecision      | auto       | as O1                                           | none        |
| O2Precision        | O2         | all but the norms (keep_batchnorm_fp32)         | fp16: dyn.  |
| O3Precision        | O3         | everything, weights cast in place               | none        |
| WhiteListPrecision | white_list | only the listed types (custom_mixed_precision)  | none        |
| BlackListPrecision | black_list | all but the listed types (custom_...)           | none        |

"loss scale" is ``default_loss_scale_manager()``: a DynamicLossScaleManager at O2 in fp16.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import torch
from torch import nn

from .casting import (
    _BLACK_LIST,
    _WHITE_LIST,
    _cast,
    _check_dtype,
    _computes_fp32_on_low_input,
    _Fp32Functions,
    _modules_of,
    _short,
    default_low_dtype,
)
from .cpu_bf16 import warn_software_bf16
from .loss_scale import DynamicLossScaleManager, LossScaleManager

LEVELS = ("O0", "O1", "O2", "O3", "auto")


class Precision:
    """One mixed-precision level: how a network is converted, the region its forward runs in,
    and the loss scale training defaults to. Made by :func:`precision_for`; the subclasses
    below are the levels. The class attributes are what :class:`MixedPrecisionNetwork` reads.

    Attributes:
        level: the level's name in messages and in :func:`jisu.amp.describe`.
        dtype: the low-precision dtype (``torch.float32`` at O0).
    """

    level = ""
    #: the level converts at all (O0 returns the network itself and checks no dtype)
    low_precision = True
    #: the network's floating inputs are cast to ``dtype`` on entry
    casts_inputs = True
    #: the whole network is cast, not per op: MindSpore's ``cast_model_type`` applies (an fp32
    #: model type means O0)
    casts_network = False
    #: fp32 master weights seen in low precision by the forward, and every layer with weights
    #: casting its inputs (layers fed fp32, e.g. by a buffer, are recast)
    fp32_masters = False
    #: the line :func:`jisu.amp.describe` ends its table with, if any
    note: str | None = None

    def __init__(self, dtype: torch.dtype) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"{type(self).__name__}(level={self.level!r}, dtype={self.dtype})"

    def convert_module(self, network: nn.Module) -> nn.Module:
        """``network`` running at this level (see the levels' docstrings for what changes)."""
        _refuse_converted("convert_module", network)
        return MixedPrecisionNetwork(network, self)

    @contextlib.contextmanager
    def forward_context(self, device_type: str | nn.Module = "cpu") -> Iterator[None]:
        """The region the converted network's forward runs in on ``device_type`` (or on a
        module's device: that of its first parameter): autocast with the fp32-list functions
        upcast at O1, nothing at the other levels."""
        with self.autocast_context(device_type), self.fp32_function_mode():
            yield

    # forward_context's two parts, entered as they are by MixedPrecisionNetwork.forward:
    # torch.compile (Dynamo) traces autocast, function modes and nullcontext, but a
    # generator context manager only from torch 2.6 on (a graph break before)
    def autocast_context(self, device_type: str | nn.Module = "cpu") -> AbstractContextManager[Any]:
        """``torch.autocast`` at this level's dtype (O1), or a null context."""
        return contextlib.nullcontext()

    def fp32_function_mode(self) -> AbstractContextManager[Any]:
        """The mode that upcasts the fp32-list functions' inputs (O1), or a null context."""
        return contextlib.nullcontext()

    def default_loss_scale_manager(self) -> LossScaleManager | None:
        """The loss-scale manager training uses when none is given (a new one each call)."""
        return None

    def low_parameters(self, converted: MixedPrecisionNetwork) -> dict[str, torch.Tensor]:
        """The parameters the forward sees in low precision, by name: with ``fp32_masters``
        low-precision copies of all but the kept (fp32 and normalization) layers' weights."""
        if not self.fp32_masters:
            return {}
        kept = converted._kept
        chosen = ((n, p) for n, p in converted.network.named_parameters() if id(p) not in kept)
        return {n: p.to(self.dtype) for n, p in chosen if p.is_floating_point()}

    def computes_in(self, module: nn.Module, fp32: bool, white: bool, low: str) -> str:
        """The dtype a leaf ``module`` computes in, for the cast plan (``fp32``: it is one of
        the layers kept in fp32; ``white``: one of the white-listed ones)."""
        return "fp32" if fp32 else low


class O0Precision(Precision):
    """O0: everything in fp32; the network is returned as it is."""

    level = "O0"
    low_precision = False
    casts_inputs = False

    def __init__(
        self, dtype: torch.dtype | None = None, keep_batchnorm_fp32: bool | None = None
    ) -> None:
        super().__init__(torch.float32)

    def convert_module(self, network: nn.Module) -> nn.Module:
        _refuse_converted("convert_module", network)
        return network

    def computes_in(self, module: nn.Module, fp32: bool, white: bool, low: str) -> str:
        return "fp32"


class O1Precision(Precision):
    """O1: weights and inputs untouched; the forward runs under autocast, and the fp32-list
    functions (softmax, norms, reductions, losses) upcast their inputs on every device.
    ``keep_batchnorm_fp32`` has no effect (MindSpore's)."""

    level = "O1"
    casts_inputs = False
    note = "O1: matmul/conv/linear ops in low precision, softmax/norms/reductions/losses in fp32"

    def __init__(self, dtype: torch.dtype, keep_batchnorm_fp32: bool | None = None) -> None:
        super().__init__(dtype)

    def autocast_context(self, device_type: str | nn.Module = "cpu") -> AbstractContextManager[Any]:
        if isinstance(device_type, nn.Module):  # found here: the other levels need no device
            device_type = next((p.device.type for p in device_type.parameters()), "cpu")
        return torch.autocast(device_type, dtype=self.dtype)

    def fp32_function_mode(self) -> AbstractContextManager[Any]:
        # CPU autocast keeps these functions in the input's low precision: upcast them here
        return _Fp32Functions()

    def computes_in(self, module: nn.Module, fp32: bool, white: bool, low: str) -> str:
        if isinstance(module, _WHITE_LIST):
            return f"{low} (autocast)"
        if (
            isinstance(module, (*_BLACK_LIST, nn.Softmax, nn.LogSoftmax))
            or "Loss" in type(module).__name__
        ):
            return "fp32"
        return "as its input"


class AutoPrecision(O1Precision):
    """MindSpore's ``"auto"``: O1 on every device."""

    level = "auto"


class O2Precision(Precision):
    """O2: the network's inputs and weights in low precision (the weights stay fp32 masters,
    cast on the fly so the update is fp32), the normalization layers in fp32 unless
    ``keep_batchnorm_fp32=False``; a dynamic loss scale by default for fp16."""

    level = "O2"
    casts_network = True
    fp32_masters = True

    def __init__(self, dtype: torch.dtype, keep_batchnorm_fp32: bool | None = None) -> None:
        super().__init__(dtype)
        self.keep_batchnorm_fp32 = (
            True if keep_batchnorm_fp32 is None else bool(keep_batchnorm_fp32)
        )

    def convert_module(self, network: nn.Module) -> nn.Module:
        _refuse_converted("convert_module", network)
        fp32_modules = _modules_of(network, _BLACK_LIST) if self.keep_batchnorm_fp32 else []
        return MixedPrecisionNetwork(network, self, fp32_modules=fp32_modules)

    def default_loss_scale_manager(self) -> LossScaleManager | None:
        # bf16 has fp32's range and needs none
        return DynamicLossScaleManager() if self.dtype == torch.float16 else None


class O3Precision(Precision):
    """O3: pure low precision: the weights are cast in place (no fp32 masters), the norms too
    unless ``keep_batchnorm_fp32=True``."""

    level = "O3"
    casts_network = True

    def __init__(self, dtype: torch.dtype, keep_batchnorm_fp32: bool | None = None) -> None:
        super().__init__(dtype)
        self.keep_batchnorm_fp32 = bool(keep_batchnorm_fp32)

    def convert_module(self, network: nn.Module) -> nn.Module:
        _refuse_converted("convert_module", network)
        fp32_modules = _modules_of(network, _BLACK_LIST) if self.keep_batchnorm_fp32 else []
        network.to(self.dtype)
        for module in fp32_modules:
            module.float()
        return MixedPrecisionNetwork(network, self, fp32_modules=fp32_modules)


class WhiteListPrecision(Precision):
    """``custom_mixed_precision(white_list=...)``: only modules of the listed types in low
    precision (inputs and weights cast, outputs cast back to fp32); weights stay fp32."""

    level = "white_list"
    casts_inputs = False

    def __init__(self, dtype: torch.dtype, white_list: Iterable[type[nn.Module]] = ()) -> None:
        super().__init__(dtype)
        self.white_list = tuple(white_list)

    def convert_module(self, network: nn.Module) -> nn.Module:
        _refuse_converted("convert_module", network)
        white = _modules_of(network, self.white_list)
        return MixedPrecisionNetwork(network, self, white_modules=white)

    def low_parameters(self, converted: MixedPrecisionNetwork) -> dict[str, torch.Tensor]:
        low = {id(p) for m in converted.white_modules for p in m.parameters()}
        chosen = ((n, p) for n, p in converted.network.named_parameters() if id(p) in low)
        return {n: p.to(self.dtype) for n, p in chosen if p.is_floating_point()}

    def computes_in(self, module: nn.Module, fp32: bool, white: bool, low: str) -> str:
        return low if white else "fp32"


class BlackListPrecision(Precision):
    """``custom_mixed_precision(black_list=...)``: as O2 (fp32 masters), with the listed module
    types instead of the normalization layers computing in fp32; no default loss scale."""

    level = "black_list"
    fp32_masters = True

    def __init__(self, dtype: torch.dtype, black_list: Iterable[type[nn.Module]] = ()) -> None:
        super().__init__(dtype)
        self.black_list = tuple(black_list)

    def convert_module(self, network: nn.Module) -> nn.Module:
        _refuse_converted("convert_module", network)
        fp32_modules = _modules_of(network, self.black_list)
        return MixedPrecisionNetwork(network, self, fp32_modules=fp32_modules)


_LEVEL_TYPES: dict[str, type[Precision]] = {
    "O0": O0Precision,
    "O1": O1Precision,
    "O2": O2Precision,
    "O3": O3Precision,
    "auto": AutoPrecision,
}
_CUSTOM_TYPES: dict[str, type[Precision]] = {
    "white_list": WhiteListPrecision,
    "black_list": BlackListPrecision,
}


def precision_type(level: str, op: str = "precision_for", arg: str = "level") -> type[Precision]:
    """The precision type of ``level``; ``ValueError`` naming ``op`` and ``arg`` otherwise."""
    if level not in LEVELS:  # a tuple, not the dict: an unhashable level is refused too
        raise ValueError(f"{op}: {arg} must be one of {LEVELS}. Received {level!r}")
    return _LEVEL_TYPES[level]


def _new_precision(
    kind: type[Precision],
    network: nn.Module,
    dtype: torch.dtype | None,
    keep_batchnorm_fp32: bool | None,
    op: str,
    stacklevel: int,
) -> Precision:
    """``kind`` with its dtype checked (not at O0); a float16-on-CPU or software-bf16
    warning points ``stacklevel`` frames up from the check (this function's caller is 3)."""
    if not kind.low_precision:
        return kind()
    dtype = _check_dtype(op, network, dtype, stacklevel=stacklevel)
    warn_software_bf16(kind.level, network, dtype)
    return kind(dtype, keep_batchnorm_fp32)


def precision_for(
    level: str,
    network: nn.Module,
    dtype: torch.dtype | None = None,
    keep_batchnorm_fp32: bool | None = None,
) -> Precision:
    """The precision of ``level`` for ``network`` (which decides the default dtype).

    Args:
        level: "O0", "O1" (or "auto"), "O2", "O3".
        network: the torch module to convert (its parameters on the device it will run on).
        dtype: torch.float16 or torch.bfloat16; None: fp16 on CUDA/NPU, bf16 on CPU. Not
            checked at O0.
        keep_batchnorm_fp32: normalization layers in fp32; default True at O2, False at O3.

    Returns:
        A :class:`Precision`; ``precision.convert_module(network)`` is what
        :func:`jisu.amp.auto_mixed_precision` returns.

    Raises:
        ValueError: an unknown level or dtype.

    Example:
        >>> precision = precision_for("O2", net)
        >>> fast = precision.convert_module(net)
        >>> manager = precision.default_loss_scale_manager()
        >>> step = TrainStep(lambda x, y: loss_fn(fast(x), y), opt, manager, precision=precision)
    """
    kind = precision_type(level, "precision_for", "level")
    return _new_precision(kind, network, dtype, keep_batchnorm_fp32, "precision_for", 4)


def _precision_named(level: str, dtype: torch.dtype | None, network: nn.Module) -> Precision:
    """For ``MixedPrecisionNetwork(network, level_string, dtype)``: no modules chosen here."""
    if isinstance(level, str) and level in _CUSTOM_TYPES:
        return _CUSTOM_TYPES[level](dtype or default_low_dtype(network))
    return precision_type(level, "MixedPrecisionNetwork", "level")(
        dtype or default_low_dtype(network)
    )


class _Switch:
    """Hooks act only while the converted network runs, so the original stays usable."""

    def __init__(self) -> None:
        self.depth = 0


class MixedPrecisionNetwork(nn.Module):
    """A network running at a mixed-precision level; made by :func:`auto_mixed_precision`
    or :func:`custom_mixed_precision` (``precision.convert_module``). ``state_dict``/
    ``load_state_dict`` are the wrapped network's own (same keys), so checkpoints load into
    the plain network too.

    Args:
        network: the wrapped module.
        level: a :class:`Precision`, or its level's name ("O1", "O2", ..., "white_list",
            "black_list").
        dtype: the low dtype with a level name (None: the network's default); a
            :class:`Precision` brings its own.
        fp32_modules: modules that compute in fp32 and hand low precision on.
        white_modules: modules that compute in low precision and hand fp32 on.
    """

    def __init__(
        self,
        network: nn.Module,
        level: str | Precision,
        dtype: torch.dtype | None = None,
        fp32_modules: Iterable[nn.Module] = (),
        white_modules: Iterable[nn.Module] = (),
    ) -> None:
        super().__init__()
        if isinstance(level, Precision):
            precision = level
        else:
            precision = _precision_named(level, dtype, network)
        self.network, self.precision = network, precision
        self.level, self.dtype = precision.level, precision.dtype
        self.fp32_modules = list(fp32_modules)  # compute in fp32, hand low precision on
        self.white_modules = list(white_modules)  # compute in low precision, hand fp32 on
        self._switch = _Switch()
        self._hooks = []
        for module in self.fp32_modules:
            if not _computes_fp32_on_low_input(module, self.dtype):
                self._hook(module, torch.float32, self.dtype)
        for module in self.white_modules:
            self._hook(module, self.dtype, torch.float32)
        # Weights never cast: those of fp32 layers, and the norms' even when they run low (their
        # statistics stay fp32; PyTorch's norms take a low input with fp32 weights and stats).
        norms = _modules_of(network, _BLACK_LIST)
        self._kept = {id(p) for m in [*self.fp32_modules, *norms] for p in m.parameters()}
        if precision.fp32_masters or precision.casts_network:
            # layers fed fp32 (a buffer, a cast in construct) recast, as to_float; O3's for good
            fp32_ids = {id(p) for m in self.fp32_modules for p in m.parameters()}
            for module in network.modules():
                if precision.casts_network and "_jisu_float" in module.__dict__:
                    module.__dict__["_jisu_float"] = self.dtype  # overwrites to_float, as O2/O3's
                own = list(module.parameters(recurse=False))
                if own and not any(id(p) in fp32_ids for p in own):
                    self._hook(module, self.dtype, None, always=not precision.fp32_masters)
        network._jisu_amp = precision.level

    def _hook(self, module: nn.Module, compute: torch.dtype, out: Any, always=False) -> None:
        switch = self._switch

        def before(_module, args, kwargs):
            if switch.depth or always:
                return _cast(args, compute), _cast(kwargs, compute)
            return None

        def after(_module, _args, output):
            if switch.depth and out is not None:
                return _cast(output, out)
            return None

        self._hooks.append(module.register_forward_pre_hook(before, with_kwargs=True))
        self._hooks.append(module.register_forward_hook(after))

    def _low_parameters(self) -> dict[str, torch.Tensor]:
        """The parameters the forward sees in low precision (fp32 masters cast, O2/custom)."""
        return self.precision.low_parameters(self)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        precision = self.precision
        self._switch.depth += 1
        try:
            if precision.casts_inputs:
                args, kwargs = _cast(args, self.dtype), _cast(kwargs, self.dtype)
            # precision.forward_context(self.network), in its two parts (see Precision)
            with precision.autocast_context(self.network), precision.fp32_function_mode():
                low = precision.low_parameters(self)
                if low:
                    output = torch.func.functional_call(
                        self.network, low, args, kwargs, strict=False
                    )
                else:
                    output = self.network(*args, **kwargs)
        finally:
            self._switch.depth -= 1
        return _cast(output, torch.float32)

    def state_dict(self, *args: Any, **kwargs: Any) -> dict:
        return self.network.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self.network.load_state_dict(state_dict, strict=strict, assign=assign)

    def cast_plan(self) -> list[tuple[str, str, str, str]]:
        """(module name, type, compute dtype, weight dtype) per leaf module."""
        low = _short(self.dtype)
        fp32_ids = {id(m) for root in self.fp32_modules for m in root.modules()}
        white_ids = {id(m) for root in self.white_modules for m in root.modules()}
        rows = []
        for name, module in self.network.named_modules():
            if any(True for _ in module.children()):
                continue
            weights = {_short(p.dtype) for p in module.parameters(recurse=False)}
            compute = self.precision.computes_in(
                module, id(module) in fp32_ids, id(module) in white_ids, low
            )
            if self.precision.fp32_masters:
                weights = {
                    "fp32 (masters)" if w == "fp32" and compute != "fp32" else w for w in weights
                }
            rows.append(
                (
                    name or "(network)",
                    type(module).__name__,
                    compute,
                    ", ".join(sorted(weights)) or "-",
                )
            )
        return rows


def _refuse_converted(op: str, network: nn.Module) -> None:
    if not isinstance(network, nn.Module):
        raise TypeError(
            f"{op}: network must be a torch.nn.Module. Received {type(network).__name__}"
        )
    level = getattr(network, "_jisu_amp", None) or (
        network.level if isinstance(network, MixedPrecisionNetwork) else None
    )
    if level is not None:
        raise ValueError(
            f"{op}: this network was already converted (level {level}); convert the original "
            "network once (converting twice would cast twice and hide which level runs)"
        )
