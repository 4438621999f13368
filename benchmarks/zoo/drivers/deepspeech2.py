"""official/audio/DeepSpeech2: DeepSpeechModel (2 conv layers, a 2-layer bidirectional LSTM
of 32 units instead of 5 x 1024) over spectrograms of 161 bins x 64 frames, the project's
NetWithLossClass (P.CTCLoss with sparse target indices), Adam over a ParameterTuple,
nn.TrainOneStepCell in Model(train_net) as train.py; batches as its dataset yields them
(inputs, input_length, target_indices, label_values)."""

import json

import numpy as np
import synth

PROJECT = "official/audio/DeepSpeech2"
ARGV = ["--device_target=CPU"]
EXPORT = True
FREQ, FRAMES, LABEL_LEN = 161, 64, 10


def imports(p):
    from src import deepspeech2
    from src.config import train_config

    train_config.ModelConfig.hidden_size = 32
    train_config.ModelConfig.hidden_layers = 2
    train_config.DataConfig.batch_size = 2
    with open("labels.json") as f:
        p.labels = json.load(f)
    p.config, p.ds2 = train_config, deepspeech2


def network(p):
    c = p.config
    return p.ds2.DeepSpeechModel(
        batch_size=2,
        rnn_hidden_size=c.ModelConfig.hidden_size,
        nb_layers=c.ModelConfig.hidden_layers,
        labels=p.labels,
        rnn_type=c.ModelConfig.rnn_type,
        audio_conf=c.DataConfig.SpectConfig,
        bidirectional=True,
        device_target="CPU",
    )


def _batch():
    spect = synth.array((2, 1, FREQ, FRAMES))
    lengths = np.full((2,), FRAMES, np.float32)
    indices = np.array([[k, m] for k in range(2) for m in range(LABEL_LEN)], np.int64)
    labels = synth.array((2 * LABEL_LEN,), "int32", high=27, seed=4) + 1
    return spect, lengths, indices, labels


def inputs(p):
    spect, lengths, _, _ = _batch()
    return synth.tensors(spect, lengths)


def train(p, steps):
    import jisu as ms
    from jisu import nn

    c = p.config
    net = network(p)
    loss_net = p.ds2.NetWithLossClass(net)
    weights = ms.ParameterTuple(net.trainable_params())
    optimizer = nn.Adam(
        weights, learning_rate=1e-3, eps=c.OptimConfig.epsilon, loss_scale=c.OptimConfig.loss_scale
    )
    train_net = nn.TrainOneStepCell(loss_net, optimizer)
    train_net.set_train(True)
    model = ms.Model(train_net)
    spect, lengths, indices, labels = _batch()
    data = synth.dataset(
        {
            "inputs": spect,
            "input_length": lengths,
            "target_indices": indices,
            "label_values": labels,
        },
        steps,
        batch=False,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
