"""research/nlp/textrcnn (default_config.yaml, cell "lstm" on CPU): train.py's own run_train
runs unchanged: textrcnn with a frozen pretrained Embedding, P.DynamicRNN forward and backward
over float16 Parameters, fp16 Dense layers (to_float), Adam over get_lr_lstm's per-step lr
tensor, Model(amp_level="O3") with Accuracy, ModelCheckpoint/LossMonitor/TimeMonitor, sink mode;
only its weight.txt (a 50-word random table) and create_dataset are synthetic."""

import numpy as np
import synth

PROJECT = "research/nlp/textrcnn"
ARGV = ["--config_path=default_config.yaml"]  # --device_target only takes Ascend or GPU
EXPORT = True
STUBS = ["gensim"]  # word2vec, data preparation only
SEQ, VOCAB = 8, 50


def imports(p):
    import train
    from src import textrcnn

    c = train.cfg
    c.cell, c.batch_size, c.lstm_num_epochs = "lstm", 2, 1
    c.lstm_lr_warm_up_epochs, c.lstm_lr_adjust_epochs = 0, 1
    c.lstm_lr_init = c.lstm_lr_max = 3e-3
    c.preprocess_path = str(p.workdir)
    c.ckpt_folder_path = str(p.workdir / "ckpt")
    np.savetxt(p.workdir / "weight.txt", synth.array((VOCAB, c.embed_size), seed=3) * 0.1)
    p.train, p.tr = train, textrcnn


def network(p):
    import jisu as ms

    table = ms.Tensor(synth.array((VOCAB, p.train.cfg.embed_size), seed=3) * 0.1)
    return p.tr.textrcnn(weight=table, vocab_size=VOCAB, cell="lstm", batch_size=2)


def inputs(p):
    return synth.tensors(synth.array((2, SEQ), "int32", high=VOCAB))


def train(p, steps):
    import jisu as ms

    data = synth.dataset(
        {"feature": synth.array((2, SEQ), "int32", high=VOCAB), "label": np.array([0, 1], "int32")},
        steps,
    )
    p.train.create_dataset = lambda *a, **k: data
    made = []
    p.train.textrcnn = lambda **kw: made.append(p.tr.textrcnn(**kw)) or made[-1]
    p.train.Model, recorder = synth.recording_model(ms.Model)
    p.train.run_train()
    p.trained = made[0]
    p.model = recorder.model
    return recorder.losses
