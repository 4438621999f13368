"""research/cv/AttGAN: Gen (encoder / decoder with attribute injection and shortcut, called
with mode="enc" / "dec" / "enc-dec"), Dis (InstanceNorm convs, adversarial and attribute
heads) at 32x32 with 13 attributes and 3 layers (8 filters; the critic 256, as it hard-codes
1024 channels after its last layer), init_weights, GenLoss and DisLoss (WGAN-GP penalty:
GradOperation of the critic's input inside the loss) in the project's TrainOneStepCellGen /
TrainOneStepCellDis, as train.py's loop feeds them (attributes permuted, thresholded); the
discriminator's total loss is reported."""

import synth

PROJECT = "research/cv/AttGAN"
ARGV = [
    "--img_size=32",
    "--batch_size=2",
    "--enc_dim=8",
    "--dec_dim=8",
    "--dis_dim=256",  # Dis hard-codes 1024 channels after its last layer
    "--dis_fc_dim=16",
    "--enc_layers=3",
    "--dec_layers=3",
    "--dis_layers=3",
    "--experiment_name=tiny",
]
EXPORT = True
TRAIN_PY = False  # imported in imports() (its module level parses the arguments)
SIZE = 32


def imports(p):
    import os

    from jisu import context

    os.environ.setdefault("RANK_SIZE", "1")  # train.py reads it at import
    # train.py's --platform allows only Ascend/GPU (default Ascend) and the harness rewrites
    # device_target defaults, not this argument: its set_context runs on CPU here
    pinned = context.set_context

    def on_cpu(**kwargs):
        kwargs["device_target"] = "CPU"
        return pinned(**kwargs)

    context.set_context = on_cpu
    try:
        import train  # the project's train.py
    finally:
        context.set_context = pinned
    from src import attgan, cell, loss

    p.args, p.attgan, p.cell, p.loss = train.args, attgan, cell, loss


def _gen(p):
    import math

    a = p.args
    gen = p.attgan.Gen(
        a.enc_dim, a.enc_layers, a.enc_norm, a.enc_acti, a.dec_dim, a.dec_layers, a.dec_norm,
        a.dec_acti, a.n_attrs, a.shortcut_layers, a.inject_layers, a.img_size, mode="train",
    )  # fmt: skip
    p.cell.init_weights(gen, "KaimingUniform", math.sqrt(5))
    return gen


def network(p):
    return _gen(p)


def inputs(p):
    import numpy as np

    img = synth.array((2, 3, SIZE, SIZE))
    att = ((synth.array((2, p.args.n_attrs), seed=3) > 0) * 2 - 1).astype(np.float32) * 0.5
    return synth.tensors(img, att)


def train(p, steps):
    import math

    import numpy as np

    import jisu as ms
    from jisu import nn

    a = p.args
    np.random.seed(0)  # the penalty's interpolation weights (a constexpr of np.random)
    gen = _gen(p)
    dis = p.attgan.Dis(
        a.dis_dim, a.dis_norm, a.dis_acti, a.dis_fc_dim, a.dis_fc_norm, a.dis_fc_acti,
        a.dis_layers, a.img_size, mode="train",
    )  # fmt: skip
    p.cell.init_weights(dis, "KaimingUniform", math.sqrt(5))
    g_loss_cell = p.loss.GenLoss(a, gen, dis)
    d_loss_cell = p.loss.DisLoss(a, gen, dis)
    opt_g = nn.Adam(gen.trainable_params(), learning_rate=a.lr, beta1=a.beta1, beta2=a.beta2)
    opt_d = nn.Adam(dis.trainable_params(), learning_rate=a.lr, beta1=a.beta1, beta2=a.beta2)
    g_step = p.cell.TrainOneStepCellGen(g_loss_cell, opt_g)
    d_step = p.cell.TrainOneStepCellDis(d_loss_cell, opt_d)
    g_step.set_train(True)
    d_step.set_train(True)
    img_a = ms.Tensor(np.tanh(synth.array((2, 3, SIZE, SIZE), seed=1)))
    att_a = (synth.array((2, a.n_attrs), seed=2) > 0).astype(np.float32)
    att_b = att_a[::-1].copy()  # train.py permutes the batch's attributes
    batch = [att_a, (att_a * 2 - 1) * a.thres_int, att_b, (att_b * 2 - 1) * a.thres_int]
    batch = [img_a] + [ms.Tensor(x.astype(np.float32)) for x in batch]
    losses = []
    for _ in range(steps):
        d_out = d_step(*batch)
        g_out = g_step(*batch)
        if not synth.finite(g_out[0]):
            raise FloatingPointError(f"generator loss {g_out[0]}")
        losses.append(synth.scalar(d_out[0]))
    p.trained = gen
    return losses
