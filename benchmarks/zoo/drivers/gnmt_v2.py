"""research/nlp/gnmt_v2 (default_config_gpu.yaml): train.py's own _build_training_pipeline and
_train run unchanged with a tiny GNMT (hidden 32, 4 layers, 8 tokens, vocabulary 60, batch 2):
GNMTNetworkWithLoss (EmbeddingLookup, the bidirectional-then-unidirectional DynamicRNN encoder,
the attention decoder, a label-smoothed loss), the project's weight re-initialisation, its Adam
over a WarmupMultiStepLR tensor, DynamicLossScaleManager.get_update_cell and
GNMTTrainOneStepWithLossScaleCell (clip_by_global_norm-style clipping, overflow checks) in
Model(net_with_grads), LossCallBack/TimeMonitor/ModelCheckpoint/SummaryCollector, sink mode with
sink_size 100 (one sink epoch of 100 steps over the fixed batch); only the data is synthetic."""

import numpy as np
import synth

PROJECT = "research/nlp/gnmt_v2"
ARGV = ["--config_path=default_config_gpu.yaml", "--device_target=CPU"]
EXPORT = True
STUBS = ["subword_nmt", "subword_nmt.apply_bpe", "sacremoses"]  # tokenizer (data preparation)
SEQ, VOCAB, SINK = 8, 60, 100
TINY = {
    "batch_size": 2,
    "seq_length": SEQ,
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "intermediate_size": 64,
    "max_decode_length": SEQ,
    "epochs": 1,
    "warmup_steps": 2,
    "lr": 0.01,
    "save_ckpt_steps": SINK,
}


def imports(p):
    import train
    from src.gnmt_model import gnmt

    for key, value in TINY.items():
        setattr(train.default_config, key, value)
    train.default_config.ckpt_path = str(p.workdir / "ckpt")
    p.train, p.gnmt = train, gnmt
    p.config = train.get_config(train.default_config)


def network(p):
    return p.gnmt.GNMT(p.config, is_training=True, use_one_hot_embeddings=True)


def _columns():
    ids = synth.array((2, SEQ), "int32", high=VOCAB)
    mask = np.ones((2, SEQ), "int32")
    return ids, mask


def inputs(p):
    ids, mask = _columns()
    return synth.tensors(ids, mask, ids)


def train(p, steps):
    import os

    import jisu as ms

    ids, mask = _columns()
    columns = {
        "source_eos_ids": ids,
        "source_eos_mask": mask,
        "target_sos_ids": ids,
        "target_eos_ids": np.roll(ids, -1, axis=1),
        "target_eos_mask": mask,
    }
    data = synth.dataset(columns, SINK)  # _train runs epochs * size // sink_size sink epochs
    made = []
    base = p.train.GNMTNetworkWithLoss
    p.train.GNMTNetworkWithLoss = lambda *a, **k: made.append(base(*a, **k)) or made[-1]
    p.train.Model, recorder = synth.recording_model(ms.Model)
    os.chdir(p.workdir)
    p.train._build_training_pipeline(p.config, pre_training_dataset=data)
    p.trained = made[0].gnmt.gnmt
    p.model = recorder.model
    return recorder.losses
