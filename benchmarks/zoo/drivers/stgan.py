"""research/cv/STGAN: the project's STGANModel (Generator with selective transfer units, a
Discriminator with adversarial and attribute heads, GeneratorLoss / DiscriminatorLoss with the
WGAN-GP penalty, TrainOneStepGenerator / TrainOneStepDiscriminator, Adams over its
learning-rate schedule) built from get_args("train") at 32x32 with 13 attributes and 3 layers
of 8 filters, trained by its own set_input + optimize_parameters (n_critic 1) on a fixed batch
(Python's and NumPy's generators reseeded per step); the generator's total loss (recorded
from train_G's outputs) is reported."""

import synth

PROJECT = "research/cv/STGAN"
ARGV = [
    "--platform=CPU",
    "--image_size=32",
    "--batch_size=2",
    "--enc_dim=8",
    "--dec_dim=8",
    "--dis_dim=8",
    "--dis_fc_dim=16",
    "--stu_dim=8",
    "--enc_layers=3",
    "--dec_layers=3",
    "--dis_layers=3",
    "--n_critic=1",
    "--print_freq=1000",
    "--dataroot=.",
    "--experiment_name=tiny",
]
EXPORT = True
SIZE = 32


def imports(p):
    from src.models import STGANModel, networks
    from src.utils import get_args

    p.get_args, p.STGANModel, p.networks = get_args, STGANModel, networks


def _args(p):
    if getattr(p, "args", None) is None:
        p.args = p.get_args("train")
    return p.args


def network(p):
    a = _args(p)
    return p.networks.Generator(
        len(a.attrs), a.enc_dim, a.dec_dim, a.enc_layers, a.dec_layers, a.shortcut_layers,
        a.stu_kernel_size, use_stu=a.use_stu, one_more_conv=a.one_more_conv, stu_norm=a.stu_norm,
    )  # fmt: skip


def inputs(p):
    import numpy as np

    n = len(_args(p).attrs)
    att = ((synth.array((2, n), seed=3) > 0) * 1.0 - 0.5).astype(np.float32)
    return synth.tensors(np.tanh(synth.array((2, 3, SIZE, SIZE))), att)


def train(p, steps):
    import random

    import numpy as np

    a = _args(p)
    a.dataset_size = steps
    np.random.seed(0)
    model = p.STGANModel(a)
    losses = []
    train_g = model.train_G

    def recording_g(*batch):
        out = train_g(*batch)
        losses.append(synth.scalar(out[2]))
        return out

    model.train_G = recording_g
    labels = (synth.array((2, len(a.attrs)), seed=2) > 0).astype(np.float32)
    data = {"image": np.tanh(synth.array((2, 3, SIZE, SIZE), seed=1)), "label": labels}
    for _ in range(steps):
        random.seed(0)  # the same target attributes, interpolation and attribute noise
        np.random.seed(0)
        model.set_input(data)
        model.optimize_parameters()
        model.current_iteration += 1
    p.trained = model.netG
    return losses
