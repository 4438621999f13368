"""MindSpore's ``Cell`` on ``torch.nn.Module``: a network written for MindSpore runs on torch.

A :class:`Cell` is a ``torch.nn.Module`` whose ``forward`` calls ``construct``, with
MindSpore's methods beside torch's (``trainable_params``, ``parameters_and_names``,
``set_train``, ``to_float``, ``cells`` ...). Everything torch does with a module works on it:
AMP, ``torch.compile``, DistributedDataParallel, ``state_dict``.

**Names.** MindSpore names a parameter by its attribute path and its own name, and its norm
layers call theirs ``gamma``/``beta``/``moving_mean``/``moving_variance`` (an ``Embedding``'s
``embedding_table``). jisu's layers are torch's (``weight``, ``bias``, ``running_mean`` ...),
so :meth:`Cell.parameters_and_names` gives MindSpore's names by a table per torch layer type,
and MindSpore's moving statistics (torch buffers) are listed with the parameters, as MindSpore
lists them. :meth:`Cell.trainable_params` records each parameter's MindSpore name, so a
``jisu.nn`` optimizer applies MindSpore's weight-decay rule (no decay on ``gamma``/``beta``)
to ``net.trainable_params()``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from .. import compat
from ..common import parameter_inplace, tensor_inplace
from ..common.parameter_names import _remember, _renamed, parameter_name, rename_parameter
from ..common.tensor import ParameterTuple
from ..common.tensor_methods import set_data
from .cell_overrides import keep_own_forward, keep_own_reset, register_tuple, train_mode
from .cell_settings import CellSettings

#: torch's local names -> MindSpore's, by layer type (the first matching type wins)
MINDSPORE_NAMES: list[tuple[type, dict[str, str]]] = [
    (
        nn.modules.batchnorm._BatchNorm,
        {
            "weight": "gamma",
            "bias": "beta",
            "running_mean": "moving_mean",
            "running_var": "moving_variance",
        },
    ),
    (nn.LayerNorm, {"weight": "gamma", "bias": "beta"}),
    (nn.GroupNorm, {"weight": "gamma", "bias": "beta"}),
    (nn.Embedding, {"weight": "embedding_table"}),
]

#: the buffers MindSpore holds as (untrainable) parameters
_STATISTICS = ("running_mean", "running_var")


def _local_names(module: nn.Module | type) -> dict[str, str]:
    """torch's local tensor names -> MindSpore's, for a layer or a layer class."""
    cls = module if isinstance(module, type) else type(module)
    return next((table for kind, table in MINDSPORE_NAMES if issubclass(cls, kind)), {})


def _alias_mindspore_names(cls: type) -> None:
    """Give a torch layer's tensors their MindSpore names as attributes of the class
    (``bn.gamma``, ``bn.moving_mean``, ``embedding.embedding_table``: MindSpore code reads them
    to initialise or tie weights, and sets them). Properties on the class, made when it is
    defined, so that ordinary attribute reads cost what they cost in torch."""
    table = _local_names(cls)
    aliases = {name: torch_name for torch_name, name in table.items() if not hasattr(cls, name)}
    if not aliases:
        return
    for name, torch_name in aliases.items():
        setattr(cls, name, property(lambda self, t=torch_name: getattr(self, t)))
    base_setattr = cls.__setattr__

    def __setattr__(self: nn.Module, name: str, value: Any) -> None:
        base_setattr(self, aliases.get(name, name), value)

    cls.__setattr__ = __setattr__


def _named_cells(
    module: nn.Module, prefix: str, seen: set[int], paths: bool
) -> Iterator[tuple[str, nn.Module]]:
    """``(prefix, module)`` for ``module`` and those below it. With ``paths`` the prefixes are
    attribute paths (MindSpore's ``parameters_and_names``); without, they are the prefixes of
    MindSpore's parameter names, which a cell built with ``auto_prefix=False`` (its wrapper
    cells: ``WithLossCell``, ``TrainOneStepCell``) leaves out of its children's names."""
    if id(module) in seen:
        return
    seen.add(id(module))
    yield prefix, module
    keep = paths or getattr(module, "_auto_prefix", True) is not False
    for name, child in module._modules.items():
        if child is not None:
            path = (f"{prefix}.{name}" if prefix else name) if keep else prefix
            yield from _named_cells(child, path, seen, paths)


def mindspore_named_tensors(
    module: nn.Module,
    prefix: str = "",
    recurse: bool = True,
    paths: bool = False,
    renamed: bool = True,
) -> Iterator[tuple[str, torch.Tensor]]:
    """``(MindSpore name, tensor)`` for every parameter of ``module`` (and, with ``recurse``,
    of the modules below it) and every moving statistic of its norm layers, each tensor once,
    in MindSpore's order (a norm layer's statistics before its scale and shift). The names
    are MindSpore's parameter names (checkpoints hold these), or with ``paths`` the attribute
    paths ``parameters_and_names`` gives (they differ inside ``auto_prefix=False`` cells).
    ``renamed``: a parameter renamed by ``update_parameters_name`` keeps its new name (never
    among the paths)."""
    seen: set[int] = set()
    cells = _named_cells(module, prefix, set(), paths) if recurse else iter([(prefix, module)])
    for path, sub in cells:
        table = _local_names(sub)
        stats = [(n, b) for n, b in sub.named_buffers(recurse=False) if n in _STATISTICS]
        local = stats + list(sub.named_parameters(recurse=False))
        for name, tensor in local:
            if tensor is None or id(tensor) in seen:
                continue
            seen.add(id(tensor))
            full = table.get(name, name)
            full = f"{path}.{full}" if path else full
            yield (full if paths or not renamed else _renamed(tensor, full)), tensor


class Cell(CellSettings, nn.Module):
    """MindSpore's ``nn.Cell``: define ``construct`` (called by ``forward``).

    Args:
        auto_prefix: False: the sub-cells' parameter names do not carry this cell's
            attribute names (MindSpore's wrapper cells use it, so a wrapped network's
            parameters keep their names).
        flags: attributes set with ``add_flags`` (MindSpore's argument).

    MindSpore's settings of a cell (``add_flags``, ``add_flags_recursive``, ``get_flags``,
    ``init_parameters_data``, ``recompute``, ``shard``, ``set_comm_fusion``, ``set_inputs``,
    ``get_inputs``, ``set_jit_config``, ``set_broadcast_flag``, ``set_param_ps``) come from
    ``jisu.nn.cell_settings.CellSettings``.
    """

    def __init__(self, auto_prefix: bool = True, flags: dict | None = None) -> None:
        super().__init__()
        self._auto_prefix = auto_prefix
        self.phase = "train"  # MindSpore's: "train", or "predict" after set_train(False)
        compat.add_asnumpy()  # MindSpore code calls .asnumpy() on what its cells return
        if flags:
            self.add_flags(**flags)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _alias_mindspore_names(cls)
        keep_own_forward(cls, Cell)
        keep_own_reset(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        # MindSpore: a tensor assigned to a parameter's attribute sets its data (no gradient
        # through it), as EcapaTDNN's ``self.output = logits`` in construct does.
        if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
            params = self.__dict__.get("_parameters")
            if params is not None and params.get(name) is not None:
                set_data(params[name], value)
                return
        elif isinstance(value, ParameterTuple) and "_parameters" in self.__dict__:
            register_tuple(self, value)
        super().__setattr__(name, value)

    def construct(self, *inputs: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}: define construct(...)")

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._jisu_recompute and self.training and torch.is_grad_enabled():
            return self._run_recomputed(*inputs, **kwargs)
        tensor_inplace.DEPTH[0] += 1  # x += y in construct: MindSpore's x = x + y
        try:
            return self.construct(*inputs, **kwargs)
        finally:
            tensor_inplace.DEPTH[0] -= 1

    @property
    def cls_name(self) -> str:
        return type(self).__name__

    # ------------------------------------------------------------------ parameters
    def parameters_and_names(
        self, name_prefix: str = "", expand: bool = True
    ) -> Iterator[tuple[str, torch.Tensor]]:
        """``(name, parameter)`` by attribute path with MindSpore's local names; the moving
        statistics of norm layers are included (MindSpore holds them as parameters).
        ``expand=False``: this cell's own only. Each parameter's MindSpore name (which leaves
        out the attributes of ``auto_prefix=False`` cells) is recorded on the way."""
        self._record_names()
        yield from mindspore_named_tensors(self, name_prefix, recurse=expand, paths=True)

    def _record_names(self) -> None:
        for name, tensor in mindspore_named_tensors(self):
            _remember(tensor, name)

    def get_parameters(self, expand: bool = True) -> Iterator[torch.Tensor]:
        """Every parameter (and moving statistic), as :meth:`parameters_and_names`."""
        for _, tensor in self.parameters_and_names(expand=expand):
            yield tensor

    def trainable_params(self, recurse: bool = True) -> list[torch.Tensor]:
        """The parameters that require gradients, their MindSpore names recorded (see the
        module): what a MindSpore script passes its optimizer."""
        self._record_names()
        return [
            p
            for _, p in mindspore_named_tensors(self, recurse=recurse)
            if isinstance(p, nn.Parameter) and p.requires_grad
        ]

    def untrainable_params(self, recurse: bool = True) -> list[torch.Tensor]:
        """The parameters that do not require gradients and the moving statistics."""
        self._record_names()
        return [
            p
            for _, p in mindspore_named_tensors(self, recurse=recurse)
            if not (isinstance(p, nn.Parameter) and p.requires_grad)
        ]

    def parameters_dict(self, recurse: bool = True) -> OrderedDict[str, torch.Tensor]:
        """``OrderedDict`` of MindSpore parameter name -> tensor (the checkpoint's names)."""
        self._record_names()
        return OrderedDict(mindspore_named_tensors(self, recurse=recurse))

    def update_parameters_name(self, prefix: str = "", recurse: bool = True) -> None:
        """Name each parameter ``prefix`` + its name within this cell, for good (MindSpore's:
        ``net.fc.update_parameters_name("netG.")`` names ``fc.weight`` ``netG.weight`` in
        every later ``trainable_params()``/``parameters_dict()`` and checkpoint; the
        attribute paths of ``parameters_and_names`` do not change)."""
        if not isinstance(prefix, str):
            raise TypeError(
                f"{self.cls_name}.update_parameters_name: prefix must be a str. Received {prefix!r}"
            )
        for name, tensor in list(mindspore_named_tensors(self, recurse=recurse, renamed=False)):
            rename_parameter(tensor, prefix + name)

    # ------------------------------------------------------------------ cells
    def cells(self) -> Iterator[nn.Module]:
        """The direct sub-cells."""
        return self.children()

    @property
    def _cells(self) -> dict[str, nn.Module]:
        """MindSpore's private map of the direct sub-cells, by name: torch's ``_modules``
        itself, so that assigning ``net._cells[name] = cell`` replaces the sub-cell (mindcv's
        amp and mindocr's ``set_amp_attr`` read and assign it)."""
        return self._modules

    def name_cells(self) -> OrderedDict[str, nn.Module]:
        """``OrderedDict`` of the direct sub-cells by name."""
        return OrderedDict(self.named_children())

    def cells_and_names(self, cells: Any = None, name_prefix: str = "") -> Iterator:
        """``(name, cell)`` for this cell and every cell below it. Parameters below it that
        have no MindSpore name yet get theirs (MindSpore names them when the cells are built:
        official/cv/YOLOX's init reads ``cell.bias.name`` while walking these cells)."""
        for name, tensor in mindspore_named_tensors(self):
            if parameter_name(tensor) is None:
                _remember(tensor, name)
        return self.named_modules(prefix=name_prefix)

    def insert_child_to_cell(self, child_name: str, child_cell: nn.Module) -> None:
        self.add_module(child_name, child_cell)

    # ------------------------------------------------------------------ modes
    def set_train(self, mode: bool = True) -> Cell:
        """Training (True) or inference (False) behaviour: torch's ``train(mode)``, also
        through cells that hide it (see :func:`train_mode`)."""
        train_mode(self, mode)
        self.phase = "train" if mode else "predict"
        return self

    def set_grad(self, requires_grad: bool = True) -> Cell:
        """MindSpore's flag for building a backward graph; torch builds it on demand, so this
        changes nothing."""
        return self

    def to_float(self, dst_type: torch.dtype) -> Cell:
        """Run this cell and the cells below it in ``dst_type`` (MindSpore's ``to_float``): each
        of them casts its floating-point inputs on the way in, and during this cell's forward
        each float parameter below it reads as a copy in its own cell's dtype; the parameters
        themselves keep their dtype (MindSpore's stay float32, so the optimizer updates float32
        master weights). As in MindSpore, a later call overwrites: ``net.to_float(float16)``
        then ``net.norm.to_float(float32)`` runs the norm, and only it, in float32."""
        if not (isinstance(dst_type, torch.dtype) and dst_type.is_floating_point):
            raise TypeError(f"{self.cls_name}.to_float: dst_type must be a float dtype")
        for sub in self.modules():
            sub.__dict__["_jisu_float"] = dst_type
            if "_jisu_cast_hook" not in sub.__dict__:
                sub.__dict__["_jisu_cast_hook"] = (
                    sub.register_forward_pre_hook(_CastParameters.enter),
                    sub.register_forward_hook(_CastParameters.leave, always_call=True),
                )
        self.__dict__["_jisu_float_root"] = True
        return self


#: low precisions: a weight in one of them is not recast to the other (a network that amp
#: O2/O3 converted to bfloat16 on CPU keeps its weights' dtype; its own hooks cast the inputs)
_LOW = (torch.float16, torch.bfloat16)

#: what is shadowing a parameter's own value now (``_MISSING``: nothing)
_MISSING = object()


class _CastParameters:
    """``to_float``'s hooks on each cell below it: cast the float inputs to the cell's dtype and
    shadow float parameters by cast copies (instance attributes, found before
    ``nn.Module.__getattr__`` looks in ``_parameters``) for the forward, restoring what was
    there after it; the cell ``to_float`` was called on shadows every parameter below it (each
    in its own cell's dtype), the others their own. Batch norms keep their float32 parameters,
    as their moving statistics (torch's kernel takes them with a float16 input)."""

    @staticmethod
    def enter(module: nn.Module, args: tuple) -> tuple | None:
        dtype = module.__dict__.get("_jisu_float")
        if dtype is None:
            return None
        shadowed = []
        subs = module.modules() if module.__dict__.get("_jisu_float_root") else (module,)
        for sub in subs:
            want = sub.__dict__.get("_jisu_float")
            if want is None or isinstance(sub, nn.modules.batchnorm._BatchNorm):
                continue  # torch's batch norm takes low-precision x with float32 statistics
            for name, param in sub._parameters.items():
                if param is None or not param.is_floating_point():
                    continue
                before = sub.__dict__.get(name, _MISSING)
                have = (param if before is _MISSING else before).dtype
                if have != want and not (have in _LOW and want in _LOW):
                    shadowed.append((sub, name, before))
                    sub.__dict__[name] = param.to(want)
        module.__dict__.setdefault("_jisu_cast_shadowed", []).append(shadowed)
        return tuple(
            a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a in args
        )

    @staticmethod
    def leave(module: nn.Module, args: tuple, output: Any) -> None:
        stack = module.__dict__.get("_jisu_cast_shadowed")
        if not stack:
            return
        for sub, name, before in reversed(stack.pop()):
            if before is _MISSING:
                sub.__dict__.pop(name, None)
            else:
                sub.__dict__[name] = before


class SequentialCell(Cell):
    """MindSpore's ``SequentialCell``: cells applied in order; from a list or an
    ``OrderedDict`` of cells (children named "0", "1", ... or by the dict's keys)."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, cell in args[0].items():
                self.add_module(name, _check_cell("SequentialCell", cell))
        else:
            for i, cell in enumerate(args):
                self.add_module(str(i), _check_cell("SequentialCell", cell))

    def __len__(self) -> int:
        return len(self._modules)

    def __getitem__(self, index: int | slice) -> Any:
        cells = list(self._modules.values())
        if isinstance(index, slice):
            return SequentialCell(cells[index])
        return cells[index]

    def __iter__(self) -> Iterator[nn.Module]:
        return iter(self._modules.values())

    def append(self, cell: nn.Module) -> SequentialCell:
        self.add_module(str(len(self)), _check_cell("SequentialCell", cell))
        return self

    def construct(self, x: Any) -> Any:
        for cell in self._modules.values():
            x = cell(x)
        return x


class CellList(nn.ModuleList, Cell):
    """MindSpore's ``CellList``: a list of cells (torch's ``ModuleList``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nn.ModuleList.__init__(self, *args, **kwargs)


class CellDict(nn.ModuleDict, Cell):
    """MindSpore's ``CellDict``: cells by name (torch's ``ModuleDict``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nn.ModuleDict.__init__(self, *args, **kwargs)


def _check_cell(owner: str, cell: Any) -> nn.Module:
    if not isinstance(cell, nn.Module):
        raise TypeError(f"{owner}: every element must be a Cell (nn.Module). Received {cell!r}")
    return cell


def _install_parameter_name() -> None:
    """Give torch's tensors MindSpore's ``param.name``: the recorded MindSpore name (see
    :func:`parameter_name`), else what torch's own read-only ``Tensor.name`` gives (None).
    Model-zoo scripts split their optimizer groups with ``'beta' not in param.name`` over
    ``net.trainable_params()``, and key EMA copies by the names of ``parameters_and_names()``,
    moving statistics (torch buffers) included; ``param.name = "x"`` records a name as
    ``jisu.Parameter(..., name="x")`` does. Installed once, when ``jisu.nn`` is imported;
    nothing else about torch's tensors changes."""
    if isinstance(torch.Tensor.__dict__.get("name"), property):
        return
    torch_name = torch._C.TensorBase.name

    def get(param: torch.Tensor) -> str | None:
        recorded = parameter_name(param)
        return recorded if recorded is not None else torch_name.__get__(param)

    def set_(param: torch.Tensor, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"Parameter.name must be a str. Received {name!r}")
        _remember(param, name)

    torch.Tensor.name = property(get, set_, doc="The tensor's MindSpore name (jisu.nn).")


_install_parameter_name()
parameter_inplace.install()  # self.updates += 1 in construct: MindSpore's assignment
tensor_inplace.install()  # x += y in construct: a new tensor, as MindSpore's
