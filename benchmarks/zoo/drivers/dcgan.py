"""research/cv/dcgan: Generator / Discriminator (ConvTranspose / Conv + BatchNorm, the
project's own Initializer subclass with _initialize/_assignment) at 32x32 with 8 features,
WithLossCellD / WithLossCellG (BCELoss) in two nn.TrainOneStepCell with Adams, both inside
the project's DCGAN cell, as train.py's loop calls it; the generator's loss is reported."""

import synth

PROJECT = "research/cv/dcgan"
ARGV = ["--device_target=CPU"]
EXPORT = True
STUBS = ["matplotlib"]  # train.py's image and loss plots


def imports(p):
    from src import cell, dcgan, discriminator, generator
    from src.config import dcgan_imagenet_cfg

    dcgan_imagenet_cfg.feature_size = 8  # read by the networks when they are built
    p.cfg, p.cell, p.dcgan, p.G, p.D = (
        dcgan_imagenet_cfg,
        cell,
        dcgan,
        generator.Generator,
        discriminator.Discriminator,
    )


def network(p):
    return p.G()


def inputs(p):
    return synth.tensors(synth.array((2, p.cfg.latent_size, 1, 1)))


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn

    cfg = p.cfg
    net_d, net_g = p.D(), p.G()
    criterion = nn.BCELoss(reduction="mean")
    d_loss = p.cell.WithLossCellD(net_d, net_g, criterion)
    g_loss = p.cell.WithLossCellG(net_d, net_g, criterion)
    opt_d = nn.Adam(net_d.trainable_params(), learning_rate=cfg.learning_rate, beta1=cfg.beta1)
    opt_g = nn.Adam(net_g.trainable_params(), learning_rate=cfg.learning_rate, beta1=cfg.beta1)
    dcgan = p.dcgan.DCGAN(nn.TrainOneStepCell(d_loss, opt_d), nn.TrainOneStepCell(g_loss, opt_g))
    dcgan.set_train()
    real = ms.Tensor(np.tanh(synth.array((2, 3, 32, 32), seed=1)))
    latent = ms.Tensor(synth.array((2, cfg.latent_size, 1, 1), seed=2))
    losses = []
    for _ in range(steps):
        loss_d, loss_g = dcgan(real, latent)
        if not synth.finite(loss_d):
            raise FloatingPointError(f"discriminator loss {loss_d}")
        losses.append(synth.scalar(loss_g))
    p.trained = net_g
    return losses
