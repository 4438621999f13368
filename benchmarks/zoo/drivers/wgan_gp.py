"""research/cv/WGAN_GP: DcganG / DcgannobnD (DIM 16) at 32x32, batch 64 (the generator
hard-codes it), the project's GenWithLossCell and DisWithLossCell, whose gradient penalty takes
GradOperation of the critic inside the loss (a gradient of a gradient when nn.TrainOneStepCell
differentiates it), Adams, in train.py's loop (critic steps with requires_grad toggled, then a
generator step) on a fixed real batch and fixed noise; the critic's losses are reported."""

import synth

PROJECT = "research/cv/WGAN_GP"
ARGV = ["--device_target=CPU", "--batchSize=64", "--imageSize=32", "--DIM=16", "--dataroot=."]
TRAIN_PY = False  # train.py is one `if __name__ == "__main__"` block
DIM = 16
BATCH = 64  # DcganG reshapes to a batch of 64 (view(64, ...))


def imports(p):
    from src import cell, model
    from src.args import get_args

    p.args, p.cell, p.model = get_args(), cell, model


def network(p):
    return p.model.DcganG(p.args.DIM)


def inputs(p):
    return synth.tensors(synth.array((BATCH, DIM)))


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn

    a = p.args
    ms.set_seed(0)
    net_g = network(p)
    net_d = p.model.DcgannobnD(a.DIM)
    opt_d = nn.Adam(net_d.trainable_params(), learning_rate=a.lrD, beta1=a.beta1, beta2=a.beta2)
    opt_g = nn.Adam(net_g.trainable_params(), learning_rate=a.lrG, beta1=a.beta1, beta2=a.beta2)
    g_train = nn.TrainOneStepCell(p.cell.GenWithLossCell(net_g, net_d), opt_g)
    d_train = nn.TrainOneStepCell(p.cell.DisWithLossCell(net_g, net_d), opt_d)
    g_train.set_train()
    d_train.set_train()
    real = ms.Tensor(np.tanh(synth.array((BATCH, 3, a.imageSize, a.imageSize))))
    noise = ms.Tensor(synth.array((BATCH, DIM), seed=1))
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
