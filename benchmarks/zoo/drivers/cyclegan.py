"""official/cv/CycleGAN: two ResNet generators (ngf 8, 2 residual blocks) and two PatchGAN
discriminators at 32x32, the project's Generator / GeneratorLoss / DiscriminatorLoss, Adam,
TrainOneStepG and TrainOneStepD (GradOperation with sens tuples) with its ImagePools, in
train.py's loop over a fixed pair of images; the generator's total loss is reported."""

import synth

PROJECT = "official/cv/CycleGAN"
ARGV = [
    "--platform=CPU",
    "--image_size=32",
    "--batch_size=2",
    "--ngf=8",
    "--ndf=8",
    "--gl_num=2",
    "--lr_policy=constant",
    "--lr=0.001",
    "--dataroot=.",
]
EXPORT = True
SIZE = 32


def imports(p):
    from src.models import cycle_gan, losses
    from src.utils import tools
    from src.utils.args import get_args

    p.args, p.cg, p.losses, p.tools = get_args("train"), cycle_gan, losses, tools
    p.args.dataset_size = 1


def network(p):
    return p.cg.get_generator(p.args)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn

    a, cg = p.args, p.cg
    g_a, g_b = cg.get_generator(a), cg.get_generator(a)
    d_a, d_b = cg.get_discriminator(a), cg.get_discriminator(a)
    pool_a, pool_b = p.tools.ImagePool(a.pool_size), p.tools.ImagePool(a.pool_size)
    generator = cg.Generator(g_a, g_b, a.lambda_idt > 0)
    loss_d = p.losses.DiscriminatorLoss(a, d_a, d_b)
    loss_g = p.losses.GeneratorLoss(a, generator, d_a, d_b)
    opt_g = nn.Adam(generator.trainable_params(), p.tools.get_lr(a), beta1=a.beta1)
    opt_d = nn.Adam(loss_d.trainable_params(), p.tools.get_lr(a), beta1=a.beta1)
    net_g = cg.TrainOneStepG(loss_g, generator, opt_g)
    net_d = cg.TrainOneStepD(loss_d, opt_d)
    img_a = ms.Tensor(np.tanh(synth.array((2, 3, SIZE, SIZE), seed=1)))
    img_b = ms.Tensor(np.tanh(synth.array((2, 3, SIZE, SIZE), seed=2)))
    losses = []
    for _ in range(steps):
        res_g = net_g(img_a, img_b)
        res_d = net_d(img_a, img_b, pool_a.query(res_g[0]), pool_b.query(res_g[1]))
        if not synth.finite(res_d):
            raise FloatingPointError(f"discriminator loss {res_d}")
        losses.append(synth.scalar(res_g[2]))
    p.trained = g_a
    return losses
