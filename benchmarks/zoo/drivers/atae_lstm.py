"""research/nlp/atae_lstm (default_config.yaml): train.py's __main__ wiring rebuilt step by step
(it has no train function) on a 50-word vocabulary, batch 2, 10-token sentences: AttentionLstm
(the project's own LSTM from model_utils/rnns with a sequence-length input, aspect attention),
NetWithLoss (BCELoss, reduction sum), Adagrad over two parameter groups with their own learning
rates, nn.TrainOneStepCell in Model(train_net), TimeMonitor/LossMonitor/ModelCheckpoint and the
project's SaveCallback (an eval pass of the network every step, save_checkpoint of the train
network)."""

import numpy as np
import synth

PROJECT = "research/nlp/atae_lstm"
ARGV = ["--config_path=default_config.yaml"]
EXPORT = True
SEQ, VOCAB = 10, 50


def imports(p):
    import train
    from src import atae_for_train, model
    from src.config import config

    config.batch_size, config.vocab_size, config.dropout_prob = 2, VOCAB, 0.0
    p.train, p.atae, p.loss, p.config = train, model, atae_for_train, config


def _table(p):
    import jisu as ms

    return ms.Tensor(synth.array((VOCAB, p.config.dim_word), seed=3) * 0.1)


def network(p):
    return p.atae.AttentionLstm(p.config, _table(p), is_train=False)  # as eval.py builds it


def _columns():
    return {
        "content": synth.array((2, SEQ), "int32", high=VOCAB),
        "sen_len": np.array([SEQ, SEQ - 3], "int32"),
        "aspect": synth.array((2,), "int32", high=5, seed=1),
        "solution": np.eye(3, dtype="int32")[[0, 2]],
    }


def inputs(p):
    c = _columns()
    return synth.tensors(c["content"], c["sen_len"], c["aspect"])


def train(p, steps):
    import os

    import jisu as ms
    from jisu import nn
    from jisu.train.callback import CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor

    os.chdir(p.workdir)
    c = p.config
    net = p.atae.AttentionLstm(c, _table(p), is_train=True)
    model_with_loss = p.loss.NetWithLoss(net, batch_size=1)
    word = {"lr": c.lr_word_vector}
    other = {"params": [], "lr": c.lr}
    for param in net.trainable_params():
        if param.name.endswith("embedding_word.embedding_table"):
            word["params"] = [param]
        else:
            other["params"].append(param)
    optimizer = nn.Adagrad(params=[word, other], weight_decay=c.weight_decay)
    model = ms.Model(nn.TrainOneStepCell(model_with_loss, optimizer))
    data = synth.dataset(_columns(), steps)
    ckpt = ModelCheckpoint(
        prefix="atae-lstm",
        directory="./train/",
        config=CheckpointConfig(save_checkpoint_steps=steps, keep_checkpoint_max=1),
    )
    save = p.train.SaveCallback(net, synth.dataset(_columns(), 1), "ckpt", 0)
    callbacks = (TimeMonitor(data_size=steps), LossMonitor(), ckpt, save)
    losses = synth.model_train(model, data, callbacks)
    net.is_train = False
    p.trained, p.model = net, model
    return losses
