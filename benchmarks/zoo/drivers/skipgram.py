"""research/nlp/skipgram: train.py's __main__ wiring rebuilt (it has no train function) with a
100-word vocabulary, embedding 16, batch 4, 5 negatives: SkipGram (two Embeddings with Uniform
initializers, a per-sample negative-sampling loss: a (batch,) vector, which MindSpore
backpropagates from ones), Adam over poly_decay_lr, nn.TrainOneStepCell in Model(train_net),
LossMonitor/TimeMonitor/ModelCheckpoint, sink mode with sink_size = print_interval, then
save_w2v_emb."""

import synth

PROJECT = "research/nlp/skipgram"
ARGV = ["--device_target=GPU"]  # its choices are Ascend/GPU; jisu runs where torch runs
EXPORT = True
VOCAB, EMB, BATCH, NEG = 100, 16, 4, 5


def imports(p):
    from src import lr_scheduler, skipgram
    from src.config import w2v_cfg

    p.sg, p.lr, p.cfg = skipgram, lr_scheduler, w2v_cfg


def network(p):
    return p.sg.SkipGram(VOCAB, EMB)


def _columns():
    return (
        synth.array((BATCH,), "int32", high=VOCAB),
        synth.array((BATCH,), "int32", high=VOCAB, seed=1),
        synth.array((BATCH, NEG), "int32", high=VOCAB, seed=2),
    )


def inputs(p):
    return synth.tensors(*_columns())


def train(p, steps):
    import jisu as ms
    from jisu import nn
    from jisu.train.callback import CheckpointConfig, LossMonitor, ModelCheckpoint, TimeMonitor

    c = p.cfg
    c.print_interval, c.lr = steps, 0.05
    net = network(p)
    lrs = p.lr.poly_decay_lr(c.lr, c.end_lr, steps, steps, c.power)
    model = ms.Model(
        nn.TrainOneStepCell(
            network=net, optimizer=nn.Adam(net.trainable_params(), learning_rate=ms.Tensor(lrs))
        )
    )
    ckpt = ModelCheckpoint(
        prefix="w2v",
        directory=str(p.workdir / "ckpts"),
        config=CheckpointConfig(save_checkpoint_steps=steps, keep_checkpoint_max=1),
    )
    c_words, p_words, n_words = _columns()
    data = synth.dataset({"c_words": c_words, "p_words": p_words, "n_words": n_words}, steps)
    recorder = synth.loss_recorder()
    model.train(
        1,
        data,
        callbacks=[recorder, TimeMonitor(), LossMonitor(), ckpt],
        dataset_sink_mode=c.dataset_sink_mode,
        sink_size=c.print_interval,
    )
    (p.workdir / "emb").mkdir(exist_ok=True)
    net.save_w2v_emb(str(p.workdir / "emb"), {i: f"w{i}" for i in range(VOCAB)})
    p.trained, p.model = net, model
    return recorder.losses
