"""research/cv/ghostnet: GhostNet-1x at 64x64 wired as train.py's __main__ block does:
net.to_float(float16) with every Dense back to float32, HeUniform / HeNormal re-initialisation
through initializer(...).set_data, the project's get_lr list, CrossEntropySmooth, Momentum with
loss_scale, FixedLossScaleManager, Model with top_1/top_5 metrics at amp_level O3 and
keep_batchnorm_fp32=False, TimeMonitor + LossMonitor."""

import synth

PROJECT = "research/cv/ghostnet"
ARGV = []
EXPORT = True
SIZE, CLASSES = 64, 10


def imports(p):
    from src import CrossEntropySmooth, ghostnet, lr_generator
    from src.config import config

    p.config, p.ghostnet, p.lr, p.ce = config, ghostnet, lr_generator, CrossEntropySmooth


def network(p):
    return p.ghostnet.ghostnet_1x(num_classes=CLASSES)


def inputs(p):
    return synth.tensors(synth.array((2, 3, SIZE, SIZE)))


def train(p, steps):
    import jisu as ms
    import jisu.common.initializer as weight_init
    from jisu import nn
    from jisu.common import dtype as mstype
    from jisu.train.callback import LossMonitor, TimeMonitor

    cfg = p.config
    net = network(p)
    net.to_float(mstype.float16)
    for _, cell in net.cells_and_names():
        if isinstance(cell, nn.Dense):
            cell.to_float(mstype.float32)
    for _, cell in net.cells_and_names():
        w = getattr(cell, "weight", None)
        if isinstance(cell, nn.Conv2d):
            w.set_data(weight_init.initializer(weight_init.HeUniform(), w.shape, w.dtype))
        if isinstance(cell, nn.Dense):
            w.set_data(weight_init.initializer(weight_init.HeNormal(), w.shape, w.dtype))
    scale = 2 / cfg.batch_size  # the linear scaling rule: its rates are for batch 128
    lr = ms.Tensor(
        p.lr.get_lr(
            lr_init=cfg.lr_init * scale,
            lr_end=cfg.lr_end,
            lr_max=cfg.lr_max * scale,
            warmup_epochs=0,
            total_epochs=1,
            steps_per_epoch=steps,
        )
    )
    loss = p.ce.CrossEntropySmooth(
        sparse=True, reduction="mean", smooth_factor=cfg.label_smooth_factor, num_classes=CLASSES
    )
    opt = nn.Momentum(
        net.trainable_params(),
        lr,
        cfg.momentum,
        loss_scale=cfg.loss_scale,
        weight_decay=cfg.weight_decay,
    )
    loss_scale = ms.FixedLossScaleManager(cfg.loss_scale, drop_overflow_update=False)
    model = ms.Model(
        net,
        loss_fn=loss,
        optimizer=opt,
        loss_scale_manager=loss_scale,
        metrics={"top_1_accuracy", "top_5_accuracy"},
        amp_level="O3",
        keep_batchnorm_fp32=False,
    )
    data = synth.dataset(
        {
            "image": synth.array((2, 3, SIZE, SIZE)),
            "label": synth.array((2,), "int32", high=CLASSES),
        },
        steps,
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (TimeMonitor(data_size=steps), LossMonitor()))
