"""The op contract: :class:`TensorOperation`, the base of jisu's data ops (vision and generic
transforms), and how the engine names and applies an op or a plain callable."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from .. import config
from .error_types import PipelineTypeError, as_runtime_error
from .pil_images import is_pil, to_pil
from .rows import to_array


class TensorOperation:
    """An op on NumPy arrays, usable in ``Dataset.map`` and eagerly.

    Subclasses implement :meth:`apply`. Random ops set ``randomized = True`` and draw every
    decision from the ``rng`` they are given: in a pipeline the engine passes a generator keyed
    by (seed, epoch, sample, op), which makes results independent of the number of workers.
    Kernels come from OpenCV and NumPy, which release the GIL, so ops run in parallel on threads.
    Ops hold no mutable state and are safe to call from several threads.
    """

    randomized: bool = False
    #: output = f(input) element by element: the op can write into a batch slot
    #: (``apply_into``) and commutes with pure reindexing ops
    elementwise: bool = False
    #: output is a reindexed view of the input (a transpose): no data is touched
    view_op: bool = False
    #: given one PIL image, return a PIL image when the result is still an 8-bit image (False
    #: for the ops whose MindSpore counterpart returns an array)
    pil_out: bool = True
    #: whether ``device("GPU")`` is accepted: a decode op that can run on the device
    runs_on_device: bool = False
    #: where the op runs: "CPU", in the pipeline, or "GPU" (set by :meth:`device`)
    device_target: str = "CPU"
    #: a one-image op that takes several images at once and gives each the same random
    #: parameters (an image and its mask cropped alike), as MindSpore 2.10's RandomCrop,
    #: RandomResizedCrop, RandomResize and the random flips do; other one-input ops refuse
    #: a second input, as MindSpore's do
    multi_input: bool = False

    def device(self, device_target: str = "CPU") -> TensorOperation:
        """Run this op on ``device_target`` (MindSpore's ``.device()``); returns the op.

        "GPU" is taken by the decode ops (``Decode`` followed by a crop op, and
        ``RandomCropDecodeResize``) in a ``map(..., offload=True)``: the pipeline then ships
        JPEG bytes and random draws, and ``dataset.offload_module()`` decodes on the device
        (see :mod:`jisu.dataset.device_decode`).

        Raises:
            TypeError: ``device_target`` is not a str.
            ValueError: it is not "CPU" or "GPU", or this op cannot run on the device.
        """
        name = type(self).__name__
        if not isinstance(device_target, str):
            raise TypeError(
                f"{name}.device: device_target must be a str. Received: {device_target!r}"
            )
        if device_target not in ("CPU", "GPU"):
            raise ValueError(
                f"{name}.device: device_target must be 'CPU' or 'GPU' (jisu runs on PyTorch "
                f"devices; 'GPU' means the device of the offload module). Received: "
                f"{device_target!r}"
            )
        if device_target == "GPU" and not self.runs_on_device:
            raise ValueError(
                f"{name}.device: only Decode and RandomCropDecodeResize take 'GPU'; the "
                "ops after them in the map follow them to the device"
            )
        self.device_target = device_target
        return self

    def apply(self, *arrays: np.ndarray, rng: np.random.Generator | None = None) -> Any:
        raise NotImplementedError  # each op defines its kernel

    def apply_into(self, x: np.ndarray, out: np.ndarray, perm: tuple[int, ...] | None = None):
        """Elementwise ops: write ``apply(x)`` into ``out`` (same shape, ``output_dtype``).

        ``x`` may be a transposed view of the real input: its axis ``i`` is the input's axis
        ``perm[i]`` (per-channel ops use it to find the channel axis).
        """
        raise NotImplementedError  # only elementwise ops define it

    def axes(self, ndim: int) -> tuple[int, ...]:
        """View ops: the output's axis ``i`` is the input's axis ``axes(ndim)[i]``."""
        raise NotImplementedError  # only view ops define it

    def output_dtype(self, dtype: np.dtype) -> np.dtype:
        """Elementwise ops: the dtype ``apply`` returns for an input of ``dtype``."""
        raise NotImplementedError  # only elementwise ops define it

    def __call__(self, *args: Any) -> Any:
        """Apply eagerly to NumPy arrays (or values convertible to them).

        Given one PIL image, an op whose result is still an 8-bit image returns a PIL image
        where MindSpore 2.10's does (``pil_out``; ``ToTensor``, ``Normalize``, ``Rotate``,
        ``Posterize`` … return arrays). Eager results are
        otherwise C-contiguous arrays; inside a pipeline some ops (flips, HWC2CHW)
        return views instead, and the copy happens once, where the row is batched or output.
        """
        arrays = [to_array(a) for a in args]
        rng = self._eager_rng() if self.randomized else None
        try:
            result = apply_op(self, tuple(arrays), lambda: rng)
        except Exception as exc:  # MindSpore's ops raise a RuntimeError: so is this, as well
            raise as_runtime_error(exc) from exc.__cause__
        if isinstance(result, tuple) and len(args) > 1 and len(result) == len(args):
            return tuple(self._eager_out(a, r) for a, r in zip(args, result))
        if (
            len(args) == 1
            and self.pil_out
            and not self.view_op
            and is_pil(args[0])
            and _is_image(result)
        ):
            return to_pil(type(self).__name__, result)
        if isinstance(result, tuple):
            return tuple(_contiguous(r) for r in result)
        return _contiguous(result)

    def _eager_out(self, arg: Any, result: Any) -> Any:
        """One result of an eager call on several inputs: a PIL image for a PIL input where
        the single-input call gives one."""
        if self.pil_out and not self.view_op and is_pil(arg) and _is_image(result):
            return to_pil(type(self).__name__, result)
        return _contiguous(result)

    def _eager_rng(self) -> np.random.Generator:
        rng = self.__dict__.get("_rng")
        if rng is None:
            rng = np.random.default_rng(config.get_seed() if config.seed_was_set() else None)
            self.__dict__["_rng"] = rng
        return rng

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


def _is_image(value: Any) -> bool:
    """Whether an op's result can go back into a PIL image: uint8 HW or HWC (1-4 channels)."""
    return (
        isinstance(value, np.ndarray)
        and value.dtype == np.uint8
        and (value.ndim == 2 or (value.ndim == 3 and value.shape[2] in (1, 3, 4)))
    )


def _contiguous(value: Any) -> Any:
    if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
        return np.ascontiguousarray(value)
    return value


def op_name(op: Any) -> str:
    """A readable name of an op or callable, for error messages."""
    if isinstance(op, TensorOperation):  # a fused op names what it stands for
        return getattr(op, "name", None) or type(op).__name__
    return getattr(op, "__name__", None) or type(op).__name__


_arities: dict[type, tuple[int, int | None]] = {}


def input_count(op: TensorOperation) -> tuple[int, int | None]:
    """How many arrays ``op.apply`` takes: ``(fewest, most)``, most None for any number; read
    from its signature (``rng`` aside) once per class."""
    cls = type(op)
    found = _arities.get(cls)
    if found is None:
        fewest, most = 0, 0
        for param in inspect.signature(cls.apply).parameters.values():
            if param.kind is param.VAR_POSITIONAL:
                most = None
                break
            if param.name in ("self", "rng") or param.kind is not param.POSITIONAL_OR_KEYWORD:
                continue
            most += 1
            fewest += param.default is param.empty
        found = _arities[cls] = (fewest, most)
    return found


def check_inputs(op: TensorOperation, given: int, where: str = "") -> None:
    """Refuse ``given`` input columns for ``op`` unless it takes them (its own count, or one
    per column for a :attr:`~TensorOperation.multi_input` op); ``where`` starts the message.

    Raises:
        PipelineTypeError: a TypeError here and the RuntimeError MindSpore 2.10 raises ("The
            op is OneToOne, can only accept one tensor as input").
    """
    fewest, most = input_count(op)
    if fewest <= given and (most is None or given <= most):
        return
    if op.multi_input and most == 1 and given > 1:
        return
    takes = f"{fewest}" if fewest == most else f"{fewest} to {most}"
    if most is None:
        takes = f"at least {fewest}"
    hint = "; map it over each column with a map(..., input_columns=...) of its own" * (
        given > 1 and most == 1
    )
    raise PipelineTypeError(
        f"{where}{op_name(op)} takes {takes} input column(s), but was given {given}{hint}"
    )


def apply_op(op: Any, args: tuple, rng_factory) -> Any:
    """Apply ``op`` to ``args``: jisu ops get an RNG when random; callables are called.

    A :attr:`~TensorOperation.multi_input` op given several arrays is applied to each with the
    same random draws (the RNG's state is rewound before each) and returns a tuple.
    """
    if not isinstance(op, TensorOperation):
        return op(*args)
    rng = rng_factory() if op.randomized else None
    check_inputs(op, len(args))
    if len(args) == 1 or input_count(op)[1] != 1:
        return op.apply(*args, rng=rng)
    if rng is None:
        return tuple(op.apply(a, rng=None) for a in args)
    state = rng.bit_generator.state
    results = []
    for array in args:
        rng.bit_generator.state = state
        results.append(op.apply(array, rng=rng))
    return tuple(results)
