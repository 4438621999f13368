"""official/audio/MELGAN: Generator and MultiDiscriminator with the project's
TrainOneStepCellGEN / TrainOneStepCellDIS (overflow status, loss-scale sens) in train.py's loop,
with train.py's BuildGenNetwork / BuildDisNetwork and DynamicLossScaleManager; a fixed mel
segment of 8 frames (80 bins) and its 2048-sample wave. The reported losses are the
discriminator's."""

import synth

PROJECT = "official/audio/MELGAN"
ARGV = ["--config_path=config.yaml", "--device_target=CPU"]
EXPORT = True
TRAIN_PY = False  # imported in imports(): the Build*Network cells live there
FRAMES = 8


def imports(p):
    import train  # the project's train.py
    from src import loss, model, trainonestep

    p.train, p.cfg, p.model, p.loss, p.step = train, train.cfg, model, loss, trainonestep


def network(p):
    return p.model.Generator(alpha=p.cfg.leaky_alpha)


def inputs(p):
    return synth.tensors(synth.array((2, p.cfg.mel_num, FRAMES)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg, tr = p.cfg, p.train
    net_d = p.model.MultiDiscriminator()
    net_g = network(p)
    criterion_g, criterion_d = p.loss.MelganLoss_G(), p.loss.MelganLoss_D()
    gen = tr.BuildGenNetwork(net_g, criterion_g)
    dis_1 = tr.BuildDisNetwork(net_d, criterion_g)
    dis_2 = tr.BuildDisNetwork(net_d, criterion_d)
    for cell in (gen, dis_1, dis_2):
        cell.set_train()
    manager = ms.train.loss_scale_manager.DynamicLossScaleManager(
        init_loss_scale=2**10, scale_factor=2, scale_window=2000
    )
    opt_g = nn.Adam(
        params=net_g.trainable_params(),
        learning_rate=cfg.lr_g,
        beta1=cfg.beta1,
        beta2=cfg.beta2,
        weight_decay=cfg.weight_decay,
    )
    opt_d = nn.Adam(
        params=net_d.trainable_params(),
        learning_rate=cfg.lr_d,
        beta1=cfg.beta1,
        beta2=cfg.beta2,
        weight_decay=cfg.weight_decay,
    )
    gen_wrap = p.step.TrainOneStepCellGEN(gen, opt_g, dis_1, criterion_g)
    dis_wrap = p.step.TrainOneStepCellDIS(gen, dis_2, opt_d, criterion_d)
    mel = ms.Tensor((synth.array((2, cfg.mel_num, FRAMES)) + 5.0) / 5.0)
    wav = ms.Tensor(synth.array((2, 1, FRAMES * cfg.hop_size), seed=1) * 0.3)
    losses = []
    for _ in range(steps):
        sens = ms.Tensor(manager.get_loss_scale(), dtype=ms.float32)
        _, loss_g, _ = gen_wrap(wav, mel, sens)
        _, loss_d, _ = dis_wrap(mel, wav, sens)
        if not synth.finite(loss_g):
            raise FloatingPointError(f"generator loss {loss_g}")
        losses.append(synth.scalar(loss_d))
    p.trained = net_g
    return losses
