"""research/nlp/textcnn: TextCNN on MR shapes (51 tokens), Adam over a per-step learning-rate
list, SoftmaxCrossEntropyExpand, Model with Accuracy, as train.py's CPU branch."""

import synth

PROJECT = "research/nlp/textcnn"
ARGV = ["--config_path=mr_config.yaml", "--device_target=CPU"]
EXPORT = True
VOCAB = 100


def imports(p):
    from model_utils.config import config
    from src import textcnn

    p.config, p.textcnn = config, textcnn


def network(p):
    c = p.config
    return p.textcnn.TextCNN(
        vocab_len=VOCAB, word_len=c.word_len, num_classes=c.num_classes, vec_length=c.vec_length
    )


def inputs(p):
    return synth.tensors(synth.array((2, p.config.word_len), "int32", high=VOCAB))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    c = p.config
    net = network(p)
    learning_rate = [float(c.base_lr)] * steps
    opt = nn.Adam(
        filter(lambda x: x.requires_grad, net.get_parameters()),
        learning_rate=learning_rate,
        weight_decay=float(c.weight_decay),
    )
    loss = p.textcnn.SoftmaxCrossEntropyExpand(sparse=True)
    model = ms.Model(net, loss_fn=loss, optimizer=opt, metrics={"acc": nn.Accuracy()})
    data = synth.dataset(
        {
            "data": synth.array((2, c.word_len), "int32", high=VOCAB),
            "label": synth.array((2,), "int32", high=c.num_classes),
        },
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
