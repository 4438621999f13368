"""The check of an exported model: run it (onnxruntime for ONNX, ``torch.export.load`` for
``.pt2``) on the export inputs and compare its outputs with the network's eager ones, within
:data:`TOLERANCES` (see :func:`jisu.train.exporting.export`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.utils import _pytree as pytree

__all__ = ["TOLERANCES", "compare", "onnx_half", "pt2_half", "run_onnx"]

_INSTALL = "pip install 'jisu[export]'"

#: (rtol, atol) by output dtype, the check ``|exported - eager| <= atol * scale + rtol * |eager|``
#: with ``scale = max(1, max |eager|)``. float32/float64: onnxruntime's kernels (MLAS
#: convolutions and GEMMs, fused LSTM cells, other summation orders) round differently from
#: torch's; over a ResNet-18 the difference is ~1e-6 of the output's scale, so 1e-4 relative /
#: 1e-5 of the scale leaves margin, while a wrong graph (a branch traced as a constant, a
#: dropped op) is off by orders more. float16/bfloat16 (eps ~1e-3/~8e-3): about ten units in
#: the last place at the output's scale, as roundings differ through a layer stack (DBNet's
#: float16 convolutions: 6e-3 on sigmoid outputs); a graph that computes in them anywhere (a
#: zoo Dense with ``compute_type=float16``, a network converted by amp O2/O3) is checked with
#: their tolerance even where its outputs are float32.
#: Integer and bool outputs (argmax, masks) must be equal.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-5),
    "float64": (1e-4, 1e-5),
    "float16": (2e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}


def run_onnx(path: str, args: tuple) -> list[torch.Tensor]:
    try:
        import onnxruntime
    except ImportError as exc:
        raise ImportError(
            f"export: checking the ONNX model needs onnxruntime: {_INSTALL} (or pass "
            "verify=False to write the model unchecked)"
        ) from exc
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's own errors (InvalidGraph, NotImplemented) are opaque
        text = " ".join(str(exc).split())
        hint = (
            " (onnxruntime's CPU kernels lack most bfloat16 ops: export the float32 network, "
            "or pass verify=False)"
            if "bfloat16" in text
            else ""
        )
        raise RuntimeError(
            f"export: onnxruntime cannot load the exported model: {text[:500]}{hint}; nothing "
            "was written"
        ) from exc
    tensors = [t for t in pytree.tree_leaves(args) if torch.is_tensor(t)]
    feed = {}
    for i, t in enumerate(tensors):
        if t.dtype == torch.bfloat16:
            raise RuntimeError(
                "export: onnxruntime's Python API takes no bfloat16 input; pass float32 "
                "inputs or verify=False"
            )
        feed[f"input_{i}"] = t.cpu().numpy()
    wanted = {i.name for i in session.get_inputs()}  # the exporter drops unused inputs
    outputs = session.run(None, {k: v for k, v in feed.items() if k in wanted})
    return [torch.from_numpy(np.asarray(o)) for o in outputs]


def onnx_half(path: str) -> str | None:
    """``"float16"``/``"bfloat16"`` when the ONNX graph computes in it anywhere (a Cast, a half
    initializer), else None."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    kinds = {onnx.TensorProto.FLOAT16: "float16", onnx.TensorProto.BFLOAT16: "bfloat16"}
    found = [i.data_type for i in model.graph.initializer]
    for node in model.graph.node:
        if node.op_type == "Cast":
            found += [a.i for a in node.attribute if a.name == "to"]
    for value in (*model.graph.input, *model.graph.output, *model.graph.value_info):
        found.append(value.type.tensor_type.elem_type)
    half = [kinds[t] for t in found if t in kinds]
    return "bfloat16" if "bfloat16" in half else (half[0] if half else None)


def pt2_half(program: Any) -> str | None:
    """As :func:`onnx_half`, for an ``ExportedProgram``'s graph."""
    dtypes = set()
    for node in program.graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            dtypes.add(val.dtype)
    if torch.bfloat16 in dtypes:
        return "bfloat16"
    return "float16" if torch.float16 in dtypes else None


def compare(
    net: torch.nn.Module,
    got: list[torch.Tensor],
    expected: list[torch.Tensor],
    runtime: str,
    half: str | None = None,
) -> None:
    """Raise unless ``got`` (the exported model's outputs) matches ``expected`` (the network's
    eager outputs) within :data:`TOLERANCES`: by each output's dtype, or by ``half``'s when the
    graph computes in float16/bfloat16 anywhere (float32 outputs of a half computation carry
    its rounding)."""
    name = type(net).__name__
    if len(got) != len(expected):
        raise RuntimeError(
            f"export: {name}: {runtime} gives {len(got)} outputs, the network {len(expected)}"
        )
    for i, (a, b) in enumerate(zip(got, expected)):
        b = b.detach().cpu()
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(
                f"export: {name}: output {i} has shape {tuple(a.shape)} in {runtime}, "
                f"{tuple(b.shape)} in the network"
            )
        if not b.is_floating_point():
            if not torch.equal(a.to(b.dtype), b):
                raise RuntimeError(f"export: {name}: output {i} ({b.dtype}) differs in {runtime}")
            continue
        kind = half or str(b.dtype).removeprefix("torch.")
        rtol, atol = TOLERANCES.get(kind, TOLERANCES["float32"])
        a, b = a.double(), b.double()
        if not (torch.isfinite(a) == torch.isfinite(b)).all():
            raise RuntimeError(
                f"export: {name}: output {i}'s non-finite values differ in {runtime}"
            )
        fin = torch.isfinite(b)
        if not fin.any():
            continue
        a, b = a[fin], b[fin]
        scale = max(1.0, float(b.abs().max()))
        err = (a - b).abs()
        if (err > atol * scale + rtol * b.abs()).any():
            raise RuntimeError(
                f"export: {name}: output {i} differs between {runtime} and the network: max "
                f"abs error {float(err.max()):.3g} (output scale {scale:.3g}; tolerance rtol "
                f"{rtol:g}, atol {atol:g} x scale, {kind}){_batch_statistics(net)}; nothing was "
                "written (verify=False writes it unchecked)"
            )


def _batch_statistics(net: torch.nn.Module) -> str:
    """A hint when ``net`` normalizes with batch statistics in eval mode: torch's ONNX exporter
    writes such a batch_norm as an inference BatchNormalization (running statistics)."""
    cells = [m for m in net.modules() if getattr(m, "use_batch_statistics", None) is True]
    if not cells:
        return ""
    return (
        f"; {len(cells)} BatchNorm cells use batch statistics in eval mode "
        "(use_batch_statistics=True), which torch's ONNX exporter writes with the running "
        "statistics instead (microsoft/onnxscript#1791)"
    )
