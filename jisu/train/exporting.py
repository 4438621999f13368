"""MindSpore's ``export(net, *inputs, file_name, file_format)`` for PyTorch: ``"ONNX"`` writes a
real ONNX model with torch's exporter and checks it in onnxruntime, ``"TORCH_EXPORT"`` writes
torch.export's ``.pt2`` and checks it by loading it back.

``"MINDIR"`` and ``"AIR"`` are refused by name: they are MindSpore runtime formats (MindSpore
Lite, Ascend's offline model tools) that no PyTorch runtime reads; a ported project changes its
``file_format`` to ``"ONNX"`` (onnxruntime, TensorRT, OpenVINO, ...) or ``"TORCH_EXPORT"``.

The exported file is checked before it is given its name: the network runs eagerly on the
export inputs (eval mode, no grad), the written model runs on the same inputs (onnxruntime for
ONNX, ``torch.export.load`` for ``.pt2``) and every output must agree within the tolerance
:data:`jisu.train.export_check.TOLERANCES` states; a mismatch raises with the largest error.
The file is written to a temporary name in the target folder and renamed at the end, so a
failed export (exporter error, failed check) leaves no file.
onnx, onnxscript and onnxruntime (``pip install jisu[export]``) are imported only here.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import numpy as np
import torch
from torch.utils import _pytree as pytree

from ..nn.cell_overrides import train_mode
from .export_check import TOLERANCES, compare, onnx_half, pt2_half, run_onnx

__all__ = ["TOLERANCES", "export"]

_EXTENSIONS = {"ONNX": ".onnx", "TORCH_EXPORT": ".pt2"}
_REFUSED = ("MINDIR", "AIR")
_VALID = (*_EXTENSIONS, *_REFUSED)
_KWARGS = ("enc_key", "enc_mode", "dataset", "incremental", "custom_func")
_EXPORTERS = ("auto", "dynamo", "torchscript")
#: ONNX is one protobuf message, which holds at most 2 GiB (MindSpore refuses the same)
_PROTO_LIMIT = 2**31 - 1
_INSTALL = "pip install 'jisu[export]'"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def export(
    net: torch.nn.Module,
    *inputs: Any,
    file_name: str,
    file_format: str,
    verify: bool = True,
    exporter: str = "auto",
    **kwargs: Any,
) -> str:
    """Export ``net`` for inference on ``inputs`` to ``file_name`` in ``file_format``.

    MindSpore's ``mindspore.export`` (also ``mindspore.train.serialization.export``), with the
    formats a PyTorch runtime reads. ``file_name`` gets the format's extension when it lacks it
    (MindSpore's rule): ``.onnx`` for ``"ONNX"``, ``.pt2`` for ``"TORCH_EXPORT"``. The network
    runs in eval mode under ``torch.no_grad()`` while exporting; every cell's mode is restored
    afterwards.

    Args:
        net: the network (a ``jisu.nn.Cell`` or any ``torch.nn.Module``).
        *inputs: its inputs, as in MindSpore: jisu/torch tensors, ``Tensor(np.zeros(...),
            ms.float32)``, NumPy arrays (made tensors), Python numbers, or tuples/lists of them.
            Shapes are fixed to these (MindSpore's ONNX export has no dynamic shapes either).
        file_name: the output path; the extension is added when missing.
        file_format: ``"ONNX"`` (torch's ONNX exporter; the model is run in onnxruntime and
            compared with the network), or ``"TORCH_EXPORT"`` (jisu's name: ``torch.export``'s
            program saved with ``torch.export.save``, checked by ``torch.export.load``).
            ``"MINDIR"`` and ``"AIR"`` raise ``NotImplementedError``: MindSpore runtime formats.
        verify: check the written model's outputs against the network's (jisu extension;
            default True; ``export_check.TOLERANCES`` gives the tolerance). ``verify=False``
            skips the check, and with it the need for onnxruntime.
        exporter: for ONNX, ``"dynamo"`` (``torch.onnx.export(dynamo=True)``: torch.export then
            onnxscript, torch's default), ``"torchscript"`` (the older tracing exporter) or
            ``"auto"`` (default: dynamo, then the tracing exporter when dynamo's capture, its
            model's loading in onnxruntime or its check fails, but not on Python control flow
            on a tensor's value, which a trace would silently freeze; a warning names dynamo's
            reason). jisu extension.
        **kwargs: MindSpore's options: ``enc_key`` (bytes) with a callable ``enc_mode``
            (MindSpore's "customized encryption" for ONNX: the file holds
            ``enc_mode(model_bytes, enc_key)``); ``incremental`` (MINDIR-only, ignored as
            MindSpore does for ONNX); ``custom_func`` and ``dataset`` (MINDIR-only: refused).

    Returns:
        The written file's path (MindSpore returns None).

    Raises:
        NotImplementedError: ``file_format`` is ``"MINDIR"`` or ``"AIR"``.
        ValueError: an unknown ``file_format``, a dataset as input, MINDIR-only options.
        TypeError: ``net`` is not a module, ``file_name`` not a str, an unknown keyword.
        RuntimeError: the exporter cannot capture the network (the message names the network's
            class and the exporter's reason), the model is over ONNX's 2 GiB, or the check
            failed (with the largest error).
        ImportError: onnx/onnxscript/onnxruntime are missing (``pip install 'jisu[export]'``).
    """
    fmt = _check_format(file_format)
    if "obf_func" in kwargs:  # MindSpore 2.10's answer
        raise NotImplementedError("Dynamic model structure obfuscation is no longer supported.")
    unknown = sorted(set(kwargs) - set(_KWARGS))
    if unknown:
        raise TypeError(f"export: unknown keyword arguments {unknown}; MindSpore's are {_KWARGS}")
    if not isinstance(net, torch.nn.Module):
        raise TypeError(
            f"export: net must be a Cell (torch.nn.Module). Received: {type(net).__name__}"
        )
    if not isinstance(file_name, str) or not file_name:
        raise TypeError(f"export: file_name must be a non-empty str. Received: {file_name!r}")
    if exporter not in _EXPORTERS:
        raise ValueError(f"export: exporter must be one of {_EXPORTERS}. Received: {exporter!r}")
    if kwargs.get("custom_func") is not None:
        raise ValueError(f"export: custom_func is for MINDIR only. Received: {fmt}")
    if kwargs.get("dataset") is not None or any(_is_dataset(x) for x in inputs):
        raise ValueError(
            "export: a dataset's preprocessing is serialized only into MINDIR; pass the "
            "network's input tensors (e.g. one batch of the dataset's 'image' column)"
        )
    encrypt = _encryption(fmt, kwargs)
    args = _on_device(net, tuple(_as_input(x) for x in inputs))
    path = os.path.realpath(file_name)
    if not path.endswith(_EXTENSIONS[fmt]):
        path += _EXTENSIONS[fmt]
    os.makedirs(os.path.dirname(path), exist_ok=True)

    modes = [(m, m.training) for m in net.modules()]
    phase = getattr(net, "phase", None)
    train_mode(net, False)
    tmp = _temp_name(path)
    try:
        with torch.no_grad():
            expected = _tensors(net(*args))
            if fmt == "ONNX":
                _export_onnx(net, args, tmp, exporter, expected if verify else None)
                if encrypt is not None:
                    with open(tmp, "rb") as f:
                        data = encrypt(f.read())
                    with open(tmp, "wb") as f:
                        f.write(data)
            else:
                _write_pt2(net, args, tmp)
                if verify:
                    program = torch.export.load(tmp)
                    got = _tensors(program.module()(*args))
                    compare(net, got, expected, "torch.export.load", pt2_half(program))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        for module, mode in modes:
            module.training = mode
        if phase is not None:
            net.phase = phase
    return path


def _check_format(file_format: Any) -> str:
    if file_format in _REFUSED:
        raise NotImplementedError(
            f"export: file_format={file_format!r} is a MindSpore runtime format (MindSpore "
            "Lite/Ascend) that no PyTorch runtime reads; use file_format='ONNX' (onnxruntime, "
            "TensorRT, OpenVINO) or 'TORCH_EXPORT' (torch.export's .pt2) to deploy a jisu network"
        )
    if file_format not in _EXTENSIONS:
        raise ValueError(
            f"export: file_format must be one of {list(_VALID)} (MINDIR and AIR are refused). "
            f"Received: {file_format!r}"
        )
    return file_format


def _is_dataset(x: Any) -> bool:
    from ..dataset.core.node import Dataset

    return isinstance(x, Dataset)


def _encryption(fmt: str, kwargs: dict) -> Callable[[bytes], bytes] | None:
    """MindSpore's customized encryption for ONNX: ``enc_mode(bytes, enc_key)``."""
    if "enc_key" not in kwargs:
        return None
    key, mode = kwargs["enc_key"], kwargs.get("enc_mode")
    if not isinstance(key, bytes):
        raise TypeError(f"export: enc_key must be bytes. Received: {type(key).__name__}")
    if fmt != "ONNX":
        raise ValueError(f"export: enc_key is not supported for {fmt}")
    if not callable(mode):
        raise ValueError(
            f"AIR/ONNX only support customized encryption, but got {mode or 'AES-GCM'}."
        )
    return lambda data: mode(data, key)


def _as_input(x: Any) -> Any:
    """An export input as a tensor: NumPy arrays and NumPy scalars become tensors; tuples and
    lists are converted inside; tensors (and Parameters) are detached."""
    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, (np.ndarray, np.generic)):
        return torch.from_numpy(np.array(x))
    if isinstance(x, (tuple, list)):
        return type(x)(_as_input(v) for v in x)
    return x


def _on_device(net: torch.nn.Module, args: tuple) -> tuple:
    """CPU tensor inputs moved to the device of ``net``'s parameters (MindSpore's inputs carry
    no device: ``Tensor(np.zeros(...))`` for a network on CUDA)."""
    device = next((p.device for p in net.parameters()), None)
    if device is None or device.type == "cpu":
        return args
    return pytree.tree_map(
        lambda t: t.to(device) if torch.is_tensor(t) and t.device.type == "cpu" else t, args
    )


def _tensors(output: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]


def _temp_name(path: str) -> str:
    folder, base = os.path.split(path)
    stem, ext = os.path.splitext(base)
    return os.path.join(folder, f".{stem}.{os.getpid()}.tmp{ext}")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporters' warnings, log lines and prints silenced (graph dumps on a failed capture,
    tracer warnings on shapes read as Python numbers): the failure's reason is in the error,
    and the result is checked numerically."""
    disabled = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        sink = io.StringIO()  # torch.export prints the partial graph of a failed capture
        with warnings.catch_warnings(), redirect_stdout(sink), redirect_stderr(sink):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(disabled)


def _reason(exc: BaseException) -> str:
    """One line from an exporter's failure: the root cause's type and first line, and the
    user's code line torch.export names ("The following call raised this error")."""
    root = exc
    while root.__cause__ is not None and root.__cause__ is not root:
        root = root.__cause__
    text = _ANSI.sub("", str(exc))
    lines = [ln.strip() for ln in _ANSI.sub("", str(root)).splitlines() if ln.strip()]
    reason = f"{type(root).__name__}: {lines[0] if lines else ''}"
    if "Exception summary" in text and root is exc:
        summary = text.split("Exception summary", 1)[1].strip().splitlines()
        reason = summary[0].strip() if summary else reason
    where = re.search(r"The following call raised this error:\s*\n\s*(.+)\n\s*(.+)", text)
    if where:
        reason += f" (at {where.group(1).strip()}: {where.group(2).strip()})"
    if "data-dependent" in text or "GuardOnDataDependent" in type(root).__name__:
        reason += (
            "; a Python if/while on a tensor's value cannot be captured in a graph: use a "
            "tensor op (ops.Select, torch.where, torch.cond) instead"
        )
    return reason[:1000]


def _data_dependent(exc: BaseException) -> bool:
    text = str(exc) + " ".join(type(e).__name__ for e in _chain(exc))
    return "data-dependent" in text or "GuardOnDataDependent" in text


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _onnx_modules() -> None:
    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"export(file_format='ONNX') needs onnx and onnxscript (torch's ONNX exporter): "
            f"{_INSTALL}. Missing: {exc.name}"
        ) from exc


def _size_check(net: torch.nn.Module) -> None:
    size = sum(t.numel() * t.element_size() for t in (*net.parameters(), *net.buffers()))
    if size > _PROTO_LIMIT:
        raise RuntimeError(
            f"export: {type(net).__name__} holds {size / 2**30:.2f} GiB of weights, over "
            "ONNX's 2 GiB protobuf limit (MindSpore refuses the same); export with "
            "file_format='TORCH_EXPORT' instead"
        )


def _input_names(args: tuple) -> list[str]:
    return [f"input_{i}" for i, t in enumerate(pytree.tree_leaves(args)) if torch.is_tensor(t)]


def _export_onnx(
    net: torch.nn.Module, args: tuple, tmp: str, exporter: str, expected: list | None
) -> None:
    """``net`` as an ONNX model at ``tmp`` (one file: no external data, see :func:`_size_check`),
    checked against ``expected`` unless it is None. ``exporter="auto"`` tries the dynamo
    exporter, then the TorchScript one when dynamo's capture, its model's loading or its check
    fails (but not on Python control flow on a tensor's value, which a trace would freeze)."""
    _onnx_modules()
    _size_check(net)
    name = type(net).__name__
    kinds = ("dynamo", "torchscript") if exporter == "auto" else (exporter,)
    failures = []
    for kind in kinds:
        try:
            _write_onnx(net, args, tmp, kind)
            if expected is not None:
                compare(net, run_onnx(tmp, args), expected, "onnxruntime", onnx_half(tmp))
        except ImportError:
            raise
        except Exception as exc:
            if (kind == "dynamo" and _data_dependent(exc)) or len(kinds) == 1:
                if str(exc).startswith("export:"):  # the check's own message
                    raise
                raise _failure(name, kind, exc) from exc
            failures.append((kind, exc))
            continue
        if failures:
            warnings.warn(
                f"export: {name} was exported by torch.onnx's TorchScript exporter (a trace of "
                f"the export inputs, checked in onnxruntime) because with the dynamo exporter: "
                f"{_what(failures[0][1])}",
                stacklevel=4,
            )
        return
    text = "; ".join(f"{kind} exporter: {_what(exc)}" for kind, exc in failures)
    raise RuntimeError(f"export: {name} cannot be exported to ONNX: {text}") from failures[-1][1]


def _what(exc: BaseException) -> str:
    """What went wrong with one exporter: the check's message, or the capture's reason."""
    text = str(exc).split("; nothing was written")[0]
    if text.startswith("export: "):
        return text[len("export: ") :]
    return f"the capture failed: {_reason(exc)}"


def _failure(name: str, kind: str, exc: BaseException) -> RuntimeError:
    by = "torch.export (torch.onnx's dynamo exporter)" if kind == "dynamo" else kind
    return RuntimeError(f"export: {name} cannot be exported to ONNX by {by}: {_reason(exc)}")


def _write_onnx(net: torch.nn.Module, args: tuple, tmp: str, kind: str) -> None:
    names = _input_names(args)
    with _quiet():
        if kind == "dynamo":
            program = torch.onnx.export(
                net, args, None, dynamo=True, verbose=False, input_names=names
            )
            program.save(tmp, external_data=False)
        else:
            torch.onnx.export(net, args, tmp, dynamo=False, input_names=names)


def _write_pt2(net: torch.nn.Module, args: tuple, tmp: str) -> None:
    try:
        with _quiet():
            program = torch.export.export(net, args, strict=False)
            torch.export.save(program, tmp)
    except Exception as exc:
        raise RuntimeError(
            f"export: {type(net).__name__} cannot be exported by torch.export: {_reason(exc)}"
        ) from exc
