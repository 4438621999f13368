"""research/cv/RCAN: RCAN x2 (2 residual groups of 2 channel-attention blocks, 16 features,
MeanShift in/out, pixel-shuffle upsampler) from src.args, train.py's per-epoch halving lr list,
Adam with loss_scale 1024 beside DynamicLossScaleManager(65536) in
Model(net, L1Loss, opt, loss_scale_manager=...) with LossMonitor, on a 12x12 -> 24x24 patch
pair in [0, 255]."""

import synth

PROJECT = "research/cv/RCAN"
ARGV = [
    "--scale=2",
    "--n_resgroups=2",
    "--n_resblocks=2",
    "--n_feats=16",
    "--batch_size=2",
    "--epochs=2",
    "--lr=0.001",
]
EXPORT = True
LR, HR = 12, 24


def imports(p):
    from src import rcan_model
    from src.args import args

    p.args, p.rcan = args, rcan_model


def network(p):
    return p.rcan.RCAN(p.args)


def inputs(p):
    return synth.tensors(synth.array((2, 3, LR, LR)) * 40 + 120)


def train(p, steps):
    import numpy as np

    import jisu as ms
    from jisu import nn
    from jisu.train.loss_scale_manager import DynamicLossScaleManager

    args = p.args
    net = network(p)
    lr = []
    for i in range(0, args.epochs):  # train.py's schedule
        lr.extend([args.lr / (2 ** ((i + 1) // 200))] * steps)
    opt = nn.Adam(net.trainable_params(), learning_rate=lr, loss_scale=args.loss_scale)
    manager = DynamicLossScaleManager(
        init_loss_scale=args.init_loss_scale, scale_factor=2, scale_window=1000
    )
    model = ms.Model(net, loss_fn=nn.L1Loss(), optimizer=opt, loss_scale_manager=manager)
    hr = np.clip(synth.array((2, 3, HR, HR), seed=1) * 40 + 120, 0, 255).astype(np.float32)
    lr_img = hr.reshape(2, 3, LR, 2, LR, 2).mean(axis=(3, 5))
    data = synth.dataset({"LR": lr_img, "HR": hr}, steps)
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
