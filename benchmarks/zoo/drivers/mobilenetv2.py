"""official/cv/MobileNet/mobilenetv2: define_net (backbone + head) at 64x64, the CPU branch of
train.py (Momentum, CrossEntropyWithLabelSmooth, Model with its config_ckpoint callbacks)."""

import synth

PROJECT = "official/cv/MobileNet/mobilenetv2"
ARGV = ["--config_path=default_config_cpu.yaml", "--platform=CPU"]
EXPORT = True


def imports(p):
    from src import lr_generator, models
    from src.model_utils.config import config

    config.num_classes = 10
    p.config, p.models, p.lr = config, models, lr_generator


def network(p):
    return p.models.define_net(p.config, True)[2]


def inputs(p):
    return synth.tensors(synth.array((2, 3, 64, 64)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    net = network(p)
    loss = p.models.CrossEntropyWithLabelSmooth(
        smooth_factor=cfg.label_smooth, num_classes=cfg.num_classes
    )
    lr = ms.Tensor(
        p.lr.get_lr(
            global_step=0,
            lr_init=cfg.lr_init,
            lr_end=cfg.lr_end,
            lr_max=cfg.lr_max,
            warmup_epochs=0,
            total_epochs=cfg.epoch_size,
            steps_per_epoch=steps,
        )
    )
    opt = nn.Momentum(net.trainable_params(), lr, cfg.momentum, cfg.weight_decay)
    model = ms.Model(net, loss_fn=loss, optimizer=opt, metrics={"acc"}, boost_level=cfg.boost_mode)
    data = synth.dataset(
        {"image": synth.array((2, 3, 64, 64)), "label": synth.array((2,), "int32", high=10)}, steps
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data)
