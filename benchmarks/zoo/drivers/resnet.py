"""official/cv/ResNet: resnet18 on CIFAR-10 shapes, its Model wiring (Momentum over grouped
params, SoftmaxCrossEntropyWithLogits, the project's LossCallBack), export as in export.py."""

import synth

PROJECT = "official/cv/ResNet"
ARGV = ["--config_path=config/resnet18_cifar10_config.yaml", "--device_target=CPU"]
EXPORT = True


def imports(p):
    from src import lr_generator, resnet, util
    from src.callback import LossCallBack
    from src.model_utils.config import config

    p.config, p.resnet, p.util, p.lr = config, resnet, util, lr_generator
    p.LossCallBack = LossCallBack


def network(p):
    return p.resnet.resnet18(class_num=p.config.class_num)


def inputs(p):
    return synth.tensors(synth.array((2, 3, 32, 32)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    net = network(p)
    p.util.init_weight(net, cfg)
    lr = p.lr.get_lr(
        lr_init=cfg.lr_init,
        lr_end=cfg.lr_end,
        lr_max=cfg.lr_max,
        warmup_epochs=0,
        total_epochs=cfg.epoch_size,
        start_epoch=0,
        steps_per_epoch=steps,
        lr_decay_mode=cfg.lr_decay_mode,
    )
    opt = nn.Momentum(
        p.util.init_group_params(net, cfg), ms.Tensor(lr), cfg.momentum, loss_scale=cfg.loss_scale
    )
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    loss_scale = ms.FixedLossScaleManager(cfg.loss_scale, drop_overflow_update=False)
    model = ms.Model(
        net, loss_fn=loss, optimizer=opt, loss_scale_manager=loss_scale, metrics={"acc"}
    )
    data = synth.dataset(
        {"image": synth.array((2, 3, 32, 32)), "label": synth.array((2,), "int32", high=10)}, steps
    )
    import logging

    cb = p.LossCallBack(1, logging.getLogger("resnet"), lr, per_print_time=10)
    p.trained, p.model = net, model
    return synth.model_train(model, data, (cb,))


def export(p, net, name):
    import jisu as ms

    ms.export(net, *inputs(p), file_name=name, file_format="MINDIR")
