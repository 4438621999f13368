"""official/cv/VGG/vgg16: vgg16 (batch norm) on CIFAR-10 at 32x32, its Model wiring (Momentum
over get_param_groups, amp_level O2 as train.py does for cifar10), export as in export.py."""

import synth

PROJECT = "official/cv/VGG/vgg16"
ARGV = ["--config_path=cifar10_config.yaml", "--device_target=CPU"]
EXPORT = True


def imports(p):
    from model_utils.moxing_adapter import config
    from src import vgg, warmup_step_lr
    from src.utils.util import get_param_groups

    config.image_size = [32, 32]
    p.config, p.vgg, p.lr, p.get_param_groups = config, vgg, warmup_step_lr, get_param_groups


def network(p):
    return p.vgg.vgg16(p.config.num_classes, p.config)


def inputs(p):
    return synth.tensors(synth.array((2, 3, 32, 32)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    net = network(p)
    lr = p.lr.lr_steps(
        0,
        lr_init=cfg.lr_init,
        lr_max=cfg.lr_max,
        warmup_epochs=0,
        total_epochs=cfg.max_epoch,
        steps_per_epoch=steps,
    )
    opt = nn.Momentum(
        params=p.get_param_groups(net),
        learning_rate=ms.Tensor(lr),
        momentum=cfg.momentum,
        weight_decay=cfg.weight_decay,
        loss_scale=cfg.loss_scale,
    )
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = ms.Model(
        net,
        loss_fn=loss,
        optimizer=opt,
        metrics={"acc"},
        amp_level="O2",
        keep_batchnorm_fp32=False,
        loss_scale_manager=None,
    )
    data = synth.dataset(
        {"image": synth.array((2, 3, 32, 32)), "label": synth.array((2,), "int32", high=10)}, steps
    )
    p.trained, p.model = net, model
    return synth.model_train(model, data, (ms.train.callback.LossMonitor(),))
