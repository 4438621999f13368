"""official/cv/EDSR: EDSR x2 (16 features, 2 residual blocks, MeanShift in/out, PixelShuffle
upsampler) built by init_net from DIV2K_config.yaml, train.py's init_opt (Adam over the
milestone lr array, loss_scale 1000 for amp O3) and its Model(net, L1Loss, opt,
amp_level="O3") with LossMonitor, on a 12x12 -> 24x24 patch pair in [0, 255]."""

import synth

PROJECT = "official/cv/EDSR"
ARGV = [
    "--config_path=DIV2K_config.yaml",
    "--device_target=CPU",
    "--scale=2",
    "--n_feats=16",
    "--n_resblocks=2",
    "--epoch_size=10",
]
EXPORT = True
TRAIN_PY = False  # imported in imports(): init_opt lives there
LR, HR = 12, 24


def imports(p):
    import train  # the project's train.py
    from model_utils.config import config
    from src import utils

    p.config, p.train, p.utils = config, train, utils


def network(p):
    import jisu as ms

    # as Model(amp_level="O3") leaves the trained network (its eval runs in low precision)
    return ms.amp.auto_mixed_precision(p.utils.init_net(p.config), p.config.amp_level)


def inputs(p):
    return synth.tensors(synth.array((2, 3, LR, LR)) * 40 + 120)


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn

    cfg = p.config
    net = p.utils.init_net(cfg)
    cfg.steps_per_epoch = steps
    opt = p.train.init_opt(cfg, net)
    loss = nn.L1Loss(reduction="mean")
    model = ms.Model(net, loss_fn=loss, optimizer=opt, amp_level=cfg.amp_level)
    hr = np.clip(synth.array((2, 3, HR, HR), seed=1) * 40 + 120, 0, 255).astype(np.float32)
    lr = hr.reshape(2, 3, LR, 2, LR, 2).mean(axis=(3, 5))
    data = synth.dataset({"lr": lr, "hr": hr}, steps)
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
