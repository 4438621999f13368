"""research/cv/CGAN: the conditional Generator / Discriminator (label embeddings, 8 features)
on 32x32 MNIST-like images with 10 classes, init_weights, GenWithLossCell / DisWithLossCell
and the project's TrainOneStepG / TrainOneStepD (GradOperation with sens), Adams, as train.py's
loop calls them (a discriminator step, then a generator step returning its fake images); the
generator's loss is reported."""

import synth

PROJECT = "research/cv/CGAN"
ARGV = ["--device_target=CPU", "--batch_size=2"]
EXPORT = True
NOISE, CLASSES, SIZE = 100, 10, 32


def imports(p):
    from src import cell, model

    p.cell, p.model = cell, model


def network(p):
    g = p.model.Generator(NOISE, 1, CLASSES, embed_size=100, features_d=8)
    p.model.init_weights(g)
    return g


def inputs(p):
    return synth.tensors(synth.array((2, NOISE)), synth.array((2,), "int32", high=CLASSES))


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn

    m, c = p.model, p.cell
    net_g = network(p)
    net_d = m.Discriminator(1, CLASSES, embed_size=SIZE * SIZE, features_d=8)
    m.init_weights(net_d)
    opt_g = nn.Adam(net_g.trainable_params(), 0.0002, beta1=0.5)
    opt_d = nn.Adam(net_d.trainable_params(), 0.0002, beta1=0.5)
    train_g = c.TrainOneStepG(c.GenWithLossCell(net_g, net_d), opt_g)
    train_d = c.TrainOneStepD(c.DisWithLossCell(net_g, net_d), opt_d)
    net_g.set_train()
    net_d.set_train()
    real = ms.Tensor(np.tanh(synth.array((2, 1, SIZE, SIZE), seed=1)))
    noise = ms.Tensor(synth.array((2, NOISE), seed=2))
    label = ms.Tensor(synth.array((2,), "int32", high=CLASSES, seed=3))
    losses = []
    for _ in range(steps):
        res_d = train_d(real, noise, label)
        _, res_g = train_g(noise, label)
        if not synth.finite(res_d):
            raise FloatingPointError(f"discriminator loss {res_d}")
        losses.append(synth.scalar(res_g))
    p.trained = net_g
    return losses
