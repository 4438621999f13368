"""official/nlp/GPT: train.py's own run_train runs unchanged with a tiny GPTConfig (2 layers,
embedding 32, 2 heads, 16 tokens, vocabulary 100, batch 2): GPT on MindSpore's
parallel._transformer layers (TransformerOpParallelConfig, CrossEntropyLoss(dp_mp_config)),
GPTWithLoss (eos mask), AdamWeightDecay over decay/no-decay groups with order_params and the
project's LearningRate schedule, DynamicLossScaleUpdateCell and GPTTrainOneStepWithLossScaleCell
in Model(gpt_with_grads), TimeMonitor/LossMonitor/ModelCheckpoint, sink mode with sink_size 6;
only GPTConfig's sizes and create_dataset are swapped."""

import synth

PROJECT = "official/nlp/GPT"
SEQ, VOCAB, SINK = 16, 100, 6
ARGV = [
    "--epoch_size=1",
    "--warmup_step=2",
    f"--sink_size={SINK}",
    "--start_lr=1e-3",
    "--model_parallel_num=1",
]
TINY = {
    "batch_size": 2,
    "seq_length": SEQ,
    "vocab_size": VOCAB,
    "embedding_size": 32,
    "num_layers": 2,
    "num_heads": 2,
    "dropout_rate": 0.0,
}


def imports(p):
    import train
    from src import gpt, utils

    p.train, p.gpt, p.utils = train, gpt, utils


def _config(p):
    import jisu as ms

    return p.utils.GPTConfig(
        **TINY, expand_ratio=4, post_layernorm_residual=False, compute_dtype=ms.float16
    )


def network(p):
    return p.gpt.GPT(_config(p))


def inputs(p):
    import numpy as np

    ids = synth.array((2, SEQ), "int32", high=VOCAB)
    return synth.tensors(ids, np.ones((2, SEQ), "float32"))


def train(p, steps):
    import os

    import jisu as ms

    base = p.utils.GPTConfig
    p.train.GPTConfig = lambda **kw: base(**{**kw, **TINY})
    data = synth.dataset({"input_ids": synth.array((2, SEQ + 1), "int32", high=VOCAB)}, SINK)
    p.train.create_dataset = lambda *a, **k: data
    made = []
    gpt_class = p.gpt.GPT
    p.train.GPT = lambda cfg: made.append(gpt_class(cfg)) or made[-1]
    p.train.Model, recorder = synth.recording_model(ms.Model)
    os.chdir(p.workdir)
    p.train.run_train()
    p.trained, p.model = made[0], recorder.model
    return recorder.losses
