"""official/audio/LPCNet: WithLossLPCNet (frame-rate conv encoder, sample-rate decoder of two
hand-written GRUs whose weights live in ParameterTuples, MDense tree output) with the
project's SparseCategoricalCrossentropy, the backbone to_float(float16), Adam, and train.py's
MyTrainStep (a TrainOneStepCell subclass that counts steps in a Parameter and re-masks the
GRU's recurrent weights with ops.Assign) in Model(train_step), over a training chunk of one
frame (src.lpcnet.FEATURE_CHUNK_SIZE set to 1: 160 samples of u-law PCM, 20 features), the
GRU at the 384 units MyTrainStep's mask hard-codes."""

import synth

PROJECT = "official/audio/LPCNet"
ARGV = ["features.f32", "data.u8", "out"]
EXPORT = True
TRAIN_PY = False  # imported in imports(): MyTrainStep lives there
FRAMES = 1  # feature frames per chunk (160 samples each)
DENSITY = [0.05, 0.05, 0.2]


def imports(p):
    import train  # the project's train.py
    from src import lossfuncs, lpcnet

    lpcnet.FEATURE_CHUNK_SIZE = FRAMES  # the training chunk (15 frames, 2400 GRU steps)
    p.train, p.lpcnet, p.lossfuncs = train, lpcnet, lossfuncs


def network(p):
    import jisu as ms

    net = p.lpcnet.LPCNet(rnn_units1=384, rnn_units2=16, training=True)
    return net.to_float(ms.float16)  # as train.py casts the backbone


def _batch():
    import numpy as np

    t = 160 * FRAMES
    in_data = synth.array((2, t, 3), "int32", high=256)
    features = np.tanh(synth.array((2, FRAMES + 4, 20), seed=1))
    periods = synth.array((2, FRAMES + 4, 1), "int32", high=256, seed=2)
    out_data = synth.array((2, t, 1), "int32", high=256, seed=3)
    noise = np.random.default_rng(4).uniform(0.0, 0.005, (2, t, 384)).astype(np.float16)
    return in_data, features, periods, out_data, noise


def inputs(p):
    import numpy as np

    # eval mode: the decoder takes one sample per frame of conditioning (train mode repeats
    # each frame 160 times), so 4 samples against 4 + 4 feature frames
    in_data = synth.array((2, 4, 3), "int32", high=256)
    features = np.tanh(synth.array((2, 8, 20), seed=1))
    periods = synth.array((2, 8, 1), "int32", high=256, seed=2)
    noise = np.zeros((2, 4, 384), np.float16)
    return synth.tensors(in_data, features, periods, noise)


def train(p, steps):
    import jisu as ms
    from jisu import nn

    net_loss = p.lossfuncs.SparseCategoricalCrossentropy(reduction="mean")
    net = p.lpcnet.WithLossLPCNet(rnn_units1=384, rnn_units2=16, training=True, loss_fn=net_loss)
    net.backbone.to_float(ms.float16)
    net_opt = nn.Adam(
        list(net.trainable_params()), learning_rate=0.001, weight_decay=2.5e-5, beta2=0.99
    )
    train_net = p.train.MyTrainStep(net, net_opt, 2000, 40000, 400, grua_density=DENSITY)
    model = ms.Model(network=train_net)
    names = ["in_data", "features", "periods", "out_data", "noise"]
    data = synth.dataset(dict(zip(names, _batch())), steps)
    p.trained, p.model = net.backbone, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(1),))
