"""research/cv/Pix2Pix: the project's UnetGenerator (ngf 8, 5 downsamplings) and PatchGAN
Discriminator (ndf 8) at 32x32 with init_weights, in Pix2Pix with D_WithLossCell / G_WithLossCell
(SigmoidCrossEntropyWithLogits + L1) and its TrainOneStepCell (two GradOperations with Fill'ed
sens, two Adams over a per-step lr tensor) as train.py's loop calls it; the generator's loss is
reported."""

import synth

PROJECT = "research/cv/Pix2Pix"
ARGV = ["--device_target=CPU", "--batch_size=2", "--image_size=32", "--dataset_size=4"]
EXPORT = True
SIZE = 32


def imports(p):
    from src.models import loss, pix2pix
    from src.models.discriminator_model import Discriminator
    from src.models.generator_model import UnetGenerator
    from src.models.init_w import init_weights
    from src.utils import tools
    from src.utils.config import config

    p.config, p.loss, p.pix2pix, p.tools = config, loss, pix2pix, tools
    p.Unet, p.Disc, p.init_weights = UnetGenerator, Discriminator, init_weights


def network(p):
    net = p.Unet(in_planes=3, out_planes=3, ngf=8, n_layers=5)
    p.init_weights(net, init_type=p.config.init_type, init_gain=p.config.init_gain)
    return net


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn

    cfg, lo = p.config, p.loss
    net_g = network(p)
    net_d = p.Disc(in_planes=6, ndf=8, n_layers=3)
    p.init_weights(net_d, init_type=cfg.init_type, init_gain=cfg.init_gain)
    model = p.pix2pix.Pix2Pix(generator=net_g, discriminator=net_d)
    d_loss_net = lo.D_WithLossCell(backbone=model, loss_fn=lo.D_Loss())
    g_loss_net = lo.G_WithLossCell(backbone=model, loss_fn=lo.G_Loss())
    lr = p.tools.get_lr()
    d_opt = nn.Adam(
        model.netD.trainable_params(),
        learning_rate=lr,
        beta1=cfg.beta1,
        beta2=cfg.beta2,
        loss_scale=1,
    )
    g_opt = nn.Adam(
        model.netG.trainable_params(),
        learning_rate=lr,
        beta1=cfg.beta1,
        beta2=cfg.beta2,
        loss_scale=1,
    )
    train_net = lo.TrainOneStepCell(
        loss_netD=d_loss_net, loss_netG=g_loss_net, optimizerD=d_opt, optimizerG=g_opt, sens=1
    )
    train_net.set_train()
    real_a = ms.Tensor(np.tanh(synth.array((2, 3, SIZE, SIZE), seed=1)))
    real_b = ms.Tensor(np.tanh(synth.array((2, 3, SIZE, SIZE), seed=2)))
    losses = []
    for _ in range(steps):
        dis_loss, gen_loss = train_net(real_a, real_b)
        if not synth.finite(dis_loss):
            raise FloatingPointError(f"discriminator loss {dis_loss}")
        losses.append(synth.scalar(gen_loss))
    p.trained = net_g
    return losses
