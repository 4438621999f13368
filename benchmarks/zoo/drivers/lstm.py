"""official/nlp/LSTM: SentimentNet (bidirectional 2-layer LSTM over a fixed embedding table,
sequences of 500 tokens as its dataset gives), Momentum, Model(network, loss, opt, {'acc'})."""

import synth

PROJECT = "official/nlp/LSTM"
ARGV = ["--config_path=default_config.yaml", "--device_target=CPU"]
EXPORT = True
VOCAB, SEQ = 50, 500
STUBS = ["gensim"]  # word vectors for data preparation only (src/imdb.py)


def imports(p):
    from src import lstm
    from src.model_utils.config import config

    p.config, p.lstm = config, lstm


def network(p):
    import jisu as ms

    c = p.config
    return p.lstm.SentimentNet(
        vocab_size=VOCAB,
        embed_size=c.embed_size,
        num_hiddens=c.num_hiddens,
        num_layers=c.num_layers,
        bidirectional=c.bidirectional,
        num_classes=c.num_classes,
        weight=ms.Tensor(synth.array((VOCAB, c.embed_size), seed=3)),
        batch_size=2,
    )


def inputs(p):
    return synth.tensors(synth.array((2, SEQ), "int32", high=VOCAB))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    c = p.config
    net = network(p)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), c.learning_rate, c.momentum)
    net.set_jit_config(ms.common.JitConfig(jit_level="O2"))
    model = ms.Model(net, loss, opt, {"acc": nn.Accuracy()})
    data = synth.dataset(
        {
            "feature": synth.array((2, SEQ), "int32", high=VOCAB),
            "label": synth.array((2,), "int32", high=2),
        },
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
