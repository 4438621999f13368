"""research/cv/StarGAN: Generator (InstanceNorm-style GroupNorm residual blocks, 8 filters, 2
blocks) and Discriminator (4 strided convs, source and domain heads) at 32x32 with 5 CelebA
attributes, built and initialised by get_network; GeneratorLoss and DiscriminatorLoss (BCE
domain loss, L1 reconstruction, WGAN-GP gradient penalty: GradOperation of the critic's input
inside the loss) in the project's TrainOneStepCellGen / TrainOneStepCellDis (sens filled), as
train.py's loop runs them (n_critic 1); the discriminator's total loss is reported."""

import synth

PROJECT = "research/cv/StarGAN"
ARGV = [
    "--device_target=CPU",
    "--image_size=32",
    "--batch_size=2",
    "--g_conv_dim=8",
    "--d_conv_dim=8",
    "--g_repeat_num=2",
    "--d_repeat_num=4",
    "--d_lr=0.0002",
]
EXPORT = True
TRAIN_PY = False  # train.py is one `if __name__ == "__main__"` block
SIZE = 32


def imports(p):
    from src import cell, loss, utils
    from src.config import get_config

    p.config, p.cell, p.loss, p.utils = get_config(), cell, loss, utils


def network(p):
    return p.utils.get_network(p.config)[0]


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)), synth.array((2, p.config.c_dim)) > 0)


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn

    cfg = p.config
    np.random.seed(0)  # the penalty's interpolation weights (a constexpr of np.random)
    generator, discriminator = p.utils.get_network(cfg)
    g_loss_cell = p.loss.GeneratorLoss(cfg, generator, discriminator)
    d_loss_cell = p.loss.DiscriminatorLoss(cfg, generator, discriminator)
    opt_g = nn.Adam(generator.trainable_params(), cfg.g_lr, beta1=cfg.beta1, beta2=cfg.beta2)
    opt_d = nn.Adam(discriminator.trainable_params(), cfg.d_lr, beta1=cfg.beta1, beta2=cfg.beta2)
    g_step = p.cell.TrainOneStepCellGen(g_loss_cell, opt_g)
    d_step = p.cell.TrainOneStepCellDis(d_loss_cell, opt_d)
    g_step.set_train()
    d_step.set_train()
    x_real = ms.Tensor(np.tanh(synth.array((2, 3, SIZE, SIZE), seed=1)))
    attrs = (synth.array((2, cfg.c_dim), seed=2) > 0).astype(np.float32)
    c_org, c_trg = ms.Tensor(attrs), ms.Tensor(attrs[::-1].copy())
    losses = []
    for _ in range(steps):
        d_out = d_step(x_real, c_org, c_trg)
        g_out = g_step(x_real, c_org, c_trg)
        if not synth.finite(g_out[2]):
            raise FloatingPointError(f"generator loss {g_out[2]}")
        losses.append(synth.scalar(d_out[0]))
    p.trained = generator
    return losses
