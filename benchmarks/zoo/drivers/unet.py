"""official/cv/Unet: NestedUNet (UNet++, deep supervision) from unet_nested_config.yaml at 64x64,
MultiCrossEntropyWithLogits, Adam + FixedLossScaleManager + amp O3 in Model, as train.py does
on Ascend; the project's StepLossTimeMonitor callback. Masks one-hot NCHW as its data loader."""

import numpy as np
import synth

PROJECT = "official/cv/Unet"
ARGV = ["--config_path=unet_nested_config.yaml", "--device_target=CPU"]
EXPORT = True


def imports(p):
    from src import loss, unet_nested, utils
    from src.model_utils.config import config

    p.config, p.nested, p.loss, p.utils = config, unet_nested, loss, utils


def network(p):
    c = p.config
    return p.nested.NestedUNet(
        in_channel=c.num_channels,
        n_class=c.num_classes,
        use_deconv=c.use_deconv,
        use_bn=c.use_bn,
        use_ds=c.use_ds,
    )


def inputs(p):
    return synth.tensors(synth.array((2, p.config.num_channels, 64, 64)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    cfg = p.config
    net = network(p)
    criterion = p.loss.MultiCrossEntropyWithLogits()
    optimizer = nn.Adam(
        params=net.trainable_params(),
        learning_rate=cfg.lr * 10,
        weight_decay=cfg.weight_decay,
        loss_scale=cfg.loss_scale,
    )
    manager = ms.train.loss_scale_manager.FixedLossScaleManager(cfg.FixedLossScaleManager, False)
    model = ms.Model(
        net, loss_fn=criterion, loss_scale_manager=manager, optimizer=optimizer, amp_level="O3"
    )
    mask = synth.array((2, 64, 64), "int64", high=cfg.num_classes)
    onehot = np.eye(cfg.num_classes, dtype="float32")[mask].transpose(0, 3, 1, 2)
    data = synth.dataset(
        {"image": synth.array((2, cfg.num_channels, 64, 64)), "mask": np.ascontiguousarray(onehot)},
        steps,
    )
    cb = p.utils.StepLossTimeMonitor(batch_size=2, per_print_times=1, rank=0)
    p.trained, p.model = net, model
    return synth.model_train(model, data, (cb,))
