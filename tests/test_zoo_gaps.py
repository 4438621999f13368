"""The model-zoo names the census still found missing (issue 45) resolve with MindSpore's
meaning, or are refused by name when used (never at import).

Expected values come from MindSpore 2.10 (tests/fixtures/ms_gaps, recorded by its
make_fixtures.py) or from the documented rule.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu
from jisu import _checkparam as validator
from jisu import ops
from jisu.ops import operations as P

HERE = Path(__file__).parent / "fixtures/ms_gaps"
FACTS = json.loads((HERE / "ms_gaps.json").read_text())
ARR = dict(np.load(HERE / "ms_gaps.npz"))


def t(name: str) -> torch.Tensor:
    return torch.from_numpy(ARR[name])


def close(actual: torch.Tensor, name: str, atol: float = 1e-5) -> None:
    np.testing.assert_allclose(actual.detach().numpy(), ARR[name], rtol=1e-5, atol=atol)


def resolve(path: str):
    parts = ["jisu", *path.split(".")]
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


RESOLVED = [
    "train.serialization.context.set_context", "train.serialization.context.GRAPH_MODE",
    "train.serialization.Tensor", "train.serialization.merge_sliced_parameter",
    "train.serialization._update_param", "train.serialization.Validator.check_isinstance",
    "train.serialization.tensor_to_np_type", "communication.management.create_group",
    "amp.DynamicLossScaler", "amp.StaticLossScaler", "amp.all_finite", "tensor", "from_numpy",
    "JitConfig", "common.JitConfig", "common.mutable", "common.api.jit", "common.api.ms_function",
    "common.api._pynative_executor.sync", "common.api.cells_compile_cache",
    "common.dtype.QuantDtype.INT4", "common.dtype.Float", "version.__version__",
    "runtime.set_memory", "runtime.set_cpu_affinity", "train.data_sink", "build_train_network",
    "connect_network_with_dataset", "_checkparam.INC_BOTH", "_checkparam.check_int_range",
    "ops.operations.identity", "ops.Mish", "ops.LSTM", "ops.operations.LSTM", "ops.LRN",
    "ops.Gelu", "ops.LayerNorm", "ops.TensorShape", "ops.PadV3", "ops.RmsNorm", "ops.Randperm",
    "ops.Dropout3D", "ops.operations.RandomCategorical", "ops.sequence_mask", "ops.dense",
    "ops.intopk", "ops.batch_dot", "ops.svd", "ops.print_", "ops.DataType.F32_Default",
    "ops.CustomRegOp", "ops.op_info_register.TBERegOp", "ops.op_info_register.DataType.U8_None",
    "nn.ForwardValueAndGrad", "nn.ParameterUpdate", "nn.PipelineCell", "nn.MicroBatchInterleaved",
    "boost.GradientAccumulation", "boost.grad_accumulation.gradient_clear_op",
    "mindrecord.FileReader",
    "log._LogActionOnce", "common.initializer._register", "ops.operations._inner_ops",
]  # fmt: skip


@pytest.mark.parametrize("path", RESOLVED)
def test_names_resolve(path):
    assert not getattr(resolve(path), "_jisu_unprovided", False)


REFUSED = {
    "load": lambda f: f("net.mindir"),
    "ops.Custom": lambda c: c(lambda x: x, out_shape=(1,), out_dtype=None),
    "ops.Pull": lambda c: c(),
    "ops.Push": lambda c: c(),
    "ops.deformable_conv2d": lambda f: f(None, None, None, 3, 1, 0),
    "train.serialization.build_searched_strategy": lambda f: f("strategy.ckpt"),
    "train.serialization.load_distributed_checkpoint": lambda f: f(None, []),
    "train.serialization.Checkpoint": lambda c: c(),
    "nn.layer.flash_attention.FlashAttention": lambda c: c(128, 8),
    "nn.GraphCell": lambda c: c(None),
    "nn.thor": lambda f: f(None, 0.1, 0.1, 0.9),
    "ops.operations._inner_ops.DecoderKVCache": lambda c: c(),
    "parallel._transformer.moe.MoE": lambda c: c(hidden_size=8, ffn_hidden_size=16),
}


@pytest.mark.parametrize("path", sorted(REFUSED))
def test_refused_by_name_when_used(path):
    obj = resolve(path)  # importing and reading the name works
    assert obj._jisu_unprovided
    with pytest.raises(NotImplementedError, match=rf"mindspore\.{path} is not provided by jisu: "):
        REFUSED[path](obj)


# --- primitives -----------------------------------------------------------------------------
def test_activation_and_lrn_primitives():
    x = t("x4")
    close(P.Mish()(x), "mish")
    close(P.Gelu()(x), "gelu")
    close(P.LRN()(x), "lrn_default")
    close(P.LRN(depth_radius=2, bias=2.0, alpha=1e-2, beta=0.75)(x), "lrn_args")
    assert P.identity()(x) is x
    with pytest.raises(TypeError, match="LRN: bias must be a float"):
        P.LRN(bias=1)


def test_layernorm_primitive_returns_mean_and_variance():
    x, g, b = t("ln_x"), t("ln_gamma"), t("ln_beta")
    for i, out in enumerate(P.LayerNorm(1, 1, 1e-5)(x, g, b)):
        close(out, f"layernorm_{i}")
    for i, out in enumerate(P.LayerNorm(-1, -1)(x, g[0], b[0])):
        close(out, f"layernorm_last_{i}")


@pytest.mark.parametrize("name", sorted(FACTS["padv3"]))
def test_padv3(name):
    mode, contiguous, pads = FACTS["padv3"][name]
    args = [t("pad_x"), torch.tensor(pads)]
    if mode == "constant":
        args.append(torch.tensor(7.0))
    close(P.PadV3(mode=mode, paddings_contiguous=contiguous)(*args), f"padv3_{name}")


def test_tensorshape_dropout3d_and_random_primitives():
    shape = P.TensorShape()(t("pad_x"))
    assert shape.tolist() == FACTS["tensorshape"][0] and shape.dtype == torch.int64
    out, mask = P.Dropout3D(keep_prob=0.5)(torch.ones(2, 3, 2, 2, 2))
    assert list(out.shape) == FACTS["dropout3d"][0] and mask.dtype == torch.bool
    # whole channels are kept (scaled by 1 / keep_prob) or dropped
    assert ((out == 2.0) | (out == 0.0)).all()
    assert (mask.flatten(2).all(-1) | ~mask.flatten(2).any(-1)).all()
    perm = P.Randperm(max_length=6, pad=-1)(torch.tensor([4], dtype=torch.int32))
    assert sorted(perm[:4].tolist()) == [0, 1, 2, 3] and perm[4:].tolist() == [-1, -1]
    assert perm.dtype == torch.int32
    logits = torch.tensor([[0.0, 100.0, 0.0], [100.0, 0.0, 0.0]])
    sample = P.RandomCategorical(torch.int64)(logits, 4, 5)
    assert sample.tolist() == [[1] * 4, [0] * 4]


def test_rmsnorm_formula():
    x, g = torch.randn(2, 3, 4), torch.randn(4)
    y, rstd = P.RmsNorm(1e-6)(x, g)
    expected = 1 / torch.sqrt(x.square().mean(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(rstd, expected)
    torch.testing.assert_close(y, x * expected * g)


@pytest.mark.parametrize("name", sorted(FACTS["lstm"]))
def test_lstm_primitive_flat_cpu_weights(name):
    isz, hsz, layers, bi, bias = FACTS["lstm"][name]
    lstm = P.LSTM(isz, hsz, layers, bias, bi, 0.0)
    outs = lstm(*(t(f"lstm_{name}_{k}") for k in "xhcw"))
    for out, key in zip(outs[:3], ("y", "hn", "cn"), strict=True):
        close(out, f"lstm_{name}_{key}")


def test_lstm_primitive_gpu_layout_is_nn_lstm_order():
    """Two biases: per layer and direction ``w_ih, w_hh, b_ih, b_hh``, as MindSpore's own
    nn.LSTM concatenates them for its GPU kernel."""
    ref = torch.nn.LSTM(3, 2, num_layers=2, bidirectional=True)
    flat = torch.cat([p.detach().reshape(-1) for p in ref._flat_weights]).reshape(-1, 1, 1)
    x, h, c = torch.randn(4, 2, 3), torch.randn(4, 2, 2), torch.randn(4, 2, 2)
    y, hn, cn, _, _ = P.LSTM(3, 2, 2, True, True, 0.0)(x, h, c, flat)
    ry, (rh, rc) = ref(x, (h, c))
    torch.testing.assert_close((y, hn, cn), (ry, rh, rc))
    with pytest.raises(ValueError, match="LSTM: w must hold"):
        P.LSTM(3, 2, 2, True, True, 0.0)(x, h, c, flat[:-1])


def test_op_info_register_records_and_leaves_the_function():
    info = (
        ops.TBERegOp("TensorMove").fusion_type("OPAQUE").input(0, "x", False, "required", "all")
        .dtype_format(ops.DataType.F32_None, ops.DataType.F32_None).get_op_info()
    )  # fmt: skip
    assert info["op_name"] == "TensorMove" and ops.DataType.F16_5HD == ("float16", "NC1HWC0")

    @ops.op_info_register(info)
    def kernel():
        return 3

    assert kernel() == 3


# --- functions --------------------------------------------------------------------------------
def test_sequence_mask_dense_intopk_svd():
    close(ops.sequence_mask(torch.tensor([[1, 3], [0, 4]], dtype=torch.int32), 5), "sequence_mask")
    close(ops.sequence_mask(torch.tensor([2, 1, 3])), "sequence_mask_none")
    close(ops.dense(t("dense_x"), t("dense_w"), t("dense_b")), "dense")
    close(ops.dense(t("dense_x"), t("dense_w")), "dense_nobias")
    for k in (1, 2, 3):
        close(ops.intopk(t("intopk_x"), t("intopk_t"), k), f"intopk_{k}")
    s, u, v = ops.svd(t("svd_x"))
    assert [list(s.shape), list(u.shape), list(v.shape)] == FACTS["svd_shapes"]
    close(s, "svd_s")
    close(u @ torch.diag(s) @ v.T, "svd_recon")


@pytest.mark.parametrize("name", sorted(FACTS["batch_dot"]))
def test_batch_dot(name):
    axes = FACTS["batch_dot"][name]
    axes = tuple(axes) if isinstance(axes, list) else axes
    close(ops.batch_dot(t(f"bd_{name}_a"), t(f"bd_{name}_b"), axes), f"bd_{name}", atol=1e-4)


# --- _checkparam, amp, serialization, dtype ---------------------------------------------------
@pytest.mark.parametrize("case", sorted(FACTS["checkparam"]["cases"]))
def test_checkparam_matches_mindspore(case):
    fn, args = FACTS["checkparam"]["cases"][case]
    if fn in ("check_value_type", "check_isinstance"):  # type names in the json
        types = {"int": int, "float": float, "bool": bool, "str": str, "bytes": bytes}
        args[2] = tuple(types[n] for n in args[2])
    kind, answer = FACTS["checkparam"]["answers"][case]
    if kind == "ok":
        assert getattr(validator, fn)(*args) == answer
    else:
        with pytest.raises({"TypeError": TypeError, "ValueError": ValueError}[answer]):
            getattr(validator, fn)(*args)
    assert FACTS["checkparam"]["INC_BOTH"] == validator.INC_BOTH


def test_dynamic_loss_scaler_sequence_and_static_scaler():
    scaler = jisu.amp.DynamicLossScaler(1024, 2, 3)
    got = []
    for finite in (True, True, True, False, True, False, False, True, True, True, True):
        assert scaler.adjust(torch.tensor(finite)) is True
        got.append([scaler.scale_value.item(), scaler.counter.item()])
    assert got == FACTS["dynamic_loss_scaler"]
    static = jisu.amp.StaticLossScaler(128)
    grad = torch.tensor([1.0, 2.0], dtype=torch.float16)
    scaled, _dtype, unscaled = FACTS["scaler_scale"]
    assert static.scale(grad).tolist() == scaled and static.scale(grad).dtype == torch.float16
    assert static.unscale((grad,))[0].tolist() == unscaled and static.adjust(True) is False
    with pytest.raises(ValueError, match="scale_value must be >= 1"):
        jisu.amp.StaticLossScaler(0.5)


def test_merge_sliced_parameter_and_update_param():
    from jisu.train.serialization import _update_param, merge_sliced_parameter

    pieces = [jisu.Parameter(np.full((2, 3), i, np.float32), "net.w") for i in range(3)]
    merged = merge_sliced_parameter(pieces)
    name, shape, column = FACTS["merge_sliced"]
    assert (merged.name, list(merged.shape), merged[:, 0].tolist()) == (name, shape, column)
    with pytest.raises(ValueError, match="same name"):
        merge_sliced_parameter([pieces[0], jisu.Parameter(np.zeros((2, 4), np.float32), "net.w")])
    target = jisu.Parameter(np.zeros((2, 3), np.float32), "net.w")
    _update_param(target, jisu.Parameter(np.ones((2, 3, 1), np.float64), "net.w"), False)
    assert target.dtype == torch.float32 and target.sum().item() == 6
    with pytest.raises(RuntimeError, match="dtype"):
        _update_param(target, jisu.Parameter(np.ones((2, 3), np.float64), "net.w"), True)


def test_dtype_names_and_top_level_functions():
    from jisu.common.dtype import Float, QuantDtype

    assert {m.name: m.value() for m in QuantDtype} == FACTS["quant_dtype"]
    assert str(QuantDtype.INT8) == "INT8"
    assert Float(16) is torch.float16 and isinstance(torch.bfloat16, Float)
    assert not isinstance(torch.int32, Float)
    assert jisu.tensor(1.5).dtype == torch.float32 and jisu.tensor(2).dtype == torch.int64
    assert jisu.tensor(1.0, dtype=jisu.bfloat16).dtype == torch.bfloat16
    assert jisu.tensor([1.0], device="CPU").device.type == "cpu"
    array = np.ones(3, np.float32)
    assert jisu.from_numpy(array).data_ptr() == array.ctypes.data
    assert jisu.JitConfig(jit_level="O2").jit_config_dict["jit_level"] == "O2"
    grads = (torch.ones(2),)
    assert jisu.mutable(grads) is grads
    jisu.runtime.set_memory(max_size="58GB")
    assert jisu.runtime.settings["set_memory"]["max_size"] == "58GB"


def test_data_sink_runs_sink_size_steps_and_cycles():
    import jisu.dataset as ds

    data = ds.NumpySlicesDataset({"a": np.arange(5)}, shuffle=False).batch(2)
    seen = []
    step = jisu.train.data_sink(lambda a: seen.append(a.tolist()) or a.sum(), data, sink_size=2)
    assert [step().item() for _ in range(3)] == [5, 1, 4]  # the last step's output
    assert seen == [[0, 1], [2, 3], [4], [0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="sink_size must be positive"):
        jisu.train.data_sink(lambda a: a, data, sink_size=0)


def test_create_group_describes_its_members():
    from jisu.communication import management as comm

    comm.create_group("g_zoo", [0])
    assert comm.get_group_size("g_zoo") == 1 and comm.get_rank("g_zoo") == 0
    assert comm.get_world_rank_from_group_rank("g_zoo", 0) == 0
    with pytest.raises(ValueError, match="taken"):
        comm.create_group("g_zoo", [0])
    with pytest.raises(ValueError, match="rank_ids"):
        comm.create_group("g_bad", [0, 1])
    comm.destroy_group("g_zoo")
    with pytest.raises(ValueError, match="no group named"):
        comm.get_group_size("g_zoo")


# --- cells, boost, mindrecord, inner ops ------------------------------------------------------
class _Net(jisu.nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = jisu.Parameter(np.array([[0.5, -1.0], [2.0, 0.25]], np.float32), "w")

    def construct(self, x, y):
        return ((x @ self.w - y) ** 2).sum()


@pytest.mark.parametrize("name", FACTS["fvg_kwargs"])
def test_forward_value_and_grad(name):
    net = _Net()
    kwargs = {
        "first": {},
        "all": {"get_all": True},
        "list": {"weights": net.trainable_params(), "get_by_list": True},
        "both": {"weights": net.trainable_params(), "get_all": True, "get_by_list": True},
    }[name]
    loss, grads = jisu.nn.ForwardValueAndGrad(net, **kwargs)(t("fvg_x"), t("fvg_y"))
    close(loss, f"fvg_{name}_loss", atol=1e-4)
    flat = (
        [grads]
        if torch.is_tensor(grads)
        else [g for part in grads for g in (part if isinstance(part, tuple) else (part,))]
    )
    assert len(flat) == FACTS[f"fvg_{name}_count"]
    for i, g in enumerate(flat):
        close(g, f"fvg_{name}_grad{i}", atol=1e-4)
    sens = jisu.nn.ForwardValueAndGrad(net, get_all=True, sens_param=True)
    close(sens(t("fvg_x"), t("fvg_y"), torch.tensor(3.0))[1][0], "fvg_sens_grad0", atol=1e-4)


def test_parameter_update_and_micro_batch_cells():
    p = jisu.Parameter(np.zeros(3, np.float32), "p")
    x = torch.arange(3.0)
    assert jisu.nn.ParameterUpdate(p)(x) is x and p.tolist() == [0.0, 1.0, 2.0]
    data = torch.arange(8.0).reshape(4, 2)
    seen = []

    def net(x):
        seen.append(x.shape[0])
        return x.sum()

    assert jisu.nn.PipelineCell(net, 4)(data).item() == 28.0 and seen == [1, 1, 1, 1]
    assert jisu.nn.MicroBatchInterleaved(net, 2)(data).item() == 28.0
    with pytest.raises(ValueError, match="must divide into 3 micro batches"):
        jisu.nn.PipelineCell(net, 3)(data)
    for name in ("GraphCell", "AdaSumByGradWrapCell", "AdaSumByDeltaWeightWrapCell"):
        with pytest.raises(NotImplementedError, match=rf"mindspore\.nn\.{name} is not provided"):
            getattr(jisu.nn, name)(None)


def test_gradient_accumulation_matches_mindspore():
    from jisu.boost import GradientAccumulation

    net = _Net()
    acc = GradientAccumulation(2, jisu.nn.SGD(net.trainable_params(), learning_rate=1.0))
    for step in range(3):
        acc(torch.tensor(1.0), (torch.full((2, 2), step + 1.0),))
        close(net.w, f"gacc_w{step}")
        assert acc._accumulation_step.item() == FACTS[f"gacc_step{step}"]


def test_file_reader_rows_as_mindspore_gives_them():
    from jisu.mindrecord import FileReader

    path = Path(__file__).parent / "fixtures/mindrecord/all_types.mindrecord"
    reader = FileReader(str(path))
    assert reader.len() == FACTS["filereader_len"]
    for row, want in zip(reader.get_next(), FACTS["filereader"], strict=False):
        assert sorted(row) == sorted(want)
        for key, (kind, value) in want.items():
            got = row[key]
            if kind == "ndarray":
                np.testing.assert_allclose(got, np.array(value))
            elif kind == "bytes":
                assert got == bytes.fromhex(value)
            else:  # MindSpore reads 0.0 back as int 0 (its JSON); the value is what counts
                assert got == value and isinstance(got, (int, float, str))
    reader.close()


def test_inner_ops_and_initializer_register():
    from jisu.common.initializer import Initializer, _register, initializer

    inner = ops.operations._inner_ops
    with pytest.raises(NotImplementedError, match=r"_inner_ops\.PsROIPooling is not provided"):
        inner.PsROIPooling(pooled_height=7, pooled_width=7, num_rois=4)
    with pytest.raises(AttributeError):
        inner.NotAMindSporeName  # noqa: B018

    @_register("zoo_twos")
    class Twos(Initializer):
        def _initialize(self, arr):  # a user's subclass fills a NumPy array, as in MindSpore
            arr.fill(2.0)

    assert initializer("zoo_twos", (2,)).tolist() == [2.0, 2.0]
    assert isinstance(initializer("twos", (1,)), torch.Tensor)


def test_log_action_once():
    from jisu.log import _LogActionOnce

    class Logger:
        def __init__(self):
            self.said = []

        def warning(self, msg):
            self.said.append(msg)

    logger = Logger()

    @_LogActionOnce(logger=logger, key="zoo_gap_key")
    def build():
        logger.warning("once")

    build()
    build()
    assert logger.said == ["once"]


# --- attention function, device context, top-level names ---------------------------------------
def test_multi_head_attention_forward_as_mindspore():
    from jisu.ops.function.nn_func import multi_head_attention_forward

    w = {k: t(f"mha_{k}") for k in ("q", "k", "v", "in_b", "out_w", "out_b", "packed")}
    q, kv = t("mha_query"), t("mha_keyval")
    out, weights = multi_head_attention_forward(
        query=q, key=kv, value=kv, embed_dim_to_check=8, num_heads=2, q_proj_weight=w["q"],
        k_proj_weight=w["k"], v_proj_weight=w["v"], in_proj_weight=None,
        in_proj_bias=w["in_b"], bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0,
        out_proj_weight=w["out_w"], out_proj_bias=w["out_b"], use_separate_proj_weight=True,
        training=False,
    )  # fmt: skip
    close(out, "mha_sep_out")
    close(weights, "mha_sep_weights")
    out, weights = multi_head_attention_forward(
        kv, kv, kv, 8, 2, w["packed"], w["in_b"], None, None, False, 0.0, w["out_w"],
        w["out_b"], training=False, key_padding_mask=t("mha_key_pad"),
        average_attn_weights=False,
    )  # fmt: skip
    close(out, "mha_packed_out")
    close(weights, "mha_packed_weights")
    x = torch.randn(3)
    torch.testing.assert_close(ops.function.silu(x), x * torch.sigmoid(x))


def test_device_context_and_c_expression():
    from jisu._c_expression import MSContext, init_exec_dataset

    jisu.device_context.ascend.op_precision.precision_mode("must_keep_origin_dtype")
    assert jisu.device_context.ascend.op_precision.settings["precision_mode"] == (
        "must_keep_origin_dtype"
    )
    with pytest.raises(ValueError, match="precision_mode: mode must be one of"):
        jisu.device_context.ascend.op_precision.precision_mode("fp8")
    before = torch.backends.cuda.matmul.allow_tf32
    jisu.device_context.gpu.op_precision.matmul_allow_tf32(not before)
    assert torch.backends.cuda.matmul.allow_tf32 is (not before)
    jisu.device_context.gpu.op_precision.matmul_allow_tf32(before)
    assert jisu.device_context.gpu.is_available() == torch.cuda.is_available()
    assert MSContext.get_instance() is MSContext.get_instance()
    assert MSContext.get_instance().get_ascend_soc_version() == ""
    with pytest.raises(NotImplementedError, match="init_exec_dataset is not provided"):
        init_exec_dataset("queue", 1, 1, [], [], [])


def test_top_level_and_ops_aliases():
    from jisu.train import callbacks

    for name in ("LossMonitor", "TimeMonitor", "ModelCheckpoint", "CheckpointConfig"):
        assert getattr(jisu, name) is getattr(callbacks, name)
    assert ops.P is P and ops.P.Shape is P.Shape
    assert ops.Tensor([1, 2]).dtype == torch.int64


def test_callback_module_paths_and_handle_loss():
    from jisu.train.callback._callback import _handle_loss
    from jisu.train.callback._loss_monitor import LossMonitor
    from jisu.train.callback._time_monitor import TimeMonitor
    from jisu.train.callbacks import LossMonitor as Loss
    from jisu.train.callbacks import TimeMonitor as Time

    assert (TimeMonitor, LossMonitor) == (Time, Loss)
    assert _handle_loss(torch.tensor([1.0, 2.0])) == 1.5  # MindSpore: the mean, a float
    first = torch.tensor(3.0)
    assert _handle_loss((first, torch.tensor(1.0))) is first
    assert _handle_loss(2.5) == 2.5


@pytest.mark.parametrize("tag", ["fp16", "fp32"])
def test_fused_cast_adam_weight_decay(tag):
    dtype = torch.float16 if tag == "fp16" else torch.float32
    var = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5], dtype=dtype))
    m = torch.nn.Parameter(torch.tensor([0.1, 0.2, 0.3]))
    v = torch.nn.Parameter(torch.tensor([0.01, 0.02, 0.03]))
    grad = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float16)
    out = P.FusedCastAdamWeightDecay()(var, m, v, 0.1, 0.9, 0.999, 1e-8, 0.01, grad, 2.0)
    assert out[0] is var and var.dtype == dtype
    close(var, f"fcadam_{tag}_var", atol=1e-3 if tag == "fp16" else 1e-6)
    close(m, f"fcadam_{tag}_m")
    close(v, f"fcadam_{tag}_v")


def test_file_writer_open_for_append(tmp_path):
    from jisu.mindrecord import FileReader, FileWriter

    path = str(tmp_path / "faces.rec")
    writer = FileWriter(path, 2)
    schema = {"label": {"type": "int32"}, "image": {"type": "bytes"},
              "box": {"type": "float32", "shape": [2]}}  # fmt: skip
    writer.add_schema(schema, "faces")
    writer.write_raw_data([{"label": i, "image": b"ab", "box": np.full(2, i, np.float32)}
                           for i in range(3)])  # fmt: skip
    writer.commit()
    appender = FileWriter.open_for_append(path + "0")  # MindSpore passes a shard file
    appender.write_raw_data([{"label": 7, "image": b"c", "box": np.zeros(2, np.float32)}])
    appender.commit()
    rows = list(FileReader(path).get_next())
    assert [r["label"] for r in rows] == [0, 1, 2, 7]
    assert rows[-1]["image"] == b"c" and rows[1]["box"].tolist() == [1.0, 1.0]
    mindrecord = Path(__file__).parent / "fixtures/mindrecord/all_types.mindrecord"
    with pytest.raises(NotImplementedError, match="open_for_append is not provided"):
        FileWriter.open_for_append(str(mindrecord))


def test_forward_value_and_grad_runs_the_network_once():
    calls = []

    def net(x, label):
        calls.append(1)
        return (x * 2).sum() + label.sum() * 0

    loss, grads = jisu.nn.ForwardValueAndGrad(net, get_all=True)(
        torch.ones(2), torch.tensor([1, 2])
    )
    assert len(calls) == 1 and loss.item() == 4.0
    assert grads[0].tolist() == [2.0, 2.0] and grads[1].tolist() == [0, 0]  # an int input: zeros


def test_graph_data_is_refused_by_name_when_built():
    import jisu.dataset as ds

    with pytest.raises(NotImplementedError, match=r"mindspore\.dataset\.GraphData is not provided"):
        ds.GraphData("graph.mindrecord")
