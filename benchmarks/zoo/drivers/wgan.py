"""official/cv/WGAN: DcganG / DcganD at 32x32, the project's GenTrainOneStepCell and
DisTrainOneStepCell (RMSProp, weight clipping) in train.py's custom loop: the critic's steps on
a fixed real batch and fixed noise (the losses reported, after a first step whose clipping of
the initial weights changes the loss's scale: they fall as the critic learns), then a
generator step."""

import numpy as np
import synth

PROJECT = "official/cv/WGAN"
ARGV = ["--device_target=CPU", "--imageSize=32", "--batchSize=2", "--dataroot=."]
EXPORT = True
NZ = 100


def imports(p):
    from src import cell, dcgan_model
    from src.args import get_args

    p.args, p.cell, p.models = get_args("train"), cell, dcgan_model


def network(p):
    a = p.args
    return p.models.DcganG(a.imageSize, NZ, a.nc, a.ngf, a.n_extra_layers)


def inputs(p):
    return synth.tensors(synth.array((2, NZ, 1, 1)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    a = p.args
    net_g = network(p)
    net_d = p.models.DcganD(a.imageSize, NZ, a.nc, a.ndf, a.n_extra_layers)
    opt_d = nn.RMSProp(net_d.trainable_params(), learning_rate=a.lrD, decay=0.99)
    opt_g = nn.RMSProp(net_g.trainable_params(), learning_rate=a.lrG, decay=0.99)
    g_train = p.cell.GenTrainOneStepCell(net_g, net_d, opt_g)
    d_train = p.cell.DisTrainOneStepCell(net_g, net_d, opt_d, a.clamp_lower, a.clamp_upper)
    g_train.set_train()
    d_train.set_train()
    real = ms.Tensor(np.tanh(synth.array((2, 3, a.imageSize, a.imageSize))))
    noise = ms.Tensor(synth.array((2, NZ, 1, 1), seed=1))
    for q in net_d.trainable_params():
        q.requires_grad = True
    d_train(real, noise)  # the first step clips the initial weights into [-0.01, 0.01]
    losses = []
    for _ in range(steps):
        for q in net_d.trainable_params():
            q.requires_grad = True
        losses.append(synth.scalar(d_train(real, noise)))
    for q in net_d.trainable_params():
        q.requires_grad = False
    loss_g = g_train(noise)
    if not synth.finite(loss_g):
        raise FloatingPointError(f"generator loss {loss_g}")
    p.trained = net_g
    return losses
