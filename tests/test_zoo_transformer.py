"""``jisu.parallel._transformer`` (MindSpore 2.0's big-model transformer library, used by the
model zoo's GPT and mindocr's ABINet): MindSpore's parameter names and shapes, and its outputs
for the same weights, recorded from MindSpore 2.0.0 (tests/fixtures/ms_gaps/
make_transformer_fixtures.py; 2.10 dropped the package)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from jisu.parallel._transformer import (
    AttentionMask,
    CrossEntropyLoss,
    FeedForward,
    MoE,
    MoEConfig,
    MultiHeadAttention,
    TransformerDecoder,
    TransformerEncoder,
    TransformerOpParallelConfig,
    _LayerNorm,
)
from jisu.parallel._transformer.layers import _args_type_validator_check, _valid_type_checks

HERE = Path(__file__).parent / "fixtures/ms_gaps"
FACTS = json.loads((HERE / "transformer.json").read_text())
ARR = dict(np.load(HERE / "transformer.npz"))
B, S, H, F, HEADS = 2, 4, 8, 16, 2


def load(net: torch.nn.Module, prefix: str) -> None:
    """MindSpore's names and shapes, then its seeded values, by name."""
    names = [[n, list(p.shape)] for n, p in net.parameters_and_names()]
    assert names == FACTS[f"{prefix}_names"]
    with torch.no_grad():
        for name, param in net.parameters_and_names():
            param.copy_(torch.from_numpy(ARR[f"{prefix}/{name}"]))
    net.set_train(False)


def close(actual: torch.Tensor, name: str, atol: float) -> None:
    np.testing.assert_allclose(actual.detach().float().numpy(), ARR[name], rtol=1e-2, atol=atol)


def test_attention_mask():
    mask = AttentionMask(seq_length=S)(torch.from_numpy(ARR["input_mask"]))
    assert mask.dtype == torch.float32 and FACTS["attention_mask_dtype"] == "Float32"
    close(mask, "attention_mask", 0)


@pytest.mark.parametrize("post", [0, 1])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_encoder_names_and_outputs(post, dtype):
    enc = TransformerEncoder(
        batch_size=B, num_layers=2, hidden_size=H, ffn_hidden_size=F, seq_length=S,
        num_heads=HEADS, post_layernorm_residual=bool(post),
    )  # fmt: skip
    load(enc, f"encoder_post{post}")
    x = torch.from_numpy(ARR["x"]).to(torch.float32 if dtype == "fp32" else torch.float16)
    out, present = enc(x, torch.from_numpy(ARR["attention_mask"]))
    key = f"encoder_post{post}_{dtype}"
    assert str(out.dtype).replace("torch.float", "Float") == FACTS[f"{key}_dtype"]
    close(out, f"{key}/out", atol=2e-2)
    close(present[0][0], f"{key}/key0", atol=2e-2)


def test_feed_forward_attention_layernorm_and_loss():
    ffn = FeedForward(hidden_size=H, ffn_hidden_size=F, dropout_rate=0.1)
    load(ffn, "ffn")
    out = ffn(torch.from_numpy(ARR["x"].reshape(-1, H)))
    assert out.dtype == torch.float16 and FACTS["ffn_dtype"] == "Float16"
    close(out, "ffn/out", atol=2e-2)
    mha = MultiHeadAttention(batch_size=B, src_seq_length=S, tgt_seq_length=S, hidden_size=H,
                             num_heads=HEADS)  # fmt: skip
    load(mha, "mha")
    flat = torch.from_numpy(ARR["x"].reshape(-1, H))
    out, (k, v) = mha(flat, flat, flat, torch.from_numpy(ARR["attention_mask"]))
    assert [list(out.shape), list(k.shape), list(v.shape)] == FACTS["mha_shapes"][:3]
    close(out, "mha/out", atol=2e-2)
    close(v, "mha/value", atol=2e-2)
    ln = _LayerNorm((H,))
    load(ln, "ln")
    close(ln(torch.from_numpy(ARR["x"])), "ln/out", atol=1e-5)
    cfg = TransformerOpParallelConfig()
    loss = CrossEntropyLoss(cfg.dp_mp_config)(
        torch.from_numpy(ARR["ce_logits"]), torch.from_numpy(ARR["ce_labels"]),
        torch.from_numpy(ARR["ce_mask"]),
    )  # fmt: skip
    close(loss, "ce/out", atol=1e-5)


def test_configs_as_mindspore_records_them():
    cfg = TransformerOpParallelConfig(data_parallel=2, model_parallel=4, pipeline_stage=1,
                                      micro_batch_num=3, vocab_emb_dp=False)  # fmt: skip
    cfg.data_parallel = 8
    got = {
        "data_parallel": cfg.data_parallel, "model_parallel": cfg.model_parallel,
        "dp_mp_config.data_parallel": cfg.dp_mp_config.data_parallel,
        "moe.data_parallel": cfg.moe_parallel_config.data_parallel,
        "embedding.vocab_emb_dp": cfg.embedding_dp_mp_config.vocab_emb_dp,
        "micro_batch_num": cfg.micro_batch_num, "expert_parallel": cfg.expert_parallel,
        "gradient_aggregation_group": cfg.gradient_aggregation_group,
        "recompute.recompute": cfg.recompute.recompute,
        "default_moe.expert_num": MoEConfig().expert_num,
    }  # fmt: skip
    assert got == FACTS["config"]
    builds = {
        "dp_zero": lambda: TransformerOpParallelConfig(data_parallel=0),
        "dp_float": lambda: TransformerOpParallelConfig(data_parallel=1.0),
        "recompute_int": lambda: TransformerOpParallelConfig(recompute=1),
        "moe_capacity": lambda: MoEConfig(capacity_factor=0.5),
        "moe_chosen": lambda: MoEConfig(expert_num=2, num_experts_chosen=3),
        "ce_config": lambda: CrossEntropyLoss(cfg),
    }
    for name, build in builds.items():
        expected = FACTS["config_errors"][name]
        with pytest.raises({"TypeError": TypeError, "ValueError": ValueError}[expected]):
            build()


def test_refusals_and_validators():
    with pytest.raises(NotImplementedError, match=r"moe\.MoE is not provided by jisu"):
        MoE(hidden_size=8, ffn_hidden_size=16, dropout_rate=0.1)
    with pytest.raises(NotImplementedError, match="TransformerDecoder is not provided"):
        TransformerDecoder(num_layers=1)
    with pytest.raises(NotImplementedError, match=r"use_past=True\) is not provided"):
        MultiHeadAttention(2, 4, 4, 8, 2, use_past=True)

    class Layer:
        @_args_type_validator_check(hidden_act=_valid_type_checks([str], "Layer"))
        def __init__(self, hidden_act="gelu"):
            self.hidden_act = hidden_act

    assert Layer("relu").hidden_act == "relu"
    with pytest.raises(TypeError, match="For 'Layer', the 'hidden_act' must be one of"):
        Layer(3)


def test_cost_model_context_is_recorded():
    from jisu.parallel import _cost_model_context as cmc

    cmc._set_multi_subgraphs()
    cmc.set_cost_model_context(device_memory_capacity=32.0)
    assert cmc._get_multi_subgraphs()
    assert cmc.get_cost_model_context("device_memory_capacity") == 32.0
    cmc.reset_cost_model_context()
    with pytest.raises(ValueError, match="was not set"):
        cmc.get_cost_model_context("device_memory_capacity")


def test_mindspore_1x_nn_transformer_path():
    from jisu.nn.transformer.layers import _LayerNorm as OldLayerNorm
    from jisu.nn.transformer.loss import CrossEntropyLoss as OldLoss
    from jisu.nn.transformer.transformer import TransformerOpParallelConfig as OldConfig

    assert (OldLayerNorm, OldLoss, OldConfig) == (
        _LayerNorm,
        CrossEntropyLoss,
        TransformerOpParallelConfig,
    )
